// The CPU kernels other than matmul, each against a naive double-precision version of its
// definition (ops.def), run on 1-3 workers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "support/random_tensor.h"
#include "support/run_workers.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/ops_cpu.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/sampling_weights.h"

namespace {

using wt::test::run_workers;

using wt::Tensor;
using wt::cpu::ThreadCtx;

using wt::test::random_vec;
using wt::test::t3;

// Naive causal GQA attention in double; window > 0: each row's last `window` keys only.
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, int64_t hd, int64_t n_head, int64_t n_head_kv,
                                    int64_t n, int64_t pos0, double scale, int64_t window = 0) {
  std::vector<double> out(static_cast<size_t>(hd * n_head * n), 0.0);
  const int64_t group = n_head / n_head_kv;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t g = h / group;
      const float* qv = &q[static_cast<size_t>((i * n_head + h) * hd)];
      const int64_t lo = window > 0 ? std::max<int64_t>(0, pos0 + i - window + 1) : 0;
      std::vector<double> s(static_cast<size_t>(pos0 + i + 1), 0.0);
      double m = -1e300;
      for (int64_t j = lo; j <= pos0 + i; ++j) {
        const float* kv = &k[static_cast<size_t>((j * n_head_kv + g) * hd)];
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(qv[d]) * kv[d];
        s[static_cast<size_t>(j)] = dot * scale;
        m = std::max(m, dot * scale);
      }
      double sum = 0;
      for (int64_t j = lo; j <= pos0 + i; ++j) sum += (s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - m));
      for (int64_t j = lo; j <= pos0 + i; ++j) {
        const float* vv = &v[static_cast<size_t>((j * n_head_kv + g) * hd)];
        for (int64_t d = 0; d < hd; ++d)
          out[static_cast<size_t>((i * n_head + h) * hd + d)] += s[static_cast<size_t>(j)] / sum * vv[d];
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("ops: fast_exp is accurate over the range attention and silu use") {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.01f) {
    const double rel = std::fabs(wt::cpu::fast_exp(x) - std::exp(static_cast<double>(x))) / std::exp(static_cast<double>(x));
    worst = std::max(worst, rel);
  }
  MESSAGE("fast_exp max relative error " << worst);
  CHECK(worst < 1e-6);
  CHECK(wt::cpu::fast_exp(-1000.0f) >= 0.0f);
  CHECK(std::isfinite(wt::cpu::fast_exp(1000.0f)));
}

namespace {
// Tests run attention on each ISA build of the CPU kernel in turn; the guard restores the
// run-time choice.
struct AttnIsaGuard {
  ~AttnIsaGuard() { wt::cpu::set_attention_isa_for_testing(nullptr); }
};
const char* const kIsas[] = {"avx512", "avx2", "base"};
}  // namespace

namespace {
struct AttnShape {
  int64_t hd, n_head, n_head_kv, n, pos0;
  int64_t window = 0;  // > 0: a sliding window
};

// The worst |out - naive| of the CPU attention (the ISA chosen) on random q, k, v from seeds
// seed, seed + 1, seed + 2: decode for one row, else prefill.
double attention_error(const AttnShape& s, int workers, uint32_t seed) {
  const int64_t n_kv = s.pos0 + s.n;
  auto q = random_vec(static_cast<size_t>(s.hd * s.n_head * s.n), seed);
  auto k = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * n_kv), seed + 1);
  auto v = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * n_kv), seed + 2);
  std::vector<float> out(q.size(), -7.0f);
  std::vector<char> ws(wt::cpu::attention_workspace_bytes(s.hd, s.n_head, s.n_head_kv, workers) + 64);
  void* wsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 63) & ~uintptr_t(63));
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
  Tensor tq = t3(q, s.hd, s.n_head, s.n), tk = t3(k, s.hd, s.n_head_kv, n_kv);
  Tensor tv = t3(v, s.hd, s.n_head_kv, n_kv), to = t3(out, s.hd, s.n_head, s.n);
  const auto pos0 = static_cast<int32_t>(s.pos0), w = static_cast<int32_t>(s.window);
  run_workers(workers, [&](const ThreadCtx& tc) {
    if (s.n == 1) {
      wt::cpu::attention_decode(tc, to, tq, tk, tv, pos0, scale, wsp, nullptr, 0, w);
    } else {
      wt::cpu::attention_prefill(tc, to, tq, tk, tv, pos0, scale, wsp, nullptr, w);
    }
  });
  const auto ref = naive_attention(q, k, v, s.hd, s.n_head, s.n_head_kv, s.n, s.pos0, scale, s.window);
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(out[i] - ref[i]));
  return worst;
}
}  // namespace

