// Matmul front end: picks the SIMD path once per process (CPUID + OS register-state check),
// sizes the workspace, quantizes activations (phase 1) and splits the multiply across
// workers (phase 2). The kernels themselves live in matmul_{scalar,avx2,avx512,neon}.cpp.
#include "matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "matmul_impl.h"
#include "quant.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace wt::cpu {
namespace {

using mm::Kernels;

constexpr int64_t kLocalActBytes = 24 * 1024;  // a decode row of k <= ~19k, on the stack

bool is_quantized(DType t) { return t != DType::f32 && t != DType::f16 && t != DType::bf16; }

#if defined(__x86_64__)
// XCR0: which register state the OS saves on context switch. The CPU may support AVX-512
// while the OS (or hypervisor) leaves it disabled; then using zmm registers faults.
uint64_t xcr0() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;  // no OSXSAVE
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
bool os_saves_ymm() { return (xcr0() & 0x6) == 0x6; }     // SSE + AVX state
bool os_saves_zmm() { return (xcr0() & 0xE6) == 0xE6; }   // + opmask, ZMM_Hi256, Hi16_ZMM
bool cpu_f16c() {  // CPUID.1:ECX[29]; clang 14's __builtin_cpu_supports has no "f16c"
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
bool cpu_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_f16c() && os_saves_ymm();
}
bool cpu_avx512() {
  return cpu_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni") && os_saves_zmm();
}
#endif

#if defined(__aarch64__)
bool cpu_dotprod() {
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}
#endif

// Every path this CPU can run, best first.
int available(const Kernels** out, int max) {
  int n = 0;
  auto add = [&](const Kernels* k) {
    if (n < max) out[n++] = k;
  };
#if defined(__x86_64__)
  if (cpu_avx512()) add(&mm::kAvx512Kernels);
  if (cpu_avx2()) add(&mm::kAvx2Kernels);
#endif
#if defined(__aarch64__)
  if (cpu_dotprod()) add(&mm::kNeonDotKernels);
  add(&mm::kNeonKernels);
#endif
  add(&mm::kScalarKernels);
  return n;
}

const Kernels* best() {
  const Kernels* k[8];
  available(k, 8);
  return k[0];
}

std::atomic<const Kernels*> g_override{nullptr};

const Kernels& kernels() {
  static const Kernels* const chosen = best();
  const Kernels* o = g_override.load(std::memory_order_relaxed);
  return o ? *o : *chosen;
}

}  // namespace

size_t matmul_workspace_bytes(DType wtype, int64_t k, int64_t n_rows) {
  if (!is_quantized(wtype)) return 64;  // float weights read x directly
  return static_cast<size_t>(n_rows) * static_cast<size_t>(act_layout(k, act_kind(wtype)).row_bytes) + 64;
}

void matmul(const ThreadCtx& tc, const Tensor& y, const Tensor& w, const Tensor& x, void* workspace) {
  const Kernels& kern = kernels();
  mm::Job job{};
  job.wtype = w.type;
  job.k = w.ne[0];
  job.n_out = w.ne[1];
  job.n_rows = x.n_rows();
  job.w = static_cast<const uint8_t*>(w.data);
  job.w_stride = w.nb[1];
  job.x = mm::rows_of(x);
  job.y = mm::rows_of(y);
  if (job.n_out == 0 || job.n_rows == 0 || job.k == 0) return;

  const bool quant = is_quantized(w.type);
  alignas(64) uint8_t local[kLocalActBytes];
  if (quant) {
    const ActLayout l = act_layout(job.k, act_kind(w.type));
    job.xq_stride = static_cast<size_t>(l.row_bytes);
    if (job.n_rows == 1 && l.row_bytes <= kLocalActBytes) {
      // Decode: every worker quantizes the one row into its own buffer (the same bytes),
      // which costs less than making the others wait at a barrier for it.
      kern.quantize_row(reinterpret_cast<const float*>(job.x.row(0)), job.k, l.kind, local);
      job.xq = local;
    } else {
      // Phase 1: quantize activation rows into the workspace, rows split across workers.
      job.xq = static_cast<const uint8_t*>(workspace);
      int64_t r0, r1;
      tc.split(job.n_rows, &r0, &r1);
      for (int64_t r = r0; r < r1; ++r) {
        kern.quantize_row(reinterpret_cast<const float*>(job.x.row(r)), job.k, l.kind,
                          static_cast<uint8_t*>(workspace) + r * l.row_bytes);
      }
      tc.sync();
    }
  }

  // Phase 2: each worker owns a disjoint set of outputs. Split the weight rows (in units
  // of 4, the kernels' tile height) unless there are too few of them to keep every worker
  // busy, then split the activation rows instead. Either way each output is computed by
  // one worker in an order fixed by k alone.
  constexpr int64_t kUnit = 4;
  const int64_t n_units = (job.n_out + kUnit - 1) / kUnit;
  int64_t i0 = 0, i1 = job.n_out, j0 = 0, j1 = job.n_rows;
  if (n_units >= 4 * tc.nth || job.n_rows < 2 * tc.nth) {
    int64_t u0, u1;
    tc.split(n_units, &u0, &u1);
    i0 = u0 * kUnit;
    i1 = u1 * kUnit < job.n_out ? u1 * kUnit : job.n_out;
  } else {
    tc.split(job.n_rows, &j0, &j1);
  }
  if (i0 >= i1 || j0 >= j1) return;
  (quant ? kern.qmatmul : kern.fmatmul)(job, i0, i1, j0, j1);
}

