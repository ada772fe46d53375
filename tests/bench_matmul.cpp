// Micro-benchmark of the CPU matmul (not a test): GOP/s and GB/s of single matrices and
// matmul-only tokens/s of the default model's shape (SmolLM2-135M: 30 layers, d 576,
// ffn 1536, 9/3 heads of 64, vocab 49152), at 1 and 2 threads, median of repetitions.
//
//   bench_matmul [--isa NAME] [--threads 1,2] [--reps N] [--quick] [--cpu] [--hot] [--unpack] [--f32]
//                [--mat TYPE:K:N:ROWS]...
//
// --mat times only the matrices given (e.g. q4_k:1536:8960:1, a Qwen2.5-1.5B gate at decode),
// without the default model's table.
// --f32 times matmul_f32, the path of f32_activations (weights dequantized to f32 in tiles,
// activations not rounded to int8): the reference tests run the model through it.
//
// Decode cycles through distinct weight copies (~the model's size) so weights stream from
// memory as in a real token step instead of sitting in L2.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <strings.h>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <ctime>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_impl.h"
#include "kernels/cpu/quant.h"

namespace {

using wt::DType;
using wt::Tensor;
using wt::cpu::ThreadCtx;

// A persistent pool: run(fn) calls fn(tc) on every worker (the caller is worker 0).
class Pool {
 public:
  explicit Pool(int n) : n_(n) {
    barrier_.reset(n);
    for (int i = 1; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    stop_ = true;
    gen_.fetch_add(1);
    for (auto& t : threads_) t.join();
  }
  void run(const std::function<void(const ThreadCtx&)>& fn) {
    fn_ = &fn;
    done_.store(0);
    gen_.fetch_add(1, std::memory_order_release);
    fn(ThreadCtx{0, n_, &barrier_});
    for (int spins = 0; done_.load(std::memory_order_acquire) != n_ - 1; ++spins) relax(spins);
  }

 private:
  void loop(int i) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g;
      for (int spins = 0; (g = gen_.load(std::memory_order_acquire)) == seen; ++spins) relax(spins);
      seen = g;
      if (stop_) return;
      (*fn_)(ThreadCtx{i, n_, &barrier_});
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  // Spin briefly, then yield: when other processes occupy the cores, pure spinning makes
  // a waiter burn the time slice the thread it waits for needs.
  static void relax(int spins) {
    if (spins < 4096) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
  int n_;
  wt::cpu::SpinBarrier barrier_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(const ThreadCtx&)>* fn_ = nullptr;
};

struct Buf {
  explicit Buf(size_t n) : p(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64))), n(n) {}
  ~Buf() { std::free(p); }
  Buf(const Buf&) = delete;
  uint8_t* p;
  size_t n;
};

size_t row_bytes(DType t, int64_t k) {
  size_t n = 0;
  wt::dtype_row_bytes(t, k, &n);
  return n;
}

// Random quantized weights with sane scales (speed does not depend on values).
void fill_weights(DType t, int64_t k, int64_t n_out, uint8_t* p, std::mt19937& rng) {
  const size_t n = row_bytes(t, k) * static_cast<size_t>(n_out);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
  const size_t bb = wt::traits(t).block_bytes;
  const uint16_t d = wt::cpu::f32_to_f16(0.01f);
  for (size_t o = 0; o < n; o += bb) {
    if (t == DType::q6_k) std::memcpy(p + o + 208, &d, 2);
    else if (t != DType::f32) std::memcpy(p + o, &d, 2), std::memcpy(p + o + 2, &d, 2);
  }
}

struct Mat {
  DType t;
  int64_t k, n_out;
  const char* name;
};

struct Model {
  std::vector<Mat> layer;
  Mat out;
  int n_layers;
};

// --cpu: time single-thread runs by this thread's CPU time, which is what a quiet machine
// would show when other processes share the cores (wall time is the default).
bool g_cpu_time = false;
bool g_hot = false;  // --hot: decode reuses one weight copy (cache-resident: compute bound)
bool g_f32 = false;  // --f32: matmul_f32 instead of matmul
int g_max_threads = 1;  // the most workers a run uses: matmul_f32's workspace is per worker
double now_s() {
  if (g_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One weight matrix in `copies` distinct buffers, activations x[n_rows][k], y, workspace.
struct Setup {
  Setup(const Mat& m, int64_t n_rows, int copies, std::mt19937& rng)
      : m(m), n_rows(n_rows), wbytes(row_bytes(m.t, m.k) * static_cast<size_t>(m.n_out)),
        w(wbytes * static_cast<size_t>(copies)), x(static_cast<size_t>(n_rows * m.k) * 4),
        y(static_cast<size_t>(n_rows * m.n_out) * 4),
        ws(std::max(wt::cpu::matmul_workspace_bytes(m.t, m.k, n_rows), wt::cpu::matmul_f32_workspace_bytes(m.k, g_max_threads))),
        copies(copies) {
    for (int c = 0; c < copies; ++c) fill_weights(m.t, m.k, m.n_out, w.p + c * wbytes, rng);
    std::normal_distribution<float> nd;
    float* xf = reinterpret_cast<float*>(x.p);
    for (int64_t i = 0; i < n_rows * m.k; ++i) xf[i] = nd(rng);
  }
  void run(const ThreadCtx& tc, int c) const {
    const Tensor wt_ = wt::make_tensor_2d(w.p + (c % copies) * wbytes, m.t, m.k, m.n_out);
    const Tensor xt = wt::make_tensor_2d(x.p, DType::f32, m.k, n_rows);
    const Tensor yt = wt::make_tensor_2d(y.p, DType::f32, m.n_out, n_rows);
    if (g_f32) wt::cpu::matmul_f32(tc, yt, wt_, xt, ws.p);
    else wt::cpu::matmul(tc, yt, wt_, xt, ws.p);
  }
  Mat m;
  int64_t n_rows;
  size_t wbytes;
  Buf w, x, y, ws;
  int copies;
};

// Seconds per call of one matrix, median over reps (each rep runs >= ~20 ms of calls).
double time_matrix(Pool& pool, const Setup& s, int reps) {
  int c = 0;
  int iters = 1;
  for (;;) {  // calibrate
    const double t0 = now_s();
    for (int i = 0; i < iters; ++i) pool.run([&](const ThreadCtx& tc) { s.run(tc, c); }), ++c;
    if (now_s() - t0 > 0.02) break;
    iters *= 2;
  }
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < iters; ++i) pool.run([&](const ThreadCtx& tc) { s.run(tc, c); }), ++c;
    t.push_back((now_s() - t0) / iters);
  }
  return median(t);
}

// --unpack: ns per 32-element block of the path's weight unpack (Kernels::fill_chunk) and of
// the portable weight_chunk_ref it replaces, over a cache-resident matrix, per format.
void bench_unpack(int reps, std::mt19937& rng) {
  const wt::cpu::mm::Kernels* kern = wt::cpu::mm::find_kernels(wt::cpu::matmul_isa());
  if (!kern || !kern->fill_chunk) {
    std::printf("the %s path unpacks block by block: no chunk unpack to time\n", wt::cpu::matmul_isa());
    return;
  }
  std::printf("\n%-6s %12s %12s %8s\n", "format", "path ns/blk", "ref ns/blk", "ref/path");
  for (DType t : {DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q8_0, DType::q4_k, DType::q5_k,
                  DType::q6_k}) {
    const int64_t k = 1536, n_out = 64;  // 64 rows of 1536: ~60 KiB of weights, in L2
    Buf w(row_bytes(t, k) * n_out), dst(1024);
    fill_weights(t, k, n_out, w.p, rng);
    const wt::cpu::ActLayout l = wt::cpu::act_layout(k, wt::cpu::act_kind(t));
    const size_t rb = row_bytes(t, k);
    auto time = [&](bool ref) {
      std::vector<double> ts;
      for (int r = 0; r < reps; ++r) {
        const double t0 = now_s();
        for (int64_t i = 0; i < n_out; ++i)
          for (int64_t c = 0; c < l.n_chunks; ++c) {
            if (ref) wt::cpu::weight_chunk_ref(t, w.p + i * rb, l, c, kern->fill_offset(t), dst.p);
            else kern->fill_chunk(t, w.p + i * rb, l, c, dst.p);
          }
        ts.push_back((now_s() - t0) * 1e9 / static_cast<double>(n_out * l.n_blocks));
      }
      return median(ts);
    };
    const double path = time(false), ref = time(true);
    std::printf("%-6s %12.1f %12.1f %7.1fx\n", wt::dtype_name(t), path, ref, ref / path);
  }
}

// --mat TYPE:K:N:ROWS (TYPE as dtype_name spells it: q4_k, q6_k, ...).
bool parse_mat(const char* arg, std::vector<Mat>* mats, std::vector<int64_t>* rows) {
  static std::deque<std::string> names;  // Mat::name points here for the whole run
  char type[16] = {};
  long long k = 0, n = 0, r = 0;
  int end = 0;
  if (std::sscanf(arg, "%15[^:]:%lld:%lld:%lld%n", type, &k, &n, &r, &end) != 4 ||
      arg[end] != '\0' || k <= 0 || n <= 0 || r <= 0)
    return false;
  for (uint32_t id = 0; id < 64; ++id) {
    const wt::DTypeTraits* tr = wt::dtype_traits(id);
    if (!tr || strcasecmp(tr->name, type) != 0) continue;
    if (row_bytes(tr->type, k) == 0 || k % 32 != 0) {  // whole blocks, and the activations' 32-blocks
      std::fprintf(stderr, "--mat %s: k must be a multiple of %lld and of 32\n", arg, static_cast<long long>(tr->block_elems));
      return false;
    }
    names.push_back(std::string(tr->name) + " " + std::to_string(k) + "x" + std::to_string(n));
    mats->push_back(Mat{tr->type, k, n, names.back().c_str()});
    rows->push_back(r);
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  int reps = 7;
  bool quick = false, unpack = false;
  std::vector<Mat> mats;  // --mat TYPE:K:N:ROWS
  std::vector<int64_t> mat_rows;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--isa" && i + 1 < argc) {
      if (!wt::cpu::set_matmul_isa_for_testing(argv[++i])) {
        std::fprintf(stderr, "unknown or unsupported isa %s\n", argv[i]);
        return 1;
      }
    } else if (a == "--threads" && i + 1 < argc) {
      threads.clear();
      for (const char* p = argv[++i]; *p; ++p)
        if (*p >= '1' && *p <= '9') threads.push_back(*p - '0');
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--hot") {
      g_hot = true;
    } else if (a == "--cpu") {
      g_cpu_time = true;
    } else if (a == "--unpack") {
      unpack = true;
    } else if (a == "--f32") {
      g_f32 = true;
    } else if (a == "--mat" && i + 1 < argc && parse_mat(argv[++i], &mats, &mat_rows)) {
    } else {
      std::fprintf(stderr, "usage: %s [--isa NAME] [--threads 1,2] [--reps N] [--quick] [--cpu] [--hot] [--unpack] [--f32] [--mat TYPE:K:N:ROWS]...\n", argv[0]);
      return 1;
    }
  }
  std::printf("matmul isa: %s%s\n", wt::cpu::matmul_isa(), g_f32 ? ", matmul_f32 (f32 activations)" : "");
  std::mt19937 rng(1);
  if (unpack) {
    bench_unpack(reps, rng);
    return 0;
  }

