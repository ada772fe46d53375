// The KV-pruning CPU kernels (ops.def: window_scores .. kv_similarity, and the ids options
// of attention_prefill / attention_decode), each against a naive double-precision version
// of its ops.def definition written here, run on 1-3 workers. Quest's key bounds
// (key_bounds, bound_scores) are test_key_bounds.cpp's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/kv_rows.h"
#include "kernels/cpu/ops_cpu.h"
#include "kernels/cpu/quant.h"
#include "support/random_tensor.h"
#include "support/run_workers.h"

namespace {

using wt::Tensor;
using wt::cpu::ThreadCtx;
using wt::test::run_workers;

using wt::test::random_vec;
using wt::test::t3;

using wt::test::at;
using wt::test::Workspace;

// ---- window_scores ----

struct WsShape {
  int64_t hd, n_head, n_head_kv, n, window, n_keys, n_cols, n_visible;  // n_visible 0: n_keys
};

// ref[h][i][j] for window query i, per ops.def; bound[h][i][j] an f32 error bound.
void naive_window_scores(const WsShape& s, const std::vector<float>& q, const std::vector<float>& k, bool softmax,
                         double scale, std::vector<double>* ref, std::vector<double>* bound) {
  const int64_t W = s.window, group = s.n_head / s.n_head_kv;
  const int64_t vis = s.n_visible > 0 ? s.n_visible : s.n_keys;
  ref->assign(static_cast<size_t>(s.n_head * W * s.n_cols), 0.0);
  bound->assign(ref->size(), 0.0);
  for (int64_t h = 0; h < s.n_head; ++h) {
    const int64_t g = h / group;
    for (int64_t i = 0; i < W; ++i) {
      const int64_t qi = s.n - W + i, last = vis - W + i;  // last visible key row
      std::vector<double> z(static_cast<size_t>(s.n_keys)), mag(z.size());
      for (int64_t j = 0; j < s.n_keys; ++j) {
        double dot = 0, m = 0;
        for (int64_t d = 0; d < s.hd; ++d) {
          const double p = static_cast<double>(q[at(d, h, qi, s.hd, s.n_head)]) * k[at(d, g, j, s.hd, s.n_head_kv)];
          dot += p;
          m += std::fabs(p);
        }
        z[static_cast<size_t>(j)] = dot;
        mag[static_cast<size_t>(j)] = m;
      }
      double* out = &(*ref)[static_cast<size_t>((h * W + i) * s.n_cols)];
      double* bnd = &(*bound)[static_cast<size_t>((h * W + i) * s.n_cols)];
      if (!softmax) {
        for (int64_t j = 0; j < s.n_cols; ++j) {
          out[j] = z[static_cast<size_t>(j)];
          bnd[j] = 1e-5 * mag[static_cast<size_t>(j)] + 1e-6;
        }
        continue;
      }
      double m = -1e300;
      for (int64_t j = 0; j <= last && j < s.n_keys; ++j) m = std::max(m, z[static_cast<size_t>(j)] * scale);
      double sum = 0;
      for (int64_t j = 0; j <= last && j < s.n_keys; ++j) sum += std::exp(z[static_cast<size_t>(j)] * scale - m);
      for (int64_t j = 0; j < s.n_cols && j <= last; ++j) {
        out[j] = std::exp(z[static_cast<size_t>(j)] * scale - m) / sum;
        bnd[j] = 2e-5 * out[j] + 1e-9;
      }
    }
  }
}

// Worst error relative to the bound (pass: < 1).
double ws_worst(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& bound,
                const WsShape& s, bool per_query) {
  const int64_t W = s.window;
  double worst = 0;
  for (int64_t h = 0; h < s.n_head; ++h) {
    for (int64_t j = 0; j < s.n_cols; ++j) {
      if (per_query) {
        for (int64_t i = 0; i < W; ++i) {
          const size_t r = static_cast<size_t>((h * W + i) * s.n_cols + j);
          worst = std::max(worst, std::fabs(got[at(j, h, i, s.n_cols, s.n_head)] - ref[r]) / bound[r]);
        }
      } else {
        double sum = 0, b = 0;
        for (int64_t i = 0; i < W; ++i) {
          const size_t r = static_cast<size_t>((h * W + i) * s.n_cols + j);
          sum += ref[r];
          b += bound[r];
        }
        worst = std::max(worst, std::fabs(got[at(j, h, 0, s.n_cols, s.n_head)] - sum) / b);
      }
    }
  }
  return worst;
}

std::vector<float> run_window_scores(const WsShape& s, std::vector<float>& q, std::vector<float>& k, bool softmax,
                                     bool per_query, float scale, int workers, int64_t n_cols) {
  const int64_t n_out = per_query ? s.window : 1;
  std::vector<float> out(static_cast<size_t>(n_cols * s.n_head * n_out), -7.0f);
  Workspace ws(wt::cpu::window_scores_workspace_bytes(s.hd, s.n_head, static_cast<int32_t>(s.window), workers));
  const Tensor tq = t3(q, s.hd, s.n_head, s.n), tk = t3(k, s.hd, s.n_head_kv, s.n_keys);
  const Tensor to = t3(out, n_cols, s.n_head, n_out);
  const wt::cpu::WindowScoresParams p{static_cast<int32_t>(s.window), softmax, per_query,
                                      static_cast<int32_t>(s.n_visible), scale};
  run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::window_scores(tc, to, tq, tk, p, ws.p); });
  return out;
}