TEST_CASE("ops: attention_prefill and attention_decode match naive attention") {
  AttnIsaGuard guard;
  const AttnShape shapes[] = {{64, 9, 3, 1, 0}, {64, 9, 3, 37, 0}, {64, 9, 3, 130, 0}, {64, 4, 2, 20, 70},
                              {32, 8, 1, 65, 0}, {128, 2, 2, 3, 200}, {64, 9, 3, 1, 300},
                              // decode over long caches: every KV head of a key block at once
                              // (heads_fit), Qwen2.5-0.5B's 14/2 heads, and 16 KV heads of 128
                              // dims, which take the one-head-at-a-time path
                              {64, 9, 3, 1, 4000}, {64, 14, 2, 1, 2500}, {128, 32, 16, 1, 700},
                              // head sizes that are not multiples of 32 and 16 (dot products'
                              // tails); 5 query heads per KV head (row batches of 4 and 1)
                              {48, 10, 2, 1, 300}, {40, 10, 2, 1, 300}, {40, 4, 2, 9, 30}};
  double worst_all = 0;
  for (const char* isa : kIsas) {
    if (!wt::cpu::set_attention_isa_for_testing(isa)) {
      MESSAGE("attention: " << isa << " not on this CPU, not tested");
      continue;
    }
    for (const AttnShape& s : shapes) {
      for (int workers : {1, 2, 3}) {
        const double worst = attention_error(s, workers, 1);
        INFO(std::string(isa) << " hd " << s.hd << " heads " << s.n_head << "/" << s.n_head_kv << " n " << s.n
                              << " pos0 " << s.pos0 << " workers " << workers);
        CHECK(worst < 2e-5);
        worst_all = std::max(worst_all, worst);
      }
    }
  }
  MESSAGE("attention against naive double attention: worst abs error " << worst_all);
}

TEST_CASE("ops: attention with a sliding window matches naive windowed attention") {
  AttnIsaGuard guard;
  // Gemma 3's heads (256 wide, 4 over 1 KV head), windows shorter and longer than a 64-key
  // block and than the tile's positions, prompts continuing a cache (pos0 > 0), decode
  // inside and past the window, and a window longer than everything (no effect).
  const AttnShape shapes[] = {{256, 4, 1, 40, 0, 8},   {64, 9, 3, 130, 0, 70},  {64, 4, 2, 37, 90, 16},
                              {128, 8, 1, 20, 300, 64}, {256, 4, 1, 1, 5, 8},   {64, 9, 3, 1, 300, 70},
                              {64, 4, 2, 1, 2000, 512}, {64, 4, 2, 25, 0, 1000}, {40, 4, 2, 9, 30, 3}};
  double worst_all = 0;
  for (const char* isa : kIsas) {
    if (!wt::cpu::set_attention_isa_for_testing(isa)) continue;
    for (const AttnShape& s : shapes) {
      for (int workers : {1, 3}) {
        const double worst = attention_error(s, workers, 4);
        INFO(std::string(isa) << " hd " << s.hd << " heads " << s.n_head << "/" << s.n_head_kv << " n " << s.n
                              << " pos0 " << s.pos0 << " window " << s.window << " workers " << workers);
        CHECK(worst < 2e-5);
        worst_all = std::max(worst_all, worst);
      }
    }
  }
  MESSAGE("windowed attention against naive double attention: worst abs error " << worst_all);
}

TEST_CASE("ops: gelu (tanh form) times up, and a scaled embedding") {
  const int64_t f = 37;  // the 4-lane body and a tail
  auto g = random_vec(static_cast<size_t>(f * 3), 7);
  auto u = random_vec(static_cast<size_t>(f * 3), 8);
  for (size_t i = 0; i < g.size(); ++i) g[i] *= 6.0f;  // out to where tanh saturates
  std::vector<float> y(g.size());
  Tensor tg = wt::make_tensor_2d(g.data(), wt::DType::f32, f, 3), tu = wt::make_tensor_2d(u.data(), wt::DType::f32, f, 3);
  Tensor ty = wt::make_tensor_2d(y.data(), wt::DType::f32, f, 3);
  run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::swiglu(tc, ty, tg, tu, /*gelu=*/true); });
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i];
    const double gelu = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    worst = std::max(worst, std::fabs(y[i] - gelu * u[i]) / (1.0 + std::fabs(gelu * u[i])));
  }
  MESSAGE("gelu * up against tanh's formula in double: worst relative error " << worst);
  CHECK(worst < 1e-6);

  std::vector<float> table(4 * 8), row(8);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.25f * static_cast<float>(i);
  const int32_t id = 2;
  Tensor tt = wt::make_tensor_2d(table.data(), wt::DType::f32, 8, 4), tr = wt::make_tensor_2d(row.data(), wt::DType::f32, 8, 1);
  run_workers(1, [&](const ThreadCtx& tc) { wt::cpu::embed(tc, tr, tt, &id, 3.0f); });
  for (int i = 0; i < 8; ++i) CHECK(row[static_cast<size_t>(i)] == 3.0f * table[static_cast<size_t>(16 + i)]);
}

