// The CPU matmul: reference dequantizers against the gguf package's, every SIMD path this
// machine runs against a double-precision reference, and results that are bit-identical
// across worker counts and batch sizes.
//
// Error bound for quantized weights. Weights are exact (we multiply the very values the
// reference dequantizes), but activations are rounded to int8 per block of 32 with step
// dx = amax / 127, so each element is off by at most dx / 2 and an output by at most
//   B = sum_e |w_e| dx_b(e) / 2.
// We require |y - y_ref| <= 1.01 B + 1e-5 sum_e |w_e x_e| (the second term covers f32
// accumulation) for every output, and a normalized MSE sum (y - y_ref)^2 / sum y_ref^2
// below 2e-3. (Our activations are N(0,1) with 1% outliers of 20x, as real ones have; a
// block holding an outlier gets a 20x coarser step, which puts the expected NMSE at
// ~5e-4; without outliers it is ~3e-5.) Float weights (F32/F16/BF16) use f32 x directly:
// |y - y_ref| <= 1e-5 sum |w_e x_e| and NMSE < 1e-10.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/run_workers.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_impl.h"
#include "kernels/cpu/ops_cpu.h"
#include "kernels/cpu/quant.h"

namespace {

using wt::test::run_workers;

using wt::DType;
using wt::Tensor;
using wt::cpu::ThreadCtx;

struct AlignedBuf {
  explicit AlignedBuf(size_t n) : p(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64))) {}
  ~AlignedBuf() { std::free(p); }
  AlignedBuf(const AlignedBuf&) = delete;
  AlignedBuf& operator=(const AlignedBuf&) = delete;
  uint8_t* p;
};