  // The default model: per layer q, k, v, o, gate, up (k = 576) and down (k = 1536).
  Model model{{{DType::q4_1, 576, 576, "q"},
               {DType::q4_1, 576, 192, "k"},
               {DType::q4_1, 576, 192, "v"},
               {DType::q4_1, 576, 576, "o"},
               {DType::q4_1, 576, 1536, "gate"},
               {DType::q4_1, 576, 1536, "up"},
               {DType::q4_1, 1536, 576, "down"}},
              {DType::q8_0, 576, 49152, "output"},
              30};
  const size_t kStream = size_t{128} << 20;  // decode: distinct copies totalling >= 128 MiB

  if (g_cpu_time) threads = {1};
  for (int n : threads) g_max_threads = std::max(g_max_threads, n);
  for (int nth : threads) {
    Pool pool(nth);
    std::printf("\n== %d thread%s ==\n", nth, nth > 1 ? "s" : "");
    std::printf("%-28s %8s %10s %9s %9s\n", "matrix", "rows", "us/call", "GOP/s", "GB/s");
    struct Item {
      Mat m;
      int64_t rows;
    };
    std::vector<Item> items = {{{DType::q4_1, 576, 1536, "Q4_1 576x1536 (gate)"}, 1},
                               {{DType::q4_1, 1536, 576, "Q4_1 1536x576 (down)"}, 1},
                               {{DType::q8_0, 576, 49152, "Q8_0 576x49152 (output)"}, 1},
                               {{DType::q4_1, 576, 1536, "Q4_1 576x1536 (gate)"}, 512},
                               {{DType::q4_1, 1536, 576, "Q4_1 1536x576 (down)"}, 512},
                               {{DType::q8_0, 576, 1536, "Q8_0 576x1536"}, 512}};
    if (!mats.empty()) {
      items.clear();
      for (size_t m = 0; m < mats.size(); ++m) items.push_back({mats[m], mat_rows[m]});
    } else if (!quick) {
      items.push_back({{DType::q4_1, 576, 1536, "Q4_1 576x1536 (gate)"}, 2048});
      items.push_back({{DType::q4_1, 1536, 576, "Q4_1 1536x576 (down)"}, 2048});
      items.push_back({{DType::q4_0, 576, 1536, "Q4_0 576x1536"}, 1});
      items.push_back({{DType::q4_0, 576, 1536, "Q4_0 576x1536"}, 512});
      items.push_back({{DType::q5_0, 576, 1536, "Q5_0 576x1536"}, 1});
      items.push_back({{DType::q5_0, 576, 1536, "Q5_0 576x1536"}, 512});
      items.push_back({{DType::q5_1, 576, 1536, "Q5_1 576x1536"}, 1});
      items.push_back({{DType::q5_1, 576, 1536, "Q5_1 576x1536"}, 512});
      items.push_back({{DType::q4_k, 1536, 576, "Q4_K 1536x576"}, 1});
      items.push_back({{DType::q4_k, 1536, 576, "Q4_K 1536x576"}, 512});
      items.push_back({{DType::q6_k, 1536, 576, "Q6_K 1536x576"}, 1});
      items.push_back({{DType::q6_k, 1536, 576, "Q6_K 1536x576"}, 512});
      items.push_back({{DType::f16, 576, 1536, "F16 576x1536"}, 1});
      items.push_back({{DType::f16, 576, 1536, "F16 576x1536"}, 512});
    }
    for (const Item& it : items) {
      const size_t wb = row_bytes(it.m.t, it.m.k) * static_cast<size_t>(it.m.n_out);
      const int copies = it.rows == 1 && !g_hot ? static_cast<int>(std::max<size_t>(1, kStream / wb)) : 1;
      const Setup s(it.m, it.rows, copies, rng);
      const double t = time_matrix(pool, s, reps);
      const double ops = 2.0 * it.m.k * it.m.n_out * it.rows;
      std::printf("%-28s %8lld %10.1f %9.1f %9.2f\n", it.m.name, static_cast<long long>(it.rows), t * 1e6,
                  ops / t * 1e-9, wb / t * 1e-9);
    }
    if (!mats.empty()) continue;

    // Matmul-only tokens/s of the whole model: decode = one row through 30 layers (each
    // with its own weights) + the output matrix; prefill = n rows through the layers + the
    // output for the last row (as llama-bench's pp does).
    std::vector<int64_t> prefill = quick ? std::vector<int64_t>{512} : std::vector<int64_t>{512, 2048};
    {
      std::vector<std::unique_ptr<Setup>> layers;
      for (int l = 0; l < model.n_layers; ++l)
        for (const Mat& m : model.layer) layers.push_back(std::make_unique<Setup>(m, 1, 1, rng));
      const Setup out(model.out, 1, 1, rng);
      auto token = [&] {
        for (auto& s : layers) pool.run([&](const ThreadCtx& tc) { s->run(tc, 0); });
        pool.run([&](const ThreadCtx& tc) { out.run(tc, 0); });
      };
      token();
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        const double t0 = now_s();
        for (int i = 0; i < 5; ++i) token();
        t.push_back((now_s() - t0) / 5);
      }
      const double tt = median(t);
      size_t bytes = 0;
      for (auto& s : layers) bytes += s->wbytes;
      bytes += out.wbytes;
      std::printf("model decode (matmul only):   %7.1f tok/s  %6.2f GB/s of weights\n", 1.0 / tt, bytes / tt * 1e-9);
    }
    for (int64_t n : prefill) {
      std::vector<std::unique_ptr<Setup>> layer;
      for (const Mat& m : model.layer) layer.push_back(std::make_unique<Setup>(m, n, 1, rng));
      const Setup out(model.out, 1, 1, rng);
      std::vector<double> t;
      double ops = 0;
      for (const Mat& m : model.layer) ops += 2.0 * m.k * m.n_out * n * model.n_layers;
      for (int r = 0; r < std::max(3, reps / 2); ++r) {
        const double t0 = now_s();
        for (int l = 0; l < model.n_layers; ++l)
          for (auto& s : layer) pool.run([&](const ThreadCtx& tc) { s->run(tc, 0); });
        pool.run([&](const ThreadCtx& tc) { out.run(tc, 0); });
        t.push_back(now_s() - t0);
      }
      const double tt = median(t);
      std::printf("model prefill %4lld (matmul only): %7.1f tok/s  %6.1f GOP/s\n", static_cast<long long>(n),
                  n / tt, ops / tt * 1e-9);
    }
  }
  return 0;
}