TEST_CASE("ops: rope rotates pairs by position (norm and neox) and a second tensor as if alone") {
  const int64_t hd = 64, heads = 3, n = 5;
  for (bool neox : {false, true}) {
    auto x = random_vec(static_cast<size_t>(hd * heads * n), 4);
    const auto orig = x;
    std::vector<int32_t> pos = {0, 1, 7, 100, 4095};
    float divisors[32] = {1, 1, 2, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 8};
    wt::RopeOp op{.n_rot = static_cast<int32_t>(hd), .neox = neox, .theta_base = 10000.0f, .position_scale = 0.5f};
    op.freq_divisors = wt::make_tensor_2d(divisors, wt::DType::f32, 32, 1);
    double freqs[32];
    wt::rope_freqs(op, freqs);
    const wt::cpu::RopeParams p{.n_rot = op.n_rot, .neox = neox, .op = &op, .freqs = freqs};
    Tensor tx = t3(x, hd, heads, n);
    run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::rope(tc, tx, wt::Tensor{}, pos.data(), p); });
    double worst = 0;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < hd / 2; ++i) {
          const double theta = pos[static_cast<size_t>(r)] * 0.5 * std::pow(10000.0, -2.0 * i / hd) / divisors[i];
          const int64_t a = neox ? i : 2 * i, b = neox ? i + hd / 2 : 2 * i + 1;
          const size_t base = static_cast<size_t>((r * heads + h) * hd);
          const double x0 = orig[base + a], x1 = orig[base + b];
          worst = std::max(worst, std::fabs(x[base + a] - (x0 * std::cos(theta) - x1 * std::sin(theta))));
          worst = std::max(worst, std::fabs(x[base + b] - (x0 * std::sin(theta) + x1 * std::cos(theta))));
        }
      }
    }
    CHECK(worst < 1e-5);
    // With a second tensor (a layer's keys, 2 heads): each is rotated as alone, bit for bit.
    auto y = orig, y2 = random_vec(static_cast<size_t>(hd * 2 * n), 5);
    auto y2_alone = y2;
    Tensor ty = t3(y, hd, heads, n), ty2 = t3(y2, hd, 2, n), ty2_alone = t3(y2_alone, hd, 2, n);
    run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::rope(tc, ty, ty2, pos.data(), p); });
    run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::rope(tc, ty2_alone, wt::Tensor{}, pos.data(), p); });
    CHECK(y == x);
    CHECK(y2 == y2_alone);
    // Angles given (RopeOp::angles, as the engine makes them once per decode step): the
    // same bits as the angles the kernel makes itself.
    std::vector<float> angles(static_cast<size_t>(hd * n));
    for (int64_t r = 0; r < n; ++r) wt::rope_angles(op, freqs, pos[static_cast<size_t>(r)], &angles[static_cast<size_t>(r * hd)]);
    wt::cpu::RopeParams pt = p;
    pt.angles = angles.data();
    pt.angles_stride = hd;
    auto z = orig;
    Tensor tz = t3(z, hd, heads, n);
    run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::rope(tc, tz, wt::Tensor{}, pos.data(), pt); });
    CHECK(z == x);
  }
}

TEST_CASE("ops: rope's mscale scales the rotated dims of a head and leaves the others as they are") {
  // Phi-4-mini's shape: rope over 96 of 128 dims, LongRoPE's factor on cos and sin.
  const int64_t hd = 128, heads = 2, n = 3;
  const int32_t n_rot = 96;
  const auto orig = random_vec(static_cast<size_t>(hd * heads * n), 7);
  std::vector<int32_t> pos = {0, 5, 4000};
  for (bool neox : {false, true}) {
    std::vector<float> out[2] = {orig, orig};
    for (int k = 0; k < 2; ++k) {
      wt::RopeOp op{.n_rot = n_rot, .neox = neox, .theta_base = 10000.0f, .mscale = k == 0 ? 1.0f : 1.25f};
      double freqs[64];
      wt::rope_freqs(op, freqs);
      const wt::cpu::RopeParams p{.n_rot = op.n_rot, .neox = neox, .op = &op, .freqs = freqs};
      Tensor tx = t3(out[k], hd, heads, n);
      run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::rope(tc, tx, wt::Tensor{}, pos.data(), p); });
    }
    for (int64_t r = 0; r < n; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t d = 0; d < hd; ++d) {
          const size_t at = static_cast<size_t>((r * heads + h) * hd + d);
          if (d < n_rot) {
            CHECK(out[1][at] == doctest::Approx(1.25 * out[0][at]).epsilon(1e-5));
          } else {
            CHECK(out[1][at] == orig[at]);  // past n_rot: untouched, with or without the factor
            CHECK(out[0][at] == orig[at]);
          }
        }
  }
}