// ---- attention (as tests/unit/test_cpu_ops.cpp, with a key list) ----

// Naive GQA attention of query row i (position pos) over keys `keys` (cache rows), in double.
void naive_attend(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int64_t hd,
                  int64_t n_head, int64_t n_head_kv, int64_t i, const std::vector<int64_t>& keys, double scale,
                  std::vector<double>* out) {
  const int64_t group = n_head / n_head_kv;
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t g = h / group;
    std::vector<double> s(keys.size());
    double m = -1e300;
    for (size_t t = 0; t < keys.size(); ++t) {
      double dot = 0;
      for (int64_t d = 0; d < hd; ++d)
        dot += static_cast<double>(q[at(d, h, i, hd, n_head)]) * k[at(d, g, keys[t], hd, n_head_kv)];
      s[t] = dot * scale;
      m = std::max(m, s[t]);
    }
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - m));
    for (int64_t d = 0; d < hd; ++d) {
      double acc = 0;
      for (size_t t = 0; t < keys.size(); ++t) acc += s[t] / sum * v[at(d, g, keys[t], hd, n_head_kv)];
      (*out)[at(d, h, 0, hd, n_head)] = acc;
    }
  }
}

}  // namespace

struct WsIsaGuard {
  ~WsIsaGuard() { wt::cpu::set_window_scores_isa_for_testing(nullptr); }
};

TEST_CASE("prune ops: window_scores matches a naive causal softmax over the window") {
  WsIsaGuard guard;
  for (const char* isa : {"avx512", "avx2", "base"}) {
    if (!wt::cpu::set_window_scores_isa_for_testing(isa)) {
      MESSAGE("window_scores: " << std::string(isa) << " not on this CPU, not tested");
      continue;
    }
    const WsShape shapes[] = {
        {64, 9, 3, 100, 32, 100, 100, 0},   // prefill, all columns scored
        {64, 9, 3, 100, 32, 100, 70, 0},    // n_cols < n_keys: unscored keys still normalize
        {64, 9, 3, 140, 32, 130, 97, 130},  // partial key blocks; more q rows than keys
        {32, 8, 2, 5, 5, 150, 150, 120},    // decode-like: keys past i2 exist but are hidden
        {64, 4, 4, 40, 1, 40, 33, 0},       // W = 1, no GQA
        {64, 14, 2, 1, 1, 1000, 900, 0},    // W = 1 over key chunks (decode_topk: generated rows unscored)
        {64, 9, 3, 1, 1, 777, 777, 700},    // W = 1, partial blocks, keys past the visible ones
        {64, 9, 3, 300, 32, 300, 300, 300},
    };
    for (const WsShape& s : shapes) {
      const uint32_t seed = static_cast<uint32_t>(s.n * 31 + s.n_cols);
      auto q = random_vec(static_cast<size_t>(s.hd * s.n_head * s.n), seed);
      auto k = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * s.n_keys), seed + 1);
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
      const int64_t vis = s.n_visible > 0 ? s.n_visible : s.n_keys;
      for (bool softmax : {true, false}) {
        std::vector<double> ref, bound;
        naive_window_scores(s, q, k, softmax, scale, &ref, &bound);
        for (int workers : {1, 2, 3}) {
          INFO(isa << " seed " << seed << " hd " << s.hd << " heads " << s.n_head << "/" << s.n_head_kv << " n "
                   << s.n << " W " << s.window << " keys " << s.n_keys << " cols " << s.n_cols << " i2 "
                   << s.n_visible << " softmax " << softmax << " workers " << workers);
          const auto per = run_window_scores(s, q, k, softmax, true, scale, workers, s.n_cols);
          const auto sum = run_window_scores(s, q, k, softmax, false, scale, workers, s.n_cols);
          CHECK(ws_worst(per, ref, bound, s, true) < 1.0);
          CHECK(ws_worst(sum, ref, bound, s, false) < 1.0);
          if (!softmax) continue;
          // The mask is causal only inside the window: query i sees rows 0..i2 - W + i.
          bool early_positive = true, late_zero = true;
          for (int64_t h = 0; h < s.n_head; ++h) {
            for (int64_t i = 0; i < s.window; ++i) {
              for (int64_t j = 0; j < s.n_cols; ++j) {
                const float x = per[at(j, h, i, s.n_cols, s.n_head)];
                if (j < vis - s.window) early_positive &= x > 0.0f;
                if (j > vis - s.window + i) late_zero &= x == 0.0f;
              }
            }
          }
          CHECK(early_positive);
          CHECK(late_zero);
          // A column prefix gives the same numbers as a full-width call.
          if (s.n_cols < s.n_keys) {
            const auto full = run_window_scores(s, q, k, softmax, true, scale, workers, s.n_keys);
            bool same = true;
            for (int64_t h = 0; h < s.n_head; ++h)
              for (int64_t i = 0; i < s.window; ++i)
                for (int64_t j = 0; j < s.n_cols; ++j)
                  same &= per[at(j, h, i, s.n_cols, s.n_head)] == full[at(j, h, i, s.n_keys, s.n_head)];
            CHECK(same);
          }
        }
      }
    }
  }
}