std::vector<uint8_t> read_file(const std::string& name) {
  std::ifstream f(std::string(WT_TEST_DATA_DIR) + "/quant/" + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

size_t row_bytes(DType t, int64_t k) {
  size_t n = 0;
  REQUIRE(wt::dtype_row_bytes(t, k, &n));
  return n;
}

// Random weights: raw random blocks with sane f16 scales (every quant bit pattern occurs,
// Q8_0's -128 included), random values for the float types.
std::vector<uint8_t> random_weights(DType t, int64_t n_out, int64_t k, std::mt19937& rng) {
  std::vector<uint8_t> w(row_bytes(t, k) * static_cast<size_t>(n_out));
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f), off(-0.2f, 0.2f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto put16 = [](uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); };
  auto f16 = [&](float v) { return wt::cpu::f32_to_f16(v); };
  if (t == DType::f32 || t == DType::f16 || t == DType::bf16) {
    for (size_t i = 0; i < static_cast<size_t>(n_out * k); ++i) {
      const float v = normal(rng);
      if (t == DType::f32) std::memcpy(&w[4 * i], &v, 4);
      else put16(&w[2 * i], t == DType::f16 ? f16(v) : wt::cpu::f32_to_bf16(v));
    }
    return w;
  }
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  const size_t bb = wt::traits(t).block_bytes;
  for (size_t off_b = 0; off_b < w.size(); off_b += bb) {
    uint8_t* p = &w[off_b];
    const float sign = (rng() & 1) ? 1.0f : -1.0f;
    switch (t) {
      case DType::q4_0:
      case DType::q5_0:
      case DType::q8_0: put16(p, f16(sign * scale(rng))); break;
      case DType::q4_1:
      case DType::q5_1: put16(p, f16(scale(rng))); put16(p + 2, f16(off(rng))); break;
      case DType::q4_k:
      case DType::q5_k: put16(p, f16(scale(rng))); put16(p + 2, f16(scale(rng))); break;
      case DType::q6_k: put16(p + 208, f16(sign * scale(rng))); break;
      default: break;
    }
  }
  return w;
}

bool is_quant(DType t) { return t != DType::f32 && t != DType::f16 && t != DType::bf16; }

struct Problem {
  DType t;
  int64_t k, n_out, n_rows;
  std::vector<uint8_t> w;
  std::vector<float> wf;  // dequantized [n_out][k]
  std::vector<float> x;   // [n_rows][x_stride]
  int64_t x_stride, y_stride;
};

Problem make_problem(DType t, int64_t k, int64_t n_out, int64_t n_rows, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p{t, k, n_out, n_rows, random_weights(t, n_out, k, rng), {}, {}, k + 16, n_out + 8};
  p.wf.resize(static_cast<size_t>(n_out * k));
  const size_t rb = row_bytes(t, k);
  for (int64_t i = 0; i < n_out; ++i) wt::cpu::dequantize(t, &p.w[i * rb], &p.wf[i * k], k);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  p.x.assign(static_cast<size_t>(n_rows * p.x_stride), 0.0f);
  for (int64_t j = 0; j < n_rows; ++j)
    for (int64_t e = 0; e < k; ++e) {
      float v = normal(rng);
      if (rng() % 97 == 0) v *= 20.0f;  // outliers, as real activations have
      if (j % 5 == 4 && e < 64) v = 0.0f;  // all-zero blocks (dx = 0)
      p.x[j * p.x_stride + e] = v;
    }
  return p;
}

// y rows have y_stride floats; the padding after n_out must stay untouched. f32_x: through
// matmul_f32 (f32 activations) instead of matmul.
std::vector<float> run(const Problem& p, int nth, int64_t row0 = 0, int64_t n_rows = -1, bool f32_x = false) {
  if (n_rows < 0) n_rows = p.n_rows;
  Tensor w = wt::make_tensor_2d(const_cast<uint8_t*>(p.w.data()), p.t, p.k, p.n_out);
  Tensor x = wt::make_tensor_2d(const_cast<float*>(&p.x[row0 * p.x_stride]), DType::f32, p.k, n_rows);
  x.nb[1] = x.nb[2] = x.nb[3] = static_cast<size_t>(p.x_stride) * 4;
  std::vector<float> y(static_cast<size_t>(n_rows * p.y_stride), -12345.0f);
  Tensor yt = wt::make_tensor_2d(y.data(), DType::f32, p.n_out, n_rows);
  yt.nb[1] = yt.nb[2] = yt.nb[3] = static_cast<size_t>(p.y_stride) * 4;
  AlignedBuf ws(f32_x ? wt::cpu::matmul_f32_workspace_bytes(p.k, nth) : wt::cpu::matmul_workspace_bytes(p.t, p.k, n_rows));
  run_workers(nth, [&](const ThreadCtx& tc) {
    if (f32_x) wt::cpu::matmul_f32(tc, yt, w, x, ws.p);
    else wt::cpu::matmul(tc, yt, w, x, ws.p);
  });
  return y;
}

// f32_x: the activations were used as f32 (float weights, or matmul_f32): only the f32
// accumulation's bound applies.
void check_against_reference(const Problem& p, const std::vector<float>& y, bool f32_x = false) {
  const bool int8_x = is_quant(p.t) && !f32_x;
  double err2 = 0, ref2 = 0;
  for (int64_t j = 0; j < p.n_rows; ++j) {
    const float* x = &p.x[j * p.x_stride];
    std::vector<double> dx(static_cast<size_t>(p.k / 32));
    for (int64_t b = 0; b < p.k / 32; ++b) {
      float amax = 0;
      for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(x[32 * b + e]));
      dx[b] = amax / 127.0;
    }
    for (int64_t i = 0; i < p.n_out; ++i) {
      const float* w = &p.wf[i * p.k];
      double ref = 0, absdot = 0, bound = 0;
      for (int64_t e = 0; e < p.k; ++e) {
        ref += static_cast<double>(w[e]) * x[e];
        absdot += std::fabs(static_cast<double>(w[e]) * x[e]);
        bound += std::fabs(w[e]) * dx[e / 32] / 2;
      }
      const double got = y[j * p.y_stride + i];
      const double tol = (int8_x ? 1.01 * bound : 0.0) + 1e-5 * absdot + 1e-30;
      if (!(std::fabs(got - ref) <= tol)) {
        CAPTURE(j);
        CAPTURE(i);
        CAPTURE(got);
        CAPTURE(ref);
        CAPTURE(tol);
        FAIL_CHECK("output outside the error bound");
        return;
      }
      err2 += (got - ref) * (got - ref);
      ref2 += ref * ref;
    }
    for (int64_t i = p.n_out; i < p.y_stride; ++i) REQUIRE(y[j * p.y_stride + i] == -12345.0f);
  }
  CHECK(err2 / std::max(ref2, 1e-300) < (int8_x ? 2e-3 : 1e-10));
}