TEST_CASE("ops: rmsnorm, swiglu, add, copy_rows, argmax follow their definitions") {
  const int64_t d = 576, n = 7;
  auto x = random_vec(static_cast<size_t>(d * n), 5, 3.0f);
  auto w = random_vec(static_cast<size_t>(d), 6);
  std::vector<float> y(x.size());
  const Tensor tx = wt::make_tensor_2d(x.data(), wt::DType::f32, d, n);
  const Tensor ty = wt::make_tensor_2d(y.data(), wt::DType::f32, d, n);
  const Tensor tw = wt::make_tensor_2d(w.data(), wt::DType::f32, d, 1);
  run_workers(3, [&](const ThreadCtx& tc) { wt::cpu::rmsnorm(tc, ty, tx, tw, 1e-5f, Tensor{}); });
  for (int64_t r = 0; r < n; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[r * d + i]) * x[r * d + i];
    const double s = 1.0 / std::sqrt(ss / d + 1e-5);
    for (int64_t i = 0; i < d; ++i) CHECK(y[r * d + i] == doctest::Approx(x[r * d + i] * s * w[i]).epsilon(1e-5));
  }
  {
    // With a residual aliasing dst (the engine's use): x becomes x + res, dst the norm of it.
    std::vector<float> xs = x, res = random_vec(static_cast<size_t>(d * n), 9, 2.0f);
    const std::vector<float> res0 = res;
    const Tensor txs = wt::make_tensor_2d(xs.data(), wt::DType::f32, d, n);
    const Tensor tres = wt::make_tensor_2d(res.data(), wt::DType::f32, d, n);
    run_workers(3, [&](const ThreadCtx& tc) { wt::cpu::rmsnorm(tc, tres, txs, tw, 1e-5f, tres); });
    for (int64_t r = 0; r < n; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < d; ++i) {
        const size_t e = static_cast<size_t>(r * d + i);
        CHECK(xs[e] == x[e] + res0[e]);
        ss += static_cast<double>(xs[e]) * xs[e];
      }
      const double s = 1.0 / std::sqrt(ss / d + 1e-5);
      for (int64_t i = 0; i < d; ++i) {
        const size_t e = static_cast<size_t>(r * d + i);
        CHECK(res[e] == doctest::Approx((x[e] + res0[e]) * s * w[i]).epsilon(1e-5));
      }
    }
  }

  auto g = random_vec(static_cast<size_t>(d * n), 7, 4.0f);
  auto u = random_vec(static_cast<size_t>(d * n), 8);
  const Tensor tg = wt::make_tensor_2d(g.data(), wt::DType::f32, d, n);
  const Tensor tu = wt::make_tensor_2d(u.data(), wt::DType::f32, d, n);
  run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::swiglu(tc, ty, tg, tu); });
  for (size_t i = 0; i < y.size(); ++i) {
    const double silu = g[i] / (1.0 + std::exp(-static_cast<double>(g[i])));
    CHECK(y[i] == doctest::Approx(silu * u[i]).epsilon(1e-5));
  }
  // 16 lanes at a time, the scalar silu's bits, also where exp saturates (|g| near 88).
  for (size_t i = 0; i < 40; ++i) g[i] = (i % 2 ? 1.0f : -1.0f) * (80.0f + static_cast<float>(i) * 0.5f);
  run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::swiglu(tc, ty, tg, tu); });
  size_t differ = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const float want = wt::cpu::silu(g[i]) * u[i];
    differ += std::memcmp(&want, &y[i], sizeof want) != 0;
  }
  CHECK(differ == 0);

  run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::add(tc, ty, tx, tw); });  // broadcast row
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < d; ++i) CHECK(y[r * d + i] == x[r * d + i] + w[i]);

  std::vector<float> dst(static_cast<size_t>(d * (n + 3)), 0.0f);
  const Tensor td = wt::make_tensor_2d(dst.data(), wt::DType::f32, d, n + 3);
  run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::copy_rows(tc, td, tx, 2); });
  CHECK(dst[static_cast<size_t>(d)] == 0.0f);
  CHECK(dst[static_cast<size_t>(2 * d + 5)] == x[5]);
  CHECK(dst[static_cast<size_t>((n + 1) * d + 1)] == x[static_cast<size_t>((n - 1) * d + 1)]);

  // An f16 destination holds each value rounded to nearest even, the rows around untouched.
  std::vector<uint16_t> dst16(static_cast<size_t>(d * (n + 3)), 0x7777);
  const Tensor td16 = wt::make_tensor_2d(dst16.data(), wt::DType::f16, d, n + 3);
  run_workers(2, [&](const ThreadCtx& tc) { wt::cpu::copy_rows(tc, td16, tx, 2); });
  CHECK(dst16[static_cast<size_t>(d)] == 0x7777);
  CHECK(dst16[static_cast<size_t>(2 * d + 5)] == wt::cpu::f32_to_f16(x[5]));
  CHECK(dst16[static_cast<size_t>((n + 2) * d)] == 0x7777);

  std::vector<float> row = {1, 5, -2, 5, 3};
  CHECK(wt::cpu::argmax(wt::make_tensor_2d(row.data(), wt::DType::f32, 5, 1)) == 1);
}