TEST_CASE("prune ops: window_scores per-query rows sum to one over the visible keys") {
  const WsShape s{64, 9, 3, 64, 16, 64, 64, 0};
  auto q = random_vec(static_cast<size_t>(s.hd * s.n_head * s.n), 11, 2.0f);
  auto k = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * s.n_keys), 12);
  const auto per = run_window_scores(s, q, k, true, true, 0.125f, 2, s.n_cols);
  double worst = 0;
  for (int64_t h = 0; h < s.n_head; ++h) {
    for (int64_t i = 0; i < s.window; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < s.n_cols; ++j) sum += per[at(j, h, i, s.n_cols, s.n_head)];
      worst = std::max(worst, std::fabs(sum - 1.0));
    }
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("prune ops: pool1d average and max, zero padding counted in the average") {
  for (int64_t n : {1, 3, 6, 1030, 2500}) {
    for (int32_t kernel : {1, 3, 7, 13}) {
      for (bool max : {false, true}) {
        const int64_t heads = 3, planes = 2;
        const uint32_t seed = static_cast<uint32_t>(n * 100 + kernel);
        auto x = random_vec(static_cast<size_t>(n * heads * planes), seed);
        std::vector<float> y(x.size(), -7.0f);
        const Tensor tx = t3(x, n, heads, planes), ty = t3(y, n, heads, planes);
        for (int workers : {1, 2, 3}) {
          INFO("seed " << seed << " n " << n << " kernel " << kernel << " max " << max << " workers " << workers);
          run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::pool1d(tc, ty, tx, kernel, max); });
          const int64_t half = kernel / 2;
          double worst = 0;
          bool exact = true;
          for (int64_t r = 0; r < heads * planes; ++r) {
            const float* xr = &x[static_cast<size_t>(r * n)];
            const float* yr = &y[static_cast<size_t>(r * n)];
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0, mx = -1e300;
              for (int64_t t = j - half; t <= j + half; ++t) {
                if (t < 0 || t >= n) continue;  // padding: 0 in the sum, ignored by max
                sum += xr[t];
                mx = std::max(mx, static_cast<double>(xr[t]));
              }
              if (max) {
                exact &= yr[j] == static_cast<float>(mx);
              } else {
                worst = std::max(worst, std::fabs(yr[j] - sum / kernel));
              }
            }
            if (!max && n >= kernel) {
              // Edge: the first output averages the first half + 1 inputs over the full kernel.
              double first = 0;
              for (int64_t t = 0; t <= half; ++t) first += xr[t];
              CHECK(yr[0] == doctest::Approx(first / kernel).epsilon(1e-5));
            }
            if (kernel == 1) {
              for (int64_t j = 0; j < n; ++j) exact &= yr[j] == xr[j];
            }
          }
          CHECK(exact);
          CHECK(worst < 2e-6);
        }
      }
    }
  }
}