std::vector<const char*> isas() {
  const char* names[8];
  const int n = wt::cpu::matmul_isa_list(names, 8);
  return std::vector<const char*>(names, names + n);
}

struct IsaGuard {
  ~IsaGuard() { wt::cpu::set_matmul_isa_for_testing(nullptr); }
};

void check_type(DType t) {
  IsaGuard guard;
  const bool kq = t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
  // k: one partial group, 576 (4.5 groups), 1536, and past the 2048-element panel; 8960
  // (Qwen2.5-1.5B's ffn_down): rows past 4 KiB, which AVX2's decode takes one at a time.
  const std::vector<int64_t> ks = kq ? std::vector<int64_t>{256, 1536, 4352, 8960}
                                     : std::vector<int64_t>{32, 96, 256, 576, 1536, 2080, 8960};
  uint32_t seed = 1000 + static_cast<uint32_t>(t);
  for (int64_t k : ks) {
    for (int64_t n_rows : {1, 3, 17, 64}) {
      const int64_t n_out = n_rows == 17 ? 3 : 37;  // fewer rows than a tile, and a ragged tail
      const Problem p = make_problem(t, k, n_out, n_rows, ++seed);
      for (const char* isa : isas()) {
        const std::string tname = wt::dtype_name(t);
        CAPTURE(tname);
        CAPTURE(k);
        CAPTURE(n_rows);
        CAPTURE(n_out);
        CAPTURE(seed);
        const std::string isa_name = isa;
        CAPTURE(isa_name);
        REQUIRE(wt::cpu::set_matmul_isa_for_testing(isa));
        const std::vector<float> y1 = run(p, 1);
        check_against_reference(p, y1);
        for (int nth : {2, 3}) {
          CAPTURE(nth);
          CHECK(run(p, nth) == y1);  // bit-identical: each output has one fixed order
        }
        if (n_rows > 1) {  // a row's result does not depend on the batch around it
          for (int64_t j : {int64_t{0}, n_rows - 1}) {
            const std::vector<float> yj = run(p, 1, j, 1);
            CHECK(std::memcmp(yj.data(), &y1[j * p.y_stride], static_cast<size_t>(n_out) * 4) == 0);
          }
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("matmul: f16 and bf16 conversions match numpy / gguf") {
  for (uint32_t h = 0; h < 65536; ++h) {  // every f16 survives f16 -> f32 -> f16
    const float f = wt::cpu::f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(wt::cpu::f32_to_f16(f) == h);
  }
  for (const char* name : {"f32_to_f16", "f32_to_bf16"}) {
    const std::vector<uint8_t> in = read_file(std::string(name) + ".f32"), out = read_file(std::string(name) + ".u16");
    REQUIRE(in.size() > 0);
    REQUIRE(in.size() == 2 * out.size());
    for (size_t i = 0; i < out.size() / 2; ++i) {
      float x;
      uint16_t want;
      std::memcpy(&x, &in[4 * i], 4);
      std::memcpy(&want, &out[2 * i], 2);
      const uint16_t got = name[7] == 'f' ? wt::cpu::f32_to_f16(x) : wt::cpu::f32_to_bf16(x);
      CAPTURE(name);
      CAPTURE(x);
      REQUIRE(got == want);
    }
  }
  CHECK(std::isnan(wt::cpu::f16_to_f32(0x7E00)));
  CHECK(wt::cpu::f32_to_bf16(std::nanf("")) == 0x7FC0);
}

TEST_CASE("matmul: dequantizers match the gguf package") {
  const std::pair<DType, const char*> types[] = {{DType::q4_0, "q4_0"}, {DType::q4_1, "q4_1"}, {DType::q5_0, "q5_0"},
                                                 {DType::q5_1, "q5_1"}, {DType::q8_0, "q8_0"}, {DType::q4_k, "q4_k"},
                                                 {DType::q5_k, "q5_k"}, {DType::q6_k, "q6_k"}, {DType::f16, "f16"},
                                                 {DType::bf16, "bf16"}};
  for (const auto& entry : types) {
    const DType t = entry.first;
    const std::string name = entry.second;  // (clang 14 cannot capture structured bindings)
    CAPTURE(name);
    const std::vector<uint8_t> raw = read_file(name + ".raw"), ref = read_file(name + ".f32");
    REQUIRE(!raw.empty());
    const int64_t n = static_cast<int64_t>(ref.size() / 4);
    REQUIRE(row_bytes(t, n) == raw.size());
    std::vector<float> got(static_cast<size_t>(n));
    // Through the public entry point: a one-row tensor.
    Tensor w = wt::make_tensor_2d(const_cast<uint8_t*>(raw.data()), t, n, 1);
    wt::cpu::dequantize_row(w, 0, got.data());
    for (int64_t i = 0; i < n; ++i) {
      float want;
      std::memcpy(&want, &ref[4 * i], 4);
      CAPTURE(i);
      REQUIRE(got[i] == want);  // the same f32 operations as numpy: exact
    }
  }
}

TEST_CASE("matmul: every path quantizes activations identically") {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t k : {32, 96, 256, 576, 1536, 2080}) {
    std::vector<float> x(static_cast<size_t>(k));
    for (float& v : x) v = normal(rng) * (rng() % 7 == 0 ? 100.0f : 1.0f);
    for (int e = 0; e < 32; ++e) x[e] = 0.0f;  // a zero block
    x[static_cast<size_t>(k) - 1] = 0.5f * 127.0f / 127.0f;  // ties in some blocks
    for (wt::cpu::ActKind kind : {wt::cpu::ActKind::block32, wt::cpu::ActKind::half16}) {
      if (kind == wt::cpu::ActKind::half16 && k % 256) continue;
      const int64_t rb = wt::cpu::act_layout(k, kind).row_bytes;
      AlignedBuf want(static_cast<size_t>(rb)), got(static_cast<size_t>(rb));
      wt::cpu::quantize_act_row_ref(x.data(), k, kind, want.p);
      for (const char* isa : isas()) {
        const std::string isa_name = isa;
        CAPTURE(isa_name);
        CAPTURE(k);
        std::memset(got.p, 0xAB, static_cast<size_t>(rb));
        wt::cpu::mm::find_kernels(isa)->quantize_row(x.data(), k, kind, got.p);
        CHECK(std::memcmp(got.p, want.p, static_cast<size_t>(rb)) == 0);
      }
    }
  }
}

// Each SIMD path's unpack against the portable one, chunk by chunk: the same int8 vectors
// and the same d16 / m16 values (== lets a zero m16 differ in sign), for every chunk shape:
// full chunks, a last chunk laid out for 2, 4 or 8 blocks, one padded to 16, and Q6_K's.
TEST_CASE("matmul: every path's weight unpack gives weight_chunk_ref's chunks") {
  uint32_t seed = 9000;
  for (const char* isa : isas()) {
    const wt::cpu::mm::Kernels* kern = wt::cpu::mm::find_kernels(isa);
    REQUIRE(kern != nullptr);
    if (!kern->fill_chunk) continue;  // unpacks block by block (scalar): nothing to compare
    const std::string isa_name = isa;
    CAPTURE(isa_name);
    for (DType t : {DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q8_0, DType::q4_k, DType::q5_k,
                    DType::q6_k}) {
      const bool kq = t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
      for (int64_t k : kq ? std::vector<int64_t>{256, 768, 4352} : std::vector<int64_t>{64, 128, 256, 576, 896, 2080}) {
        std::mt19937 rng(++seed);
        const std::vector<uint8_t> w = random_weights(t, 3, k, rng);
        const wt::cpu::ActLayout l = wt::cpu::act_layout(k, wt::cpu::act_kind(t));
        const size_t rb = row_bytes(t, k);
        AlignedBuf got(1024), want(1024);
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t c = 0; c < l.n_chunks; ++c) {
            const std::string tname = wt::dtype_name(t);
            CAPTURE(tname);
            CAPTURE(k);
            CAPTURE(c);
            const int n_vec = wt::cpu::chunk_map(l.kind, static_cast<int>(l.chunk_blocks(c))).n_vec;
            std::memset(got.p, 0xAB, 1024);
            kern->fill_chunk(t, &w[static_cast<size_t>(i) * rb], l, c, got.p);
            wt::cpu::weight_chunk_ref(t, &w[static_cast<size_t>(i) * rb], l, c, kern->fill_offset(t), want.p);
            REQUIRE(std::memcmp(got.p, want.p, static_cast<size_t>(64 * n_vec)) == 0);
            for (int e = 0; e < 32; ++e) {
              float a, b;
              std::memcpy(&a, got.p + 64 * n_vec + 4 * e, 4);
              std::memcpy(&b, want.p + 64 * n_vec + 4 * e, 4);
              CAPTURE(e);
              REQUIRE(a == b);
            }
          }
      }
    }
  }
}

TEST_CASE("matmul: Q4_0 on every path") { check_type(DType::q4_0); }
TEST_CASE("matmul: Q4_1 on every path") { check_type(DType::q4_1); }
TEST_CASE("matmul: Q5_0 on every path") { check_type(DType::q5_0); }
TEST_CASE("matmul: Q5_1 on every path") { check_type(DType::q5_1); }
TEST_CASE("matmul: Q8_0 on every path") { check_type(DType::q8_0); }
TEST_CASE("matmul: Q4_K on every path") { check_type(DType::q4_k); }
TEST_CASE("matmul: Q5_K on every path") { check_type(DType::q5_k); }
TEST_CASE("matmul: Q6_K on every path") { check_type(DType::q6_k); }
TEST_CASE("matmul: F32 on every path") { check_type(DType::f32); }
TEST_CASE("matmul: F16 on every path") { check_type(DType::f16); }
TEST_CASE("matmul: BF16 on every path") { check_type(DType::bf16); }

// The same checks on a few small shapes: what the aarch64 cross build runs under
// qemu-aarch64 (scripts/cross-test.sh), where the full sweeps above take many minutes.
TEST_CASE("matmul: small shapes on every path") {
  IsaGuard guard;
  uint32_t seed = 7000;
  for (DType t : {DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q8_0, DType::q4_k, DType::q5_k,
                  DType::q6_k, DType::f32, DType::f16, DType::bf16}) {
    const bool kq = t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
    for (int64_t k : kq ? std::vector<int64_t>{256} : std::vector<int64_t>{96, 576}) {
      for (int64_t n_rows : {1, 5}) {
        const Problem p = make_problem(t, k, 9, n_rows, ++seed);
        for (const char* isa : isas()) {
          const std::string tname = wt::dtype_name(t), isa_name = isa;
          CAPTURE(tname);
          CAPTURE(k);
          CAPTURE(n_rows);
          CAPTURE(isa_name);
          REQUIRE(wt::cpu::set_matmul_isa_for_testing(isa));
          const std::vector<float> y1 = run(p, 1);
          check_against_reference(p, y1);  // one worker: qemu-user runs spinning workers slowly
        }
      }
    }
  }
}

TEST_CASE("matmul: reports a SIMD path and can be forced") {
  IsaGuard guard;
  const std::vector<const char*> all = isas();
  REQUIRE(!all.empty());
  std::string list;
  for (const char* n : all) list += std::string(list.empty() ? "" : ",") + n;
  MESSAGE("matmul isa: " << std::string(wt::cpu::matmul_isa()) << " (available: " << list << ")");  // scripts/cross-test.sh reads it
  CHECK(std::string(wt::cpu::matmul_isa()) == all.front());
  CHECK(std::string(all.back()) == "scalar");
  CHECK_FALSE(wt::cpu::set_matmul_isa_for_testing("no-such-isa"));
  REQUIRE(wt::cpu::set_matmul_isa_for_testing("scalar"));
  CHECK(std::string(wt::cpu::matmul_isa()) == "scalar");
}

TEST_CASE("matmul: 3-D strided activations and outputs give the same bits as 2-D") {
  // x [k, 2, 3] with padding between rows and between planes; y likewise.
  for (DType t : {DType::q4_1, DType::f16}) {
    const int64_t k = 576, n_out = 37;
    const Problem p = make_problem(t, k, n_out, 6, 77);
    const std::vector<float> want = run(p, 2);
    const size_t xrow = static_cast<size_t>(k + 8), xplane = 2 * xrow + 5;
    std::vector<float> x(3 * xplane, 0.0f);
    for (int64_t r = 0; r < 6; ++r)
      std::memcpy(&x[(r / 2) * xplane + (r % 2) * xrow], &p.x[r * p.x_stride], static_cast<size_t>(k) * 4);
    const size_t yrow = static_cast<size_t>(n_out + 3), yplane = 2 * yrow + 7;
    std::vector<float> y(3 * yplane, 0.0f);
    const int64_t ne[3] = {k, 2, 3}, ney[3] = {n_out, 2, 3};
    Tensor xt = wt::make_tensor(x.data(), DType::f32, 3, ne);
    xt.nb[1] = xrow * 4, xt.nb[2] = xplane * 4, xt.nb[3] = 3 * xplane * 4;
    Tensor yt = wt::make_tensor(y.data(), DType::f32, 3, ney);
    yt.nb[1] = yrow * 4, yt.nb[2] = yplane * 4, yt.nb[3] = 3 * yplane * 4;
    Tensor w = wt::make_tensor_2d(const_cast<uint8_t*>(p.w.data()), t, k, n_out);
    AlignedBuf ws(wt::cpu::matmul_workspace_bytes(t, k, 6));
    run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::matmul(tc, yt, w, xt, ws.p); });
    for (int64_t r = 0; r < 6; ++r) {
      CAPTURE(r);
      CHECK(std::memcmp(&y[(r / 2) * yplane + (r % 2) * yrow], &want[r * p.y_stride], static_cast<size_t>(n_out) * 4) == 0);
    }
  }
}

TEST_CASE("matmul: a decode row too long for the on-stack activation buffer") {
  // k = 20480: its quantized row exceeds the 24 KiB decode buffer, so one row goes
  // through the workspace and the barrier instead; the answer must not change.
  IsaGuard guard;
  const Problem p = make_problem(DType::q8_0, 20480, 9, 2, 5);
  for (const char* isa : isas()) {
    const std::string isa_name = isa;
    CAPTURE(isa_name);
    REQUIRE(wt::cpu::set_matmul_isa_for_testing(isa));
    const std::vector<float> both = run(p, 2);
    check_against_reference(p, both);
    const std::vector<float> one = run(p, 3, 1, 1);
    CHECK(std::memcmp(one.data(), &both[p.y_stride], 9 * 4) == 0);
  }
}

// Every weight type Whittle reads (the matmul and embed tests below).
const DType kAllTypes[] = {DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q8_0, DType::q4_k,
                           DType::q5_k, DType::q6_k, DType::f32,  DType::f16,  DType::bf16};

TEST_CASE("matmul: the Q5_0 and Q5_1 quantizers match the gguf package and round-trip") {
  for (DType t : {DType::q5_0, DType::q5_1}) {
    const std::string name = t == DType::q5_0 ? "q5_0" : "q5_1";
    CAPTURE(name);
    const std::vector<uint8_t> in = read_file(name + "_quant.f32"), want = read_file(name + "_quant.raw");
    REQUIRE(!in.empty());
    const int64_t n = static_cast<int64_t>(in.size() / 4);
    REQUIRE(row_bytes(t, n) == want.size());
    std::vector<float> x(static_cast<size_t>(n));
    std::memcpy(x.data(), in.data(), in.size());
    std::vector<uint8_t> got(want.size());
    if (t == DType::q5_0) wt::cpu::quantize_q5_0(x.data(), got.data(), n);
    else wt::cpu::quantize_q5_1(x.data(), got.data(), n);
    const size_t bb = wt::traits(t).block_bytes;
    for (size_t b = 0; b < got.size() / bb; ++b) {
      CAPTURE(b);
      REQUIRE(std::memcmp(&got[b * bb], &want[b * bb], bb) == 0);  // bit-exact, as ggml's reference
    }
    // Round trip: within half a step, or one step where Q5_0 clips the largest level
    // (+16 d is not representable), plus the f16 rounding of d and m.
    std::vector<float> back(static_cast<size_t>(n));
    wt::cpu::dequantize(t, got.data(), back.data(), n);
    for (int64_t b = 0; b < n / 32; ++b) {
      float lo = x[32 * b], hi = x[32 * b], amax = 0;
      for (int e = 0; e < 32; ++e) {
        lo = std::min(lo, x[32 * b + e]);
        hi = std::max(hi, x[32 * b + e]);
        amax = std::max(amax, std::fabs(x[32 * b + e]));
      }
      const double d = t == DType::q5_0 ? amax / 16.0 : (hi - lo) / 31.0;
      const double tol = (t == DType::q5_0 ? 1.0 : 0.5) * d + 32 * d / 1024 + std::fabs(lo) / 1024 + 1e-6 * amax;
      for (int e = 0; e < 32; ++e) {
        CAPTURE(b);
        CAPTURE(e);
        REQUIRE(std::fabs(back[32 * b + e] - x[32 * b + e]) <= tol);
      }
    }
  }
}

// matmul_f32 (f32 activations; the float reference path of the model and of the parity
// suite): weight tiles dequantized, then each path's f32 kernel. Only f32 rounding remains.
TEST_CASE("matmul: f32 activations for every weight type on every path") {
  IsaGuard guard;
  uint32_t seed = 9000;
  for (DType t : kAllTypes) {
    const bool kq = t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
    for (int64_t k : kq ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{96, 576}) {
      for (int64_t n_rows : {1, 5}) {
        const Problem p = make_problem(t, k, 21, n_rows, ++seed);
        for (const char* isa : isas()) {
          const std::string tname = wt::dtype_name(t), isa_name = isa;
          CAPTURE(tname);
          CAPTURE(k);
          CAPTURE(n_rows);
          CAPTURE(isa_name);
          REQUIRE(wt::cpu::set_matmul_isa_for_testing(isa));
          const std::vector<float> y1 = run(p, 1, 0, -1, true);
          check_against_reference(p, y1, true);
          CHECK(run(p, 3, 0, -1, true) == y1);
        }
      }
    }
  }
}

// embed: rows of a table of every weight type, dequantized exactly as the reference does.
TEST_CASE("matmul: embed reads every weight type") {
  uint32_t seed = 9500;
  const std::vector<int32_t> ids = {5, 0, 12, 5, 7, 3, 1};
  for (DType t : kAllTypes) {
    const bool kq = t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
    const int64_t d = kq ? 512 : 96, vocab = 13, n = static_cast<int64_t>(ids.size());
    const Problem p = make_problem(t, d, vocab, 1, ++seed);
    Tensor table = wt::make_tensor_2d(const_cast<uint8_t*>(p.w.data()), t, d, vocab);
    for (int nth : {1, 2, 3}) {
      const std::string tname = wt::dtype_name(t);
      CAPTURE(tname);
      CAPTURE(nth);
      std::vector<float> out(static_cast<size_t>(d * n), -1.0f);
      Tensor dst = wt::make_tensor_2d(out.data(), DType::f32, d, n);
      run_workers(nth, [&](const ThreadCtx& tc) { wt::cpu::embed(tc, dst, table, ids.data()); });
      for (int64_t r = 0; r < n; ++r) {
        CAPTURE(r);
        CHECK(std::memcmp(&out[static_cast<size_t>(r * d)], &p.wf[static_cast<size_t>(ids[r] * d)],
                          static_cast<size_t>(d) * 4) == 0);
      }
    }
  }
}