namespace {

// A KV cache of type t (f16 or q8_0) holding v, and the values it holds as f32: rounded by
// the converters the weight tests check against the gguf package (f32_to_f16 to nearest
// even, quantize_q8_0 as ggml) and read back by dequantize, not by the kernels' own code.
struct KvCopy {
  wt::DType type;
  std::vector<uint8_t> bytes;
  std::vector<float> rounded;
  KvCopy(wt::DType t, const std::vector<float>& v) : type(t), rounded(v.size()) {
    const int64_t n = static_cast<int64_t>(v.size());
    size_t row = 0;
    REQUIRE(wt::dtype_row_bytes(t, n, &row));
    bytes.resize(row);
    if (t == wt::DType::q8_0) {
      wt::cpu::quantize_q8_0(v.data(), bytes.data(), n);
    } else {
      for (size_t i = 0; i < v.size(); ++i) {
        const uint16_t h = wt::cpu::f32_to_f16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
    }
    wt::cpu::dequantize(t, bytes.data(), rounded.data(), n);
  }
  Tensor t3(int64_t a, int64_t b, int64_t c) {
    const int64_t ne[3] = {a, b, c};
    return wt::make_tensor(bytes.data(), type, 3, ne);
  }
};

constexpr wt::DType kNarrowKv[] = {wt::DType::f16, wt::DType::q8_0};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

}  // namespace

// The base build converts f16 without F16C (x86: integer steps on 4 lanes; aarch64: fcvtl).
// Every half, against the scalar f16_to_f32: the same bits, NaN payloads included on x86
// (fcvtl quiets a signalling NaN: there NaN must stay NaN). Lengths 4k + 1..3 take the
// scalar tail too.
TEST_CASE("ops: the base attention build's f16 conversion gives f16_to_f32's bits for all 65536 halves") {
  std::vector<uint16_t> h(65536 + 3);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> got(h.size());
  wt::cpu::attention_base_f16_to_f32_for_testing(h.data(), got.data(), static_cast<int64_t>(h.size()));
  int wrong = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    const float want = wt::cpu::f16_to_f32(h[i]);
    uint32_t a, b;
    std::memcpy(&a, &want, 4);
    std::memcpy(&b, &got[i], 4);
#if defined(__aarch64__)
    const bool ok = std::isnan(want) ? std::isnan(got[i]) : a == b;
#else
    const bool ok = a == b;
#endif
    if (!ok && ++wrong <= 5) MESSAGE("half 0x" << std::hex << h[i] << ": " << b << " for " << a);
  }
  CHECK(wrong == 0);
}