TEST_CASE("prune ops: topk returns the k largest, ties to the lower index, ascending") {
  const int64_t n = 1000, rows = 5;
  std::mt19937 rng(21);
  std::vector<float> x(static_cast<size_t>(n * rows));
  // Few distinct values: many ties, including across the k-th place.
  for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % 17)) - 8.0f;
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(4 * n + i)] = 1.5f;  // one row all equal
  const Tensor tx = wt::make_tensor_2d(x.data(), wt::DType::f32, n, rows);
  for (int32_t k : {1, 2, 7, 100, 999, 1000}) {
    for (int workers : {1, 2, 3}) {
      INFO("seed 21 k " << k << " workers " << workers);
      std::vector<int32_t> out(static_cast<size_t>(k * rows), -9);
      Workspace ws(wt::cpu::topk_workspace_bytes(n, workers));
      run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::topk(tc, tx, k, out.data(), ws.p); });
      for (int64_t r = 0; r < rows; ++r) {
        const float* v = &x[static_cast<size_t>(r * n)];
        std::vector<int32_t> idx(static_cast<size_t>(n));
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return v[a] > v[b]; });
        idx.resize(static_cast<size_t>(k));
        std::sort(idx.begin(), idx.end());
        const std::vector<int32_t> got(out.begin() + r * k, out.begin() + (r + 1) * k);
        CHECK(got == idx);
      }
    }
  }
  // Continuous values with NaN, infinities, both zeros and subnormals mixed in: the order
  // of the kernel's comment (value desc, index asc, NaN below every number, -0 == +0).
  {
    const int64_t m = 777;
    std::vector<float> y(static_cast<size_t>(m));
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    const float specials[] = {std::nanf(""), -std::nanf(""), INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, 3.0f};
    for (int64_t i = 0; i < m; ++i)
      y[static_cast<size_t>(i)] = rng() % 5 == 0 ? specials[rng() % 9] : u(rng);
    auto above = [&](int32_t a, int32_t b) {
      const float va = y[static_cast<size_t>(a)], vb = y[static_cast<size_t>(b)];
      const bool na = std::isnan(va), nb = std::isnan(vb);
      if (na != nb) return nb;
      if (!na && va != vb) return va > vb;
      return a < b;
    };
    const Tensor ty = wt::make_tensor_2d(y.data(), wt::DType::f32, m, 1);
    // A k whose last place falls among the zeros (-0 and +0 tie there, broken by index).
    int32_t n_pos = 0;
    for (float v : y) n_pos += v > 0.0f;
    for (int32_t k : {1, 5, 100, n_pos + 3, 600, 700, 776, 777, 800}) {
      INFO("seed 21, specials, k " << k);
      std::vector<int32_t> got(static_cast<size_t>(k), -9);
      Workspace ws(wt::cpu::topk_workspace_bytes(m, 1));
      run_workers(1, [&](const ThreadCtx& tc) { wt::cpu::topk(tc, ty, k, got.data(), ws.p); });
      std::vector<int32_t> idx(static_cast<size_t>(m));
      std::iota(idx.begin(), idx.end(), 0);
      std::sort(idx.begin(), idx.end(), above);
      const int64_t kk = k < m ? k : m;
      idx.resize(static_cast<size_t>(kk));
      std::sort(idx.begin(), idx.end());
      idx.resize(static_cast<size_t>(k), -1);  // k beyond the row: -1 after every index
      CHECK(got == idx);
    }
  }
  // The all-equal row keeps the first k indices.
  std::vector<int32_t> out(3 * rows);
  Workspace ws(wt::cpu::topk_workspace_bytes(n, 1));
  run_workers(1, [&](const ThreadCtx& tc) { wt::cpu::topk(tc, tx, 3, out.data(), ws.p); });
  CHECK(out[12] == 0);
  CHECK(out[13] == 1);
  CHECK(out[14] == 2);
}