namespace {
constexpr int64_t kF32Tile = 16;  // weight rows dequantized at a time per worker
}  // namespace

size_t matmul_f32_workspace_bytes(int64_t k, int n_threads) {
  return static_cast<size_t>(n_threads) * static_cast<size_t>(kF32Tile * k) * sizeof(float) + 64;
}

void matmul_f32(const ThreadCtx& tc, const Tensor& y, const Tensor& w, const Tensor& x, void* workspace) {
  if (!is_quantized(w.type)) return matmul(tc, y, w, x, workspace);
  const Kernels& kern = kernels();
  const int64_t k = w.ne[0], n_out = w.ne[1];
  float* tile = static_cast<float*>(workspace) + static_cast<size_t>(tc.ith) * kF32Tile * k;
  const int64_t n_tiles = (n_out + kF32Tile - 1) / kF32Tile;
  int64_t t0, t1;
  tc.split(n_tiles, &t0, &t1);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t i0 = t * kF32Tile, n = (i0 + kF32Tile < n_out ? kF32Tile : n_out - i0);
    for (int64_t i = 0; i < n; ++i) dequantize_row(w, i0 + i, tile + i * k);
    mm::Job job{};
    job.wtype = DType::f32;
    job.k = k;
    job.n_out = n;
    job.n_rows = x.n_rows();
    job.w = reinterpret_cast<const uint8_t*>(tile);
    job.w_stride = static_cast<size_t>(k) * sizeof(float);
    job.x = mm::rows_of(x);
    job.y = mm::rows_of(y);
    job.y.base += i0 * static_cast<int64_t>(sizeof(float));  // columns [i0, i0 + n) of y
    kern.fmatmul(job, 0, n, 0, job.n_rows);
  }
}

void dequantize_row(const Tensor& w, int64_t row, float* dst) {
  dequantize(w.type, static_cast<const char*>(w.data) + row * w.nb[1], dst, w.ne[0]);
}

const char* matmul_isa() { return kernels().name; }

const mm::Kernels* mm::find_kernels(const char* name) {
  const Kernels* k[8];
  const int n = available(k, 8);
  for (int i = 0; i < n; ++i)
    if (std::strcmp(k[i]->name, name) == 0) return k[i];
  return nullptr;
}

bool set_matmul_isa_for_testing(const char* name) {
  const Kernels* k = name ? mm::find_kernels(name) : nullptr;
  if (name && !k) return false;
  g_override.store(k);
  return true;
}

int matmul_isa_list(const char** out_names, int max_names) {
  const Kernels* k[8];
  const int n = available(k, 8);
  int m = 0;
  for (int i = 0; i < n && m < max_names; ++i) out_names[m++] = k[i]->name;
  return m;
}

}  // namespace wt::cpu

namespace wt::cpu::mm {

void fmatmul_tiled(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1, const FTileFn* tiles, int mr_max,
                   int nr_max) {
  // Columns in panels of x rows whose k floats fill about 512 KiB.
  const int64_t jc = std::max<int64_t>(nr_max, (int64_t{1} << 19) / (job.k * 4) / nr_max * nr_max);
  const uint8_t* w[8];
  const float* x[8];
  float* y[8];
  for (int64_t ja = j0; ja < j1; ja += jc) {
    const int64_t jb = std::min(j1, ja + jc);
    for (int64_t it = i0; it < i1; it += mr_max) {
      const int mr = static_cast<int>(std::min<int64_t>(mr_max, i1 - it));
      for (int i = 0; i < mr; ++i) w[i] = job.w + (it + i) * job.w_stride;
      for (int64_t jt = ja; jt < jb; jt += nr_max) {
        const int nr = static_cast<int>(std::min<int64_t>(nr_max, jb - jt));
        for (int j = 0; j < nr; ++j) {
          x[j] = reinterpret_cast<const float*>(job.x.row(jt + j));
          y[j] = reinterpret_cast<float*>(job.y.row(jt + j)) + it;
        }
        tiles[(mr - 1) * nr_max + (nr - 1)](w, x, y, job.k);
      }
    }
  }
}

}  // namespace wt::cpu::mm