// An f16 or q8_0 KV cache (wt_context_params.kv_type) is read as f32 (prefill converts a key
// block at a time, decode converts in registers) and runs the f32 kernel's arithmetic: the
// output must be the f32 kernel's over the cache's values, bit for bit, on every ISA build
// this CPU has; and, against the naive double reference over those values, as close as the
// f32 kernel is.
TEST_CASE("ops: attention over an f16 or q8_0 KV cache is the f32 kernel over the cache's values bit for bit") {
  struct Shape {
    int64_t hd, n_head, n_head_kv, n, pos0;
  };
  const Shape shapes[] = {{64, 9, 3, 1, 0},  {64, 9, 3, 37, 0}, {64, 9, 3, 1, 300}, {64, 4, 2, 20, 70},
                          {48, 8, 1, 65, 0}, {48, 8, 2, 1, 150}, {128, 14, 2, 1, 90}, {40, 10, 2, 1, 120},
                          {96, 6, 2, 1, 100}};  // q8_0 rows of 3 blocks: the value pass's 16-lane path
  AttnIsaGuard guard;
  for (const Shape& s : shapes) {
    for (wt::DType type : kNarrowKv) {
      if (type == wt::DType::q8_0 && s.hd % 32 != 0) continue;  // q8_0 needs whole blocks
      for (int workers : {1, 3}) {
        for (bool sparse : {false, true}) {
          if (sparse && s.n != 1) continue;
          const int64_t n_kv = s.pos0 + s.n;
          auto q = random_vec(static_cast<size_t>(s.hd * s.n_head * s.n), 11);
          auto k = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * n_kv), 12);
          auto v = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * n_kv), 13);
          KvCopy kh(type, k), vh(type, v);
          // SlimInfer-style key rows: every third row, ascending.
          std::vector<int32_t> ids;
          for (int64_t j = 0; j < n_kv; j += 3) ids.push_back(static_cast<int32_t>(j));
          std::vector<float> out_cache(q.size(), -7.0f), out_f32(q.size(), -9.0f);
          std::vector<char> ws(wt::cpu::attention_workspace_bytes(s.hd, s.n_head, s.n_head_kv, workers) + 64);
          void* wsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 63) & ~uintptr_t(63));
          const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
          Tensor tq = t3(q, s.hd, s.n_head, s.n);
          Tensor tk32 = t3(kh.rounded, s.hd, s.n_head_kv, n_kv), tv32 = t3(vh.rounded, s.hd, s.n_head_kv, n_kv);
          Tensor tkc = kh.t3(s.hd, s.n_head_kv, n_kv), tvc = vh.t3(s.hd, s.n_head_kv, n_kv);
          auto run = [&](const Tensor& tk, const Tensor& tv, std::vector<float>& out) {
            Tensor to = t3(out, s.hd, s.n_head, s.n);
            run_workers(workers, [&](const ThreadCtx& tc) {
              if (s.n == 1) {
                wt::cpu::attention_decode(tc, to, tq, tk, tv, static_cast<int32_t>(s.pos0), scale, wsp,
                                          sparse ? ids.data() : nullptr, sparse ? static_cast<int32_t>(ids.size()) : 0);
              } else {
                wt::cpu::attention_prefill(tc, to, tq, tk, tv, static_cast<int32_t>(s.pos0), scale, wsp);
              }
            });
          };
          for (const char* isa : kIsas) {
            if (!wt::cpu::set_attention_isa_for_testing(isa)) continue;  // the naive test says which
            run(tkc, tvc, out_cache);
            run(tk32, tv32, out_f32);
            INFO(std::string(isa) << " " << std::string(wt::dtype_name(type)) << " hd " << s.hd << " heads "
                                  << s.n_head << "/" << s.n_head_kv << " n " << s.n << " pos0 " << s.pos0 << " workers "
                                  << workers << std::string(sparse ? " sparse" : ""));
            CHECK(same_bits(out_cache, out_f32));
            if (!sparse) {
              const auto ref =
                  naive_attention(q, kh.rounded, vh.rounded, s.hd, s.n_head, s.n_head_kv, s.n, s.pos0, scale);
              double worst = 0;
              for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(out_cache[i] - ref[i]));
              CHECK(worst < 2e-5);
            }
          }
        }
      }
    }
  }
}