TEST_CASE("prune ops: gather_rows shared and per head") {
  const int64_t d = 64, heads = 3, n_src = 50;
  auto src = random_vec(static_cast<size_t>(d * heads * n_src), 31);
  const Tensor ts = t3(src, d, heads, n_src);
  std::mt19937 rng(32);
  for (int workers : {1, 2, 3}) {
    INFO("seed 32 workers " << workers);
    // Shared list (repeats allowed).
    std::vector<int32_t> ids(17);
    for (int32_t& i : ids) i = static_cast<int32_t>(rng() % n_src);
    std::vector<float> dst(static_cast<size_t>(d * heads * 17), -7.0f);
    const Tensor td = t3(dst, d, heads, 17);
    run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::gather_rows(tc, td, ts, ids.data(), 17, false); });
    bool ok = true;
    for (int64_t r = 0; r < 17; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < d; ++e) ok &= dst[at(e, h, r, d, heads)] == src[at(e, h, ids[r], d, heads)];
    CHECK(ok);

    // Per head: head h reads its own rows ids[h * n_sel + r].
    const int64_t n_sel = 11;
    std::vector<int32_t> ph(static_cast<size_t>(heads * n_sel));
    for (int32_t& i : ph) i = static_cast<int32_t>(rng() % n_src);
    std::vector<float> dst2(static_cast<size_t>(d * heads * n_sel), -7.0f);
    const Tensor td2 = t3(dst2, d, heads, n_sel);
    run_workers(workers, [&](const ThreadCtx& tc) {
      wt::cpu::gather_rows(tc, td2, ts, ph.data(), static_cast<int32_t>(ph.size()), true);
    });
    ok = true;
    for (int64_t r = 0; r < n_sel; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < d; ++e)
          ok &= dst2[at(e, h, r, d, heads)] == src[at(e, h, ph[static_cast<size_t>(h * n_sel + r)], d, heads)];
    CHECK(ok);

    // 2-D tensors: one head, rows along ne1.
    const Tensor s2 = wt::make_tensor_2d(src.data(), wt::DType::f32, d, heads * n_src);
    std::vector<float> dst3(static_cast<size_t>(d * 17), -7.0f);
    const Tensor d2 = wt::make_tensor_2d(dst3.data(), wt::DType::f32, d, 17);
    run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::gather_rows(tc, d2, s2, ids.data(), 17, false); });
    ok = true;
    for (int64_t r = 0; r < 17; ++r)
      for (int64_t e = 0; e < d; ++e) ok &= dst3[static_cast<size_t>(r * d + e)] == src[static_cast<size_t>(ids[r] * d + e)];
    CHECK(ok);
  }
}

TEST_CASE("prune ops: block_scores is the max over units of the mean |qbar . unit key|") {
  struct Case {
    int64_t hd, n_head, n_head_kv, n, n_last, n_k_rows;
    int32_t block, unit;
    bool use_ids;
  };
  const Case cases[] = {
      {64, 9, 3, 10, 3, 100, 16, 4, false},   // last block partial (4 rows)
      {64, 9, 3, 10, 3, 103, 16, 5, false},   // units 5,5,5,1 per block; last block 7 rows: 5,2
      {32, 4, 2, 6, 6, 200, 32, 32, true},    // unit = block, key rows via ids
      {64, 9, 3, 1, 1, 77, 8, 3, true},
      {64, 8, 8, 4, 0, 64, 64, 1, false},     // n_last 0: all rows
  };
  for (const Case& c : cases) {
    const uint32_t seed = static_cast<uint32_t>(c.n_k_rows * 7 + c.unit);
    auto q = random_vec(static_cast<size_t>(c.hd * c.n_head * c.n), seed);
    auto k = random_vec(static_cast<size_t>(c.hd * c.n_head_kv * c.n_k_rows), seed + 1);
    std::vector<int32_t> ids;
    if (c.use_ids) {
      std::mt19937 rng(seed + 2);
      for (int64_t r = 0; r < c.n_k_rows; ++r)
        if (rng() % 3 != 0) ids.push_back(static_cast<int32_t>(r));
    }
    const int64_t n_keys = c.use_ids ? static_cast<int64_t>(ids.size()) : c.n_k_rows;
    const int64_t n_last = c.n_last > 0 ? c.n_last : c.n;
    const int64_t n_blocks = (n_keys + c.block - 1) / c.block, group = c.n_head / c.n_head_kv;
    // Naive, in double.
    std::vector<double> qbar(static_cast<size_t>(c.hd * c.n_head), 0.0);
    for (int64_t h = 0; h < c.n_head; ++h)
      for (int64_t r = c.n - n_last; r < c.n; ++r)
        for (int64_t d = 0; d < c.hd; ++d) qbar[static_cast<size_t>(h * c.hd + d)] += q[at(d, h, r, c.hd, c.n_head)] / double(n_last);
    std::vector<double> ref(static_cast<size_t>(n_blocks), 0.0);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t be = std::min<int64_t>((b + 1) * c.block, n_keys);
      for (int64_t us = b * c.block; us < be; us += c.unit) {
        const int64_t ue = std::min<int64_t>(us + c.unit, be);
        double score = 0;
        for (int64_t h = 0; h < c.n_head; ++h) {
          double dot = 0;
          for (int64_t d = 0; d < c.hd; ++d) {
            double mean = 0;
            for (int64_t r = us; r < ue; ++r) {
              const int64_t row = c.use_ids ? ids[static_cast<size_t>(r)] : r;
              mean += k[at(d, h / group, row, c.hd, c.n_head_kv)];
            }
            dot += qbar[static_cast<size_t>(h * c.hd + d)] * mean / double(ue - us);
          }
          score += std::fabs(dot) / c.n_head;
        }
        ref[static_cast<size_t>(b)] = std::max(ref[static_cast<size_t>(b)], score);
      }
    }
    for (int workers : {1, 2, 3}) {
      INFO("seed " << seed << " keys " << n_keys << " block " << c.block << " unit " << c.unit << " workers " << workers);
      std::vector<float> out(static_cast<size_t>(n_blocks), -7.0f);
      const Tensor to = wt::make_tensor_2d(out.data(), wt::DType::f32, n_blocks, 1);
      Workspace ws(wt::cpu::block_scores_workspace_bytes(c.hd, c.n_head, workers));
      const wt::cpu::BlockScoresParams p{c.block, c.unit, static_cast<int32_t>(c.n_last),
                                         c.use_ids ? ids.data() : nullptr, static_cast<int32_t>(ids.size())};
      const Tensor tq = t3(q, c.hd, c.n_head, c.n), tk = t3(k, c.hd, c.n_head_kv, c.n_k_rows);
      run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::block_scores(tc, to, tq, tk, p, ws.p); });
      double worst = 0;
      for (int64_t b = 0; b < n_blocks; ++b)
        worst = std::max(worst, std::fabs(out[static_cast<size_t>(b)] - ref[static_cast<size_t>(b)]) /
                                    (1e-6 + ref[static_cast<size_t>(b)]));
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("prune ops: kv_similarity cosines against EMA anchors, state carried across calls") {
  const int64_t hd = 64, n_kv = 3, n = 20;
  const float decay = 0.9f;
  auto k = random_vec(static_cast<size_t>(hd * n_kv * n), 41);
  auto v = random_vec(static_cast<size_t>(hd * n_kv * n), 42);
  // A zero row of k (head 1, row 5) and a constant-ish drift so cosines vary.
  for (int64_t d = 0; d < hd; ++d) k[at(d, 1, 5, hd, n_kv)] = 0.0f;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t d = 0; d < hd; ++d) v[at(d, 2, t, hd, n_kv)] += 1.0f;
  // Anchors [hd, n_kv, 2]: head 0 zero (the first row becomes it), heads 1-2 random.
  auto anchors0 = random_vec(static_cast<size_t>(hd * n_kv * 2), 43);
  for (int64_t which = 0; which < 2; ++which)
    for (int64_t d = 0; d < hd; ++d) anchors0[at(d, 0, which, hd, n_kv)] = 0.0f;

  // Naive, in double.
  std::vector<double> A(anchors0.begin(), anchors0.end());
  std::vector<double> ref(static_cast<size_t>(2 * n_kv * n));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t g = 0; g < n_kv; ++g) {
      for (int64_t which = 0; which < 2; ++which) {
        const std::vector<float>& x = which == 0 ? k : v;
        double dot = 0, aa = 0, xx = 0;
        for (int64_t d = 0; d < hd; ++d) {
          const double a = A[at(d, g, which, hd, n_kv)], e = x[at(d, g, t, hd, n_kv)];
          dot += a * e;
          aa += a * a;
          xx += e * e;
        }
        ref[at(which, g, t, 2, n_kv)] = aa > 0 && xx > 0 ? dot / std::sqrt(aa * xx) : 0.0;
        for (int64_t d = 0; d < hd; ++d) {
          double& a = A[at(d, g, which, hd, n_kv)];
          const double e = x[at(d, g, t, hd, n_kv)];
          a = aa == 0 ? e : decay * a + (1.0 - decay) * e;
        }
      }
    }
  }
  for (int workers : {1, 2, 3}) {
    INFO("seeds 41-43 workers " << workers);
    auto anchors = anchors0;
    std::vector<float> out(static_cast<size_t>(2 * n_kv * n), -7.0f);
    const Tensor ta = t3(anchors, hd, n_kv, 2);
    // Two calls (rows 0..12, 12..20), as a chunked prefill would make.
    for (int64_t r0 : {int64_t(0), int64_t(12)}) {
      const int64_t rows = r0 == 0 ? 12 : n - 12;
      const Tensor tk = t3(k, hd, n_kv, n), tv = t3(v, hd, n_kv, n);
      Tensor ck = tk, cv = tv;
      ck.data = k.data() + r0 * hd * n_kv;
      cv.data = v.data() + r0 * hd * n_kv;
      ck.ne[2] = cv.ne[2] = rows;
      std::vector<float> part(static_cast<size_t>(2 * n_kv * rows));
      const Tensor to = t3(part, 2, n_kv, rows);
      run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::kv_similarity(tc, to, ck, cv, ta, decay); });
      std::copy(part.begin(), part.end(), out.begin() + r0 * 2 * n_kv);
    }
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(out[i] - ref[i]));
    CHECK(worst < 1e-5);
    CHECK(out[at(0, 0, 0, 2, n_kv)] == 0.0f);  // zero anchor: cos 0
    CHECK(out[at(1, 0, 0, 2, n_kv)] == 0.0f);
    CHECK(out[at(0, 1, 5, 2, n_kv)] == 0.0f);  // zero row
    double worst_a = 0;
    for (size_t i = 0; i < A.size(); ++i) worst_a = std::max(worst_a, std::fabs(anchors[i] - A[i]));
    CHECK(worst_a < 1e-5);
  }
}