// A pool on a busy machine runs a launch on fewer workers than it has (ThreadCtx::n_max,
// backends/cpu/core_share.h). Decode attention cuts its keys into chunks by the worker count
// and merges them in order, and so does a decode step's one-row scores: both must cut for
// n_max, so a step's bits do not depend on how many workers ran it.
TEST_CASE("ops: decode attention and one-row scores give the same bits on fewer workers than the pool has") {
  const int64_t hd = 64, n_head = 9, n_head_kv = 3, pos0 = 700, n_kv = pos0 + 1;
  auto q = random_vec(static_cast<size_t>(hd * n_head), 31);
  auto k = random_vec(static_cast<size_t>(hd * n_head_kv * n_kv), 32);
  auto v = random_vec(static_cast<size_t>(hd * n_head_kv * n_kv), 33);
  std::vector<int32_t> ids;
  for (int64_t j = 0; j < n_kv; j += 3) ids.push_back(static_cast<int32_t>(j));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  Tensor tq = t3(q, hd, n_head, 1), tk = t3(k, hd, n_head_kv, n_kv), tv = t3(v, hd, n_head_kv, n_kv);
  const int n_max = 4;
  const size_t bytes = std::max(wt::cpu::attention_workspace_bytes(hd, n_head, n_head_kv, n_max),
                                wt::cpu::window_scores_workspace_bytes(hd, n_head, 1, n_max));
  std::vector<char> ws(bytes + 64);
  void* wsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 63) & ~uintptr_t(63));
  // Decode attention (all keys, then SlimInfer-style rows) and the one-row scores of q.
  auto run = [&](int workers) {
    std::vector<float> out(q.size() * 2 + static_cast<size_t>(n_head * n_kv), -7.0f);
    Tensor dense = t3(out, hd, n_head, 1);
    Tensor sparse = wt::make_tensor_2d(out.data() + q.size(), wt::DType::f32, hd, n_head);
    Tensor scores = wt::make_tensor_2d(out.data() + 2 * q.size(), wt::DType::f32, n_kv, n_head);
    const wt::cpu::WindowScoresParams p{1, true, true, static_cast<int32_t>(n_kv), scale};
    run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::attention_decode(tc, dense, tq, tk, tv, pos0, scale, wsp); },
                n_max);
    run_workers(workers, [&](const ThreadCtx& tc) {
      wt::cpu::attention_decode(tc, sparse, tq, tk, tv, pos0, scale, wsp, ids.data(), static_cast<int32_t>(ids.size()));
    }, n_max);
    run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::window_scores(tc, scores, tq, tk, p, wsp); }, n_max);
    return out;
  };
  AttnIsaGuard guard;
  for (const char* isa : kIsas) {
    if (!wt::cpu::set_attention_isa_for_testing(isa)) continue;
    CAPTURE(std::string(isa));
    const std::vector<float> all = run(n_max);
    for (int workers : {1, 2, 3}) {
      CAPTURE(workers);
      CHECK(same_bits(run(workers), all));
    }
  }
}

TEST_CASE("ops: gather_rows and copy_rows round f32 rows into an f16 or q8_0 cache and block and window scores read one") {
  const int64_t hd = 64, n_head = 6, n_head_kv = 2, n = 40;
  auto src = random_vec(static_cast<size_t>(hd * n_head_kv * n), 21);
  const std::vector<int32_t> ids = {3, 0, 39, 17, 17};  // shared by the heads
  const int64_t width = hd * n_head_kv;
  for (wt::DType type : kNarrowKv) {
    CAPTURE(wt::dtype_name(type));
    // The gathered rows, as the independent converters store them.
    std::vector<float> picked;
    for (int32_t id : ids) picked.insert(picked.end(), src.begin() + id * width, src.begin() + (id + 1) * width);
    const KvCopy want(type, picked);
    std::vector<uint8_t> dst(want.bytes.size(), 0xFF);
    const int64_t dne[3] = {hd, n_head_kv, static_cast<int64_t>(ids.size())};
    const Tensor tdst = wt::make_tensor(dst.data(), type, 3, dne);
    run_workers(2, [&](const ThreadCtx& tc) {
      wt::cpu::gather_rows(tc, tdst, t3(src, hd, n_head_kv, n), ids.data(), static_cast<int32_t>(ids.size()), false);
    });
    CHECK(dst == want.bytes);
    // copy_rows stores the same bytes, rows 1.. of a larger cache, the row before untouched.
    size_t row_bytes = 0;
    REQUIRE(wt::dtype_row_bytes(type, width, &row_bytes));
    std::vector<uint8_t> cache(row_bytes * (ids.size() + 2), 0x5A);
    run_workers(2, [&](const ThreadCtx& tc) {
      wt::cpu::copy_rows(tc, wt::make_tensor_2d(cache.data(), type, width, static_cast<int64_t>(ids.size()) + 2),
                         wt::make_tensor_2d(picked.data(), wt::DType::f32, width, static_cast<int64_t>(ids.size())), 1);
    });
    CHECK(std::all_of(cache.begin(), cache.begin() + static_cast<long>(row_bytes), [](uint8_t b) { return b == 0x5A; }));
    CHECK(std::equal(want.bytes.begin(), want.bytes.end(), cache.begin() + static_cast<long>(row_bytes)));
    CHECK(cache.back() == 0x5A);

    // Scores over the cache: the f32 kernels' over the cache's values, bit for bit.
    auto q = random_vec(static_cast<size_t>(hd * n_head * 8), 22);
    KvCopy kh(type, src);
    Tensor tq = t3(q, hd, n_head, 8);
    std::vector<float> bc(8, -1.0f), b32(8, -1.0f);  // 5 blocks of 40 keys; the rest stays as it was
    std::vector<char> bws(wt::cpu::block_scores_workspace_bytes(hd, n_head, 2) + 64);
    const wt::cpu::BlockScoresParams bp{8, 4, 2, nullptr, 0};
    run_workers(2, [&](const ThreadCtx& tc) {
      wt::cpu::block_scores(tc, wt::test::t3(bc, 8, 1, 1), tq, kh.t3(hd, n_head_kv, n), bp, bws.data());
    });
    run_workers(2, [&](const ThreadCtx& tc) {
      wt::cpu::block_scores(tc, wt::test::t3(b32, 8, 1, 1), tq, t3(kh.rounded, hd, n_head_kv, n), bp, bws.data());
    });
    CHECK(same_bits(bc, b32));
    std::vector<float> wc(static_cast<size_t>(n * n_head), -1.0f), w32(wc.size(), -1.0f);
    std::vector<char> wws(wt::cpu::window_scores_workspace_bytes(hd, n_head, 4, 2) + 64);
    const wt::cpu::WindowScoresParams wp{4, true, false, 0, 0.125f};
    std::vector<float> q40 = random_vec(static_cast<size_t>(hd * n_head * n), 23);
    run_workers(2, [&](const ThreadCtx& tc) {
      wt::cpu::window_scores(tc, t3(wc, n, n_head, 1), t3(q40, hd, n_head, n), kh.t3(hd, n_head_kv, n), wp, wws.data());
    });
    run_workers(2, [&](const ThreadCtx& tc) {
      wt::cpu::window_scores(tc, t3(w32, n, n_head, 1), t3(q40, hd, n_head, n), t3(kh.rounded, hd, n_head_kv, n), wp,
                             wws.data());
    });
    CHECK(same_bits(wc, w32));
  }
}