TEST_CASE("prune ops: attention_prefill skip rows are zero and the others unchanged") {
  struct Shape {
    int64_t hd, n_head, n_head_kv, n, pos0;
  };
  const Shape shapes[] = {{64, 9, 3, 130, 0}, {64, 4, 2, 37, 70}, {32, 8, 1, 65, 0}};
  for (const Shape& s : shapes) {
    const int64_t n_kv = s.pos0 + s.n;
    const uint32_t seed = static_cast<uint32_t>(s.n + s.pos0);
    auto q = random_vec(static_cast<size_t>(s.hd * s.n_head * s.n), seed);
    auto k = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * n_kv), seed + 1);
    auto v = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * n_kv), seed + 2);
    const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
    const Tensor tq = t3(q, s.hd, s.n_head, s.n), tk = t3(k, s.hd, s.n_head_kv, n_kv);
    const Tensor tv = t3(v, s.hd, s.n_head_kv, n_kv);
    std::mt19937 rng(seed + 3);
    std::vector<int32_t> skip(static_cast<size_t>(s.n));
    for (int32_t& f : skip) f = rng() % 5 < 2 ? static_cast<int32_t>(1 + rng() % 3) : 0;
    skip[0] = 1;
    for (int64_t i = 10; i < 30 && i < s.n; ++i) skip[static_cast<size_t>(i)] = 1;  // a long run
    skip[static_cast<size_t>(s.n - 1)] = 0;
    std::vector<int32_t> all(static_cast<size_t>(s.n), 1);
    for (int workers : {1, 2, 3}) {
      INFO("seed " << seed << " hd " << s.hd << " heads " << s.n_head << "/" << s.n_head_kv << " n " << s.n
                   << " pos0 " << s.pos0 << " workers " << workers);
      Workspace ws(wt::cpu::attention_workspace_bytes(s.hd, s.n_head, s.n_head_kv, workers));
      auto run = [&](const int32_t* flags) {
        std::vector<float> out(q.size(), -7.0f);
        const Tensor to = t3(out, s.hd, s.n_head, s.n);
        run_workers(workers, [&](const ThreadCtx& tc) {
          wt::cpu::attention_prefill(tc, to, tq, tk, tv, static_cast<int32_t>(s.pos0), scale, ws.p, flags);
        });
        return out;
      };
      const auto full = run(nullptr), part = run(skip.data()), none = run(all.data());
      bool zero = true, same = true;
      for (int64_t i = 0; i < s.n; ++i) {
        for (int64_t h = 0; h < s.n_head; ++h) {
          for (int64_t d = 0; d < s.hd; ++d) {
            const size_t e = at(d, h, i, s.hd, s.n_head);
            if (skip[static_cast<size_t>(i)] != 0) {
              zero &= part[e] == 0.0f;
            } else {
              same &= part[e] == full[e];  // a row's result does not depend on its tile mates
            }
          }
        }
      }
      CHECK(zero);
      CHECK(same);
      CHECK(std::all_of(none.begin(), none.end(), [](float x) { return x == 0.0f; }));
      // And the kept rows are right, not just unchanged.
      std::vector<double> ref(static_cast<size_t>(s.hd * s.n_head));
      double worst = 0;
      for (int64_t i = 0; i < s.n; ++i) {
        if (skip[static_cast<size_t>(i)] != 0) continue;
        std::vector<int64_t> keys(static_cast<size_t>(s.pos0 + i + 1));
        std::iota(keys.begin(), keys.end(), int64_t(0));
        naive_attend(q, k, v, s.hd, s.n_head, s.n_head_kv, i, keys, scale, &ref);
        for (int64_t h = 0; h < s.n_head; ++h)
          for (int64_t d = 0; d < s.hd; ++d)
            worst = std::max(worst, std::fabs(part[at(d, h, i, s.hd, s.n_head)] - ref[at(d, h, 0, s.hd, s.n_head)]));
      }
      CHECK(worst < 2e-5);
    }
  }
}