// The sampler's weights (kernels/cpu/sampling_weights.h): the same bits in every path this
// CPU runs (16 lanes on AVX-512, 4 lanes, the scalar tail: the whole row against 4-value
// calls and 1-value calls), so a seed draws the same tokens on any CPU; 0 for NaN, -inf,
// exponents below -87 and weights under min_p; within 2e-7 of exp where kept. (The
// expected bits come from the kernel's own paths: this file's fast_exp could be fused
// under -march=native, which the kernel's files are built without.)
TEST_CASE("ops: sampling_weights give the same bits in every path and 0 for NaN -inf and under min_p") {
  const int64_t n = 16 * 40 + 7;  // 16k + 7: every path
  std::vector<float> row = random_vec(static_cast<size_t>(n), 31);
  for (float& x : row) x *= 8.0f;  // exponents down to about -50 at inv_t 1, -200 at inv_t 4
  row[3] = std::numeric_limits<float>::quiet_NaN();
  row[17] = -std::numeric_limits<float>::infinity();
  row[n - 1] = std::numeric_limits<float>::quiet_NaN();  // the scalar tail
  row[n - 2] = -1e30f;
  const float max_logit = *std::max_element(row.begin() + 18, row.end() - 2);
  for (const float inv_t : {1.0f, 1.0f / 0.7f, 4.0f}) {
    for (const float min_p : {0.0f, 0.01f}) {
      CAPTURE(inv_t);
      CAPTURE(min_p);
      std::vector<float> w(static_cast<size_t>(n), -1.0f), w4(w), w1(w);
      wt::cpu::sampling_weights(row.data(), n, max_logit, inv_t, min_p, w.data());
      for (int64_t i = 0; i + 4 <= n; i += 4) wt::cpu::sampling_weights(&row[i], 4, max_logit, inv_t, min_p, &w4[i]);
      for (int64_t i = n / 4 * 4; i < n; ++i) w4[i] = w[i];  // 4-value calls cover all but the last 3
      for (int64_t i = 0; i < n; ++i) wt::cpu::sampling_weights(&row[i], 1, max_logit, inv_t, min_p, &w1[i]);
      CHECK(same_bits(w, w1));
      CHECK(same_bits(w4, w1));
      int zero = 0, kept = 0;
      for (int64_t i = 0; i < n; ++i) {
        zero += w[i] == 0.0f;
        if (w[i] > 0.0f) {
          ++kept;
          const double x = (static_cast<double>(row[i]) - max_logit) * inv_t;
          CHECK(w[i] == doctest::Approx(std::exp(x)).epsilon(2e-7));
          CHECK(w[i] >= min_p);
          CHECK(x >= -87.0);
        } else {
          CHECK(w[i] == 0.0f);  // never negative, never NaN
        }
      }
      CHECK(w[3] == 0.0f);
      CHECK(w[17] == 0.0f);
      CHECK(w[n - 1] == 0.0f);
      CHECK(w[n - 2] == 0.0f);
      CHECK(kept >= (min_p > 0.0f ? 1 : 100));  // the checks above saw real weights
      CHECK(zero >= 4);
    }
  }
}