TEST_CASE("prune ops: attention_decode with key ids attends exactly those keys") {
  struct Shape {
    int64_t hd, n_head, n_head_kv, n_kv;
  };
  const Shape shapes[] = {{64, 9, 3, 300}, {128, 2, 2, 70}, {32, 8, 1, 1000}};
  for (const Shape& s : shapes) {
    const uint32_t seed = static_cast<uint32_t>(s.n_kv + s.hd);
    auto q = random_vec(static_cast<size_t>(s.hd * s.n_head), seed);
    auto k = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * s.n_kv), seed + 1);
    auto v = random_vec(static_cast<size_t>(s.hd * s.n_head_kv * s.n_kv), seed + 2);
    const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
    const Tensor tq = t3(q, s.hd, s.n_head, 1), tk = t3(k, s.hd, s.n_head_kv, s.n_kv);
    const Tensor tv = t3(v, s.hd, s.n_head_kv, s.n_kv);
    std::mt19937 rng(seed + 3);
    for (int64_t n_sel : {int64_t(0), int64_t(1), int64_t(37), s.n_kv / 2, s.n_kv}) {
      // An ascending subset of n_sel rows, blocks and stragglers mixed.
      std::vector<int64_t> rows(static_cast<size_t>(s.n_kv));
      std::iota(rows.begin(), rows.end(), int64_t(0));
      std::shuffle(rows.begin(), rows.end(), rng);
      rows.resize(static_cast<size_t>(n_sel));
      std::sort(rows.begin(), rows.end());
      std::vector<int32_t> ids(rows.begin(), rows.end());
      ids.reserve(1);  // a non-null list even when empty: null means "no list"
      std::vector<double> ref(static_cast<size_t>(s.hd * s.n_head), 0.0);
      if (n_sel > 0) naive_attend(q, k, v, s.hd, s.n_head, s.n_head_kv, 0, rows, scale, &ref);
      for (int workers : {1, 2, 3}) {
        INFO("seed " << seed << " hd " << s.hd << " heads " << s.n_head << "/" << s.n_head_kv << " keys " << s.n_kv
                     << " selected " << n_sel << " workers " << workers);
        Workspace ws(wt::cpu::attention_workspace_bytes(s.hd, s.n_head, s.n_head_kv, workers));
        std::vector<float> out(q.size(), -7.0f);
        const Tensor to = t3(out, s.hd, s.n_head, 1);
        // pos0 is ignored with ids: pass a wrong one.
        run_workers(workers, [&](const ThreadCtx& tc) {
          wt::cpu::attention_decode(tc, to, tq, tk, tv, 5, scale, ws.p, ids.data(), static_cast<int32_t>(n_sel));
        });
        double worst = 0;
        for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(out[i] - ref[i]));
        CHECK(worst < 2e-5);
        if (n_sel == s.n_kv) {  // every row listed: the same as plain decode at the last position
          std::vector<float> plain(q.size(), -7.0f);
          const Tensor tp = t3(plain, s.hd, s.n_head, 1);
          run_workers(workers, [&](const ThreadCtx& tc) {
            wt::cpu::attention_decode(tc, tp, tq, tk, tv, static_cast<int32_t>(s.n_kv - 1), scale, ws.p);
          });
          CHECK(plain == out);
        }
      }
    }
  }
}
