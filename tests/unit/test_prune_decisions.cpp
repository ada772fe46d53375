// The policies' decision logic on synthetic vectors, against direct computations: the
// window-score chain (window_scores + pool1d kernels, GQA sum, top-k) against double
// precision, ASL's rank variance and trigger, CLAA's z-score + max, SlimInfer's block
// choice and overlap-gated swaps, Token Filtering's realized skip ratio.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "kernels/cpu/ops_cpu.h"
#include "runtime/prune/registry.h"
#include "runtime/prune/selection_math.h"
#include "support/random_tensor.h"
#include "support/run_workers.h"

namespace {

using wt::Decision;
using wt::Observation;
using wt::ScoreRequest;

// An independent top-k (sort by value desc, index asc) for the policies under test.
class HostSelector final : public wt::Selector {
 public:
  wt::Status topk(const float* s, int32_t rows, int32_t n, int32_t k, int32_t* out) override {
    REQUIRE(k >= 0);
    REQUIRE(k <= n);  // the backend's TopkOp refuses more
    std::vector<int32_t> idx(static_cast<size_t>(n));
    for (int32_t r = 0; r < rows; ++r) {
      const float* v = s + static_cast<size_t>(r) * n;
      std::iota(idx.begin(), idx.end(), 0);
      std::sort(idx.begin(), idx.end(), [v](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
      std::sort(idx.begin(), idx.begin() + k);
      std::copy(idx.begin(), idx.begin() + k, out + static_cast<size_t>(r) * k);
    }
    return wt::Status::ok();
  }
};

std::unique_ptr<wt::PrunePolicy> make(wt_prune_params p, const wt::PruneShape& s) {
  std::unique_ptr<wt::PrunePolicy> pol;
  wt_prune_params resolved;
  const wt::Status st = wt::make_policy(p, s, &resolved, &pol);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return pol;
}

std::vector<float> randn(size_t n, uint32_t seed) { return wt::test::random_vec(n, seed); }

// Layer 0's decision on one window observation of n rows (scores [n_head][n_cols]), which
// must keep c rows per KV head.
Decision decide_per_head(wt::PrunePolicy& pol, int32_t n, const float* scores, int32_t n_cols, int32_t c) {
  Observation obs;
  obs.n_rows = obs.n_keys = n;
  obs.scores = scores;
  obs.n_cols = n_cols;
  HostSelector sel;
  Decision d;
  REQUIRE(pol.decide(0, obs, sel, &d).is_ok());
  REQUIRE(d.kv == Decision::Kv::per_head);
  REQUIRE(d.n_kv_rows == c);
  return d;
}

}  // namespace

TEST_CASE("prune decisions: SnapKV's window-score chain matches a double-precision selection") {
  const int32_t hd = 16, n_head = 6, n_kv = 2, n = 150, w = 12, c = 40, pool_k = 7;
  const uint32_t seed = 1234;
  CAPTURE(seed);
  std::vector<float> q = randn(static_cast<size_t>(hd * n_head * n), seed);
  std::vector<float> k = randn(static_cast<size_t>(hd * n_kv * n), seed + 1);
  for (float& x : q) x *= 2.0f;  // peaky attention, so the ranking is clear
  const int32_t n_cols = n - w;
  const int64_t qne[3] = {hd, n_head, n}, kne[3] = {hd, n_kv, n}, dne[3] = {n_cols, n_head, 1};
  const wt::Tensor qt = wt::make_tensor(q.data(), wt::DType::f32, 3, qne);
  const wt::Tensor kt = wt::make_tensor(k.data(), wt::DType::f32, 3, kne);
  std::vector<float> raw(static_cast<size_t>(n_cols * n_head)), pooled(raw.size());
  const wt::Tensor rt = wt::make_tensor(raw.data(), wt::DType::f32, 3, dne);
  const wt::Tensor pt = wt::make_tensor(pooled.data(), wt::DType::f32, 3, dne);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<char> ws(wt::cpu::window_scores_workspace_bytes(hd, n_head, w, 2) + 4096);
  wt::test::run_workers(2, [&](const wt::cpu::ThreadCtx& tc) {
    wt::cpu::window_scores(tc, rt, qt, kt, {w, true, false, n, scale}, ws.data());
  });
  wt::test::run_workers(2, [&](const wt::cpu::ThreadCtx& tc) { wt::cpu::pool1d(tc, pt, rt, pool_k, true); });

  // Double precision: mask inside the window only, softmax over all keys, sum over the W
  // queries, max-pool per query head (padding ignored), then sum over each KV head's group.
  const int32_t g = n_head / n_kv;
  std::vector<double> s(static_cast<size_t>(n_head * n_cols), 0.0), S(static_cast<size_t>(n_kv * n_cols), 0.0);
  for (int32_t h = 0; h < n_head; ++h) {
    for (int32_t i = 0; i < w; ++i) {
      const int32_t qi = n - w + i;
      std::vector<double> z(static_cast<size_t>(n));
      double m = -1e300;
      for (int32_t j = 0; j <= qi; ++j) {
        double dot = 0;
        for (int32_t d = 0; d < hd; ++d)
          dot += static_cast<double>(q[static_cast<size_t>((qi * n_head + h) * hd + d)]) *
                 k[static_cast<size_t>((j * n_kv + h / g) * hd + d)];
        z[static_cast<size_t>(j)] = dot * scale;
        m = std::max(m, dot * scale);
      }
      double sum = 0;
      for (int32_t j = 0; j <= qi; ++j) sum += std::exp(z[static_cast<size_t>(j)] - m);
      for (int32_t j = 0; j < n_cols; ++j) s[static_cast<size_t>(h * n_cols + j)] += std::exp(z[static_cast<size_t>(j)] - m) / sum;
    }
  }
  for (int32_t h = 0; h < n_head; ++h)
    for (int32_t j = 0; j < n_cols; ++j) {
      double mx = -1e300;
      for (int32_t t = std::max(0, j - pool_k / 2); t <= std::min(n_cols - 1, j + pool_k / 2); ++t)
        mx = std::max(mx, s[static_cast<size_t>(h * n_cols + t)]);
      S[static_cast<size_t>((h / g) * n_cols + j)] += mx;
    }

  wt_prune_params p = wt_prune_default_params();
  p.method = WT_PRUNE_SNAPKV;
  p.budget = c;
  p.window = w;
  p.pool_kernel = pool_k;
  auto pol = make(p, {4, n_head, n_kv, hd, 256});
  pol->begin(n, 0);
  const ScoreRequest req = pol->request(0, n);
  REQUIRE(req.kind == ScoreRequest::Kind::window);
  CHECK(req.window == w);
  CHECK(req.n_cols == n_cols);
  CHECK(req.pool_max);
  CHECK(req.pool_kernel == pool_k);
  const Decision d = decide_per_head(*pol, n, pooled.data(), n_cols, c);
  for (int32_t kv = 0; kv < n_kv; ++kv) {
    CAPTURE(kv);
    const int32_t* rows = d.kv_rows + kv * c;
    // The window, then the top (C - W) by the double-precision scores (up to near-ties).
    for (int32_t i = 0; i < w; ++i) CHECK(rows[c - w + i] == n_cols + i);
    std::vector<int32_t> order(static_cast<size_t>(n_cols));
    std::iota(order.begin(), order.end(), 0);
    const double* Sk = S.data() + static_cast<size_t>(kv) * n_cols;
    std::sort(order.begin(), order.end(), [Sk](int32_t a, int32_t b) { return Sk[a] > Sk[b]; });
    const double cut = Sk[order[static_cast<size_t>(c - w - 1)]];
    for (int32_t i = 0; i < c - w; ++i) {
      CHECK(Sk[rows[i]] >= cut * (1 - 1e-5));
      if (i > 0) CHECK(rows[i] > rows[i - 1]);
    }
  }
}

TEST_CASE("prune decisions: ASL rank variance on a hand-made rank sequence") {
  // Two layers, four tokens. Top-1 sets: {0} and {1}: union {0, 1}.
  const int32_t ranks[2][4] = {{1, 2, 3, 4}, {2, 1, 4, 3}};
  // Token 0: ranks 1, 2 -> var 0.25; token 1: 2, 1 -> 0.25; mean 0.25.
  CHECK(wt::rank_variance(&ranks[0][0], 2, 4, 1) == doctest::Approx(0.25));
  // k = 4: every token is in the union; all four variances are 0.25.
  CHECK(wt::rank_variance(&ranks[0][0], 2, 4, 4) == doctest::Approx(0.25));
  const int32_t same[2][4] = {{3, 1, 2, 4}, {3, 1, 2, 4}};
  CHECK(wt::rank_variance(&same[0][0], 2, 4, 2) == 0.0);
  // Ranks: 1 = highest; ties keep index order.
  const float s[5] = {0.5f, 2.0f, 0.5f, -1.0f, 3.0f};
  int32_t order[5], r[5];
  wt::ranks_descending(s, 5, order, r);
  CHECK(std::vector<int32_t>(r, r + 5) == std::vector<int32_t>{3, 2, 4, 5, 1});
}

TEST_CASE("prune decisions: ASL triggers at the first layer whose observed ranks settle") {
  const int32_t n_head = 2, n_kv = 1, n = 96, w = 8, n_cols = n - w;
  wt_prune_params p = wt_prune_default_params();
  p.method = WT_PRUNE_ASL;
  p.window = w;
  p.budget = 24;
  p.asl_min_layer = 2;
  p.asl_obs_layers = 2;
  p.asl_tau = 0.3f;
  p.asl_kv_topk = false;
  auto pol = make(p, {8, n_head, n_kv, 16, 128});
  pol->begin(n, 0);
  HostSelector sel;
  // Layers 0-2: unrelated random scores; from layer 3 on the same scores every layer, so
  // the window of L_obs = 2 layers is stable from layer 4 on: V_4 = 0 < 0.3 V_init.
  const std::vector<float> stable = randn(static_cast<size_t>(n_head * n_cols), 7);
  int32_t fired_at = -1;
  for (int32_t l = 0; l < 8 && fired_at < 0; ++l) {
    const ScoreRequest req = pol->request(l, n);
    REQUIRE(req.kind == ScoreRequest::Kind::window);
    const std::vector<float> scores = l < 3 ? randn(static_cast<size_t>(n_head * n_cols), 100 + l) : stable;
    Observation obs;
    obs.n_rows = obs.n_keys = n;
    obs.scores = scores.data();
    obs.n_cols = n_cols;
    Decision d;
    REQUIRE(pol->decide(l, obs, sel, &d).is_ok());
    if (d.keep_rows) {
      fired_at = l;
      CHECK(d.n_keep_rows == 24);
      // Its own top (K - W) by the summed heads, plus the window.
      std::vector<int32_t> order(static_cast<size_t>(n_cols));
      std::iota(order.begin(), order.end(), 0);
      std::vector<float> tok(static_cast<size_t>(n_cols));
      for (int32_t j = 0; j < n_cols; ++j) tok[static_cast<size_t>(j)] = stable[static_cast<size_t>(j)] + stable[static_cast<size_t>(n_cols + j)];
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tok[a] > tok[b]; });
      std::set<int32_t> want(order.begin(), order.begin() + 16);
      for (int32_t j = n_cols; j < n; ++j) want.insert(j);
      CHECK(std::set<int32_t>(d.keep_rows, d.keep_rows + d.n_keep_rows) == want);
    }
  }
  CHECK(fired_at == 4);
  CHECK(pol->report().triggered);
  CHECK(pol->report().selection_layer == 4);

  // Never settling: no selection at all, reported as not triggered.
  auto never = make(p, {8, n_head, n_kv, 16, 128});
  never->begin(n, 0);
  for (int32_t l = 0; l < 8; ++l) {
    const std::vector<float> scores = randn(static_cast<size_t>(n_head * n_cols), 500 + l);
    Observation obs;
    obs.n_rows = obs.n_keys = n;
    obs.scores = scores.data();
    obs.n_cols = n_cols;
    Decision d;
    REQUIRE(never->decide(l, obs, sel, &d).is_ok());
    CHECK(d.keep_rows == nullptr);
  }
  CHECK_FALSE(never->report().triggered);
  CHECK(never->report().selection_layer == -1);
}

TEST_CASE("prune decisions: CLAA z-scores each vector, then takes the max") {
  // [1, 2, 3]: mean 2, sample std 1 -> [-1, 0, 1]; [10, 0, 5]: mean 5, std 5 -> [1, -1, 0].
  const float v[2][3] = {{1, 2, 3}, {10, 0, 5}};
  float out[3];
  wt::zscore_max(&v[0][0], 2, 3, out);
  CHECK(out[0] == doctest::Approx(1.0));
  CHECK(out[1] == doctest::Approx(0.0).epsilon(1e-6));
  CHECK(out[2] == doctest::Approx(1.0));
  // A constant vector has std 0: its z-scores are 0, never NaN.
  const float flat[4] = {2, 2, 2, 2};
  float o2[4];
  wt::zscore_max(flat, 1, 4, o2);
  for (float x : o2) CHECK(x == 0.0f);
}

TEST_CASE("prune decisions: SlimInfer keeps the first and newest blocks and swaps only below gamma") {
  const int32_t n_head = 2, n_kv = 1, L = 640;  // ten blocks of 64
  wt_prune_params p = wt_prune_default_params();
  p.method = WT_PRUNE_SLIMINFER;
  p.keep = 0.125f;  // stages keep 1/2, 1/4, 1/8 -> 5, 3 (ceil 2.5), 2 blocks
  p.slim_layers[0] = 1;
  p.slim_layers[1] = 2;
  p.slim_layers[2] = 3;
  p.slim_decode_keep = 0.5f;
  p.slim_gamma = 0.9f;
  auto pol = make(p, {6, n_head, n_kv, 16, 1024});
  pol->begin(L, 0);
  HostSelector sel;
  // Prefill at stage 0: block scores favour blocks 3, 5, 6 in the middle; 0 and 9 are the
  // worst but forced.
  const float bs[10] = {0.0f, 0.5f, 0.2f, 0.9f, 0.1f, 0.8f, 0.7f, 0.3f, 0.4f, 0.0f};
  REQUIRE(pol->request(1, L).kind == ScoreRequest::Kind::blocks);
  CHECK(pol->request(0, L).kind == ScoreRequest::Kind::none);
  Observation obs;
  obs.n_rows = obs.n_keys = L;
  obs.scores = bs;
  obs.n_cols = 10;
  Decision d;
  REQUIRE(pol->decide(1, obs, sel, &d).is_ok());
  std::set<int32_t> blocks;
  for (int32_t i = 0; i < d.n_keep_rows; ++i) blocks.insert(d.keep_rows[i] / 64);
  CHECK(blocks == std::set<int32_t>{0, 3, 5, 6, 9});
  CHECK(d.n_keep_rows == 5 * 64);

  // Decode in group 0 (layers 0..1, all 640 prompt rows): keep ceil(0.5 * 10) = 5 blocks.
  auto step = [&](const float* scores, int32_t n_cache) {
    REQUIRE(pol->decode_request(0, n_cache).kind == ScoreRequest::Kind::blocks);
    Observation o;
    o.n_rows = 1;
    o.n_keys = n_cache;
    o.scores = scores;
    o.n_cols = 10;
    Decision dd;
    REQUIRE(pol->decode_decide(0, o, sel, &dd).is_ok());
    std::set<int32_t> active;
    for (int32_t i = 0; i < dd.n_attend_rows; ++i)
      if (dd.attend_rows[i] < L) active.insert(dd.attend_rows[i] / 64);
    CHECK(dd.attend_rows[dd.n_attend_rows - 1] == n_cache - 1);  // the newest row is attended
    return active;
  };
  const float s1[10] = {0, 9, 8, 7, 1, 1, 1, 1, 1, 0};
  CHECK(step(s1, L + 1) == std::set<int32_t>{0, 1, 2, 3, 9});
  // One of five blocks changes: overlap 4/5 = 0.8 < 0.9: swap.
  const float s2[10] = {0, 9, 8, 1, 7, 1, 1, 1, 1, 0};
  CHECK(step(s2, L + 2) == std::set<int32_t>{0, 1, 2, 4, 9});
  CHECK(pol->report().n_block_swaps == 1);

  // With gamma 0.7 the same change is ignored: the previous set stays.
  p.slim_gamma = 0.7f;
  pol = make(p, {6, n_head, n_kv, 16, 1024});
  pol->begin(L, 0);
  CHECK(step(s1, L + 1) == std::set<int32_t>{0, 1, 2, 3, 9});
  CHECK(step(s2, L + 2) == std::set<int32_t>{0, 1, 2, 3, 9});
  CHECK(pol->report().n_block_swaps == 0);
  CHECK(wt::overlap_fraction(std::vector<int32_t>{0, 1, 2, 4, 9}.data(), 5,
                             std::vector<int32_t>{0, 1, 2, 3, 9}.data(), 5) == doctest::Approx(0.8));
}

TEST_CASE("prune decisions: Token Filtering's realized skip ratio is within 5% of the target") {
  for (float target : {0.3f, 0.5f, 0.7f}) {
    for (int drift = 0; drift < 2; ++drift) {
      CAPTURE(target);
      CAPTURE(drift);
      wt::SkipController c;
      c.reset(target, 16, 0.05f);
      std::mt19937 rng(99);
      std::normal_distribution<float> dist(0.4f, 0.2f);
      for (int t = 0; t < 16; ++t) CHECK_FALSE(c.decide(dist(rng)));  // warm-up: never skipped
      for (int t = 0; t < 3000; ++t) {
        // drift: the redundancy scores slide upwards over the sequence.
        const float shift = drift ? 0.3f * static_cast<float>(t) / 3000.0f : 0.0f;
        c.decide(dist(rng) + shift);
      }
      const double ratio = static_cast<double>(c.n_skipped()) / static_cast<double>(c.n_decided());
      CHECK(std::abs(ratio - target) <= 0.05);
    }
  }
}

// A saved context's Token Filtering state (issue 30) holds what reset() and decide() can make
// and nothing else: fuzz_state found a finite but huge target that made the warm-up
// quantile's index overflow its int (UBSan) once the controller decided again.
TEST_CASE("prune decisions: Token Filtering's controller takes back only states it could have made") {
  wt::SkipController c;
  c.reset(0.5f, 4, 0.05f);
  for (float score : {0.1f, 0.9f, 0.4f}) c.decide(score);
  const wt::SkipController::State good = c.state();
  CHECK(wt::SkipController::valid(good));
  auto with = [&](auto change) {
    wt::SkipController::State s = good;
    change(s);
    return s;
  };
  CHECK_FALSE(wt::SkipController::valid(with([](auto& s) { s.target = 1e30f; })));
  CHECK_FALSE(wt::SkipController::valid(with([](auto& s) { s.target = -0.5f; })));
  CHECK_FALSE(wt::SkipController::valid(with([](auto& s) { s.step = -1.0f; })));
  CHECK_FALSE(wt::SkipController::valid(with([](auto& s) { s.n_decided = INT64_MAX; })));
  CHECK_FALSE(wt::SkipController::valid(with([](auto& s) { s.n_warm = s.warmup + 1; })));
  wt::SkipController refused;
  CHECK_FALSE(refused.set_state(with([](auto& s) { s.target = 1e30f; })));
  wt::SkipController d;
  REQUIRE(d.set_state(good));
  CHECK_FALSE(d.decide(0.2f));  // the fourth warm-up score: the quantile is taken, nothing skipped
  CHECK(d.decide(2.0f));        // above the threshold the warm-up set
}

TEST_CASE("prune decisions: SnapKV's pyramid spreads the flat budget over the layers (either way up), each layer keeping its own") {
  const int32_t n_layer = 24, n_head = 14, n_kv = 2, hd = 64;
  const wt::PruneShape shape{n_layer, n_head, n_kv, hd, 8192};
  auto policy = [&](float keep, const char* beta) {
    wt_prune_params p = wt_prune_default_params();
    p.method = WT_PRUNE_SNAPKV;
    p.keep = keep;
    REQUIRE(wt_prune_set_param(&p, "snapkv_pyramid", beta) == WT_OK);
    return make(p, shape);
  };
  struct Case {
    float keep;
    int32_t n, c, first, last;  // flat budget C, layer 0's and the last layer's C_l (window 32 in each)
  };
  // keep 0.2 of 4096: P = 819 - 32 = 787, P / 20 = 39 and 2P - 39 = 1535 prefix rows.
  // keep 0.6 of 1000: 2P - P / 20 = 1108 is more than the 968-row prefix, so layer 0 keeps
  // the prefix and the last layer 2P - 968 = 168 (the authors' clamp).
  for (const Case& k : {Case{0.2f, 4096, 819, 32 + 1535, 32 + 39}, Case{0.6f, 1000, 600, 1000, 32 + 168}}) {
    CAPTURE(k.n);
    auto flat = policy(k.keep, "0");
    auto pyr = policy(k.keep, "20");
    int64_t sum = 0;
    for (int32_t l = 0; l < n_layer; ++l) {
      CAPTURE(l);
      CHECK(flat->kv_budget(l, k.n) == k.c);
      const int32_t c = pyr->kv_budget(l, k.n);
      if (l > 0) CHECK(c <= pyr->kv_budget(l - 1, k.n));
      sum += c - 32;
    }
    CHECK(pyr->kv_budget(0, k.n) == k.first);
    CHECK(pyr->kv_budget(n_layer - 1, k.n) == k.last);
    // Never more than the flat budget in total, and less by under one row per layer.
    CHECK(sum <= int64_t{n_layer} * (k.c - 32));
    CHECK(sum > int64_t{n_layer} * (k.c - 32 - 1));

    // Each layer's decision keeps its own budget per KV head: the window, then the top rows.
    const int32_t n_cols = k.n - 32;
    const std::vector<float> scores = randn(static_cast<size_t>(n_head) * n_cols, 77);
    HostSelector sel;
    pyr->begin(k.n, 0);
    for (int32_t l : {0, n_layer / 2, n_layer - 1}) {
      CAPTURE(l);
      REQUIRE(pyr->request(l, k.n).kind == ScoreRequest::Kind::window);
      Observation obs;
      obs.layer = l;
      obs.n_rows = obs.n_keys = k.n;
      obs.scores = scores.data();
      obs.n_cols = n_cols;
      Decision d;
      REQUIRE(pyr->decide(l, obs, sel, &d).is_ok());
      const int32_t c = pyr->kv_budget(l, k.n);
      if (c >= k.n) {
        CHECK(d.kv != Decision::Kv::per_head);  // the whole prompt fits: nothing dropped
        continue;
      }
      REQUIRE(d.kv == Decision::Kv::per_head);
      REQUIRE(d.n_kv_rows == c);
      for (int32_t kv = 0; kv < n_kv; ++kv)
        for (int32_t i = 0; i < 32; ++i) CHECK(d.kv_rows[kv * c + c - 32 + i] == n_cols + i);
    }
  }

  // A negative beta turns the pyramid upside down: layer l keeps what layer n_layer - 1 - l
  // keeps with the positive one.
  auto up = policy(0.2f, "20");
  auto down = policy(0.2f, "-20");
  for (int32_t l = 0; l < n_layer; ++l) CHECK(down->kv_budget(l, 4096) == up->kv_budget(n_layer - 1 - l, 4096));
}

TEST_CASE("prune decisions: SnapKV's union keeps, per KV head, its query heads' own best rows in turn at the same budget") {
  const int32_t n_layer = 2, n_head = 6, n_kv = 2, hd = 16, n = 300, w = 8;
  const wt::PruneShape shape{n_layer, n_head, n_kv, hd, 512};
  wt_prune_params p = wt_prune_default_params();
  p.method = WT_PRUNE_SNAPKV;
  p.keep = 0.2f;
  p.window = w;
  REQUIRE(wt_prune_set_param(&p, "snapkv_union", "1") == WT_OK);
  auto pol = make(p, shape);
  const int32_t c = pol->kv_budget(0, n), k = c - w, n_cols = n - w, g = n_head / n_kv;
  REQUIRE(c == 60);
  // Scores with ties (a coarse grid), so the tie rule is exercised too.
  std::vector<float> scores = randn(static_cast<size_t>(n_head) * n_cols, 91);
  for (float& x : scores) x = std::round(x * 4.0f) / 4.0f;
  pol->begin(n, 0);
  const Decision d = decide_per_head(*pol, n, scores.data(), n_cols, c);
  for (int32_t kv = 0; kv < n_kv; ++kv) {
    CAPTURE(kv);
    // Directly: each query head's full order, then rank r of head 0, 1, 2, rank r + 1, ...
    std::vector<std::vector<int32_t>> order(static_cast<size_t>(g));
    for (int32_t h = 0; h < g; ++h) {
      const float* v = scores.data() + static_cast<size_t>(kv * g + h) * n_cols;
      std::vector<int32_t>& o = order[static_cast<size_t>(h)];
      o.resize(static_cast<size_t>(n_cols));
      std::iota(o.begin(), o.end(), 0);
      std::stable_sort(o.begin(), o.end(), [v](int32_t a, int32_t b) { return v[a] > v[b]; });
    }
    std::set<int32_t> want;
    for (size_t r = 0; want.size() < static_cast<size_t>(k); ++r)
      for (int32_t h = 0; h < g && want.size() < static_cast<size_t>(k); ++h) want.insert(order[static_cast<size_t>(h)][r]);
    for (int32_t i = 0; i < w; ++i) want.insert(n_cols + i);
    const int32_t* row = d.kv_rows + static_cast<size_t>(kv) * c;
    CHECK(std::is_sorted(row, row + c));
    CHECK(std::set<int32_t>(row, row + c) == want);
    // Each query head's own best row is kept; the group's summed best need not be.
    for (int32_t h = 0; h < g; ++h) CHECK(want.count(order[static_cast<size_t>(h)][0]) == 1);
  }
}

namespace {
// In-memory decode-state streams for a policy's save and load.
struct VecWriter final : wt::StateWriter {
  std::vector<uint8_t> bytes;
  wt::Status write(const void* data, size_t n) override {
    const auto* b = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), b, b + n);
    return wt::Status::ok();
  }
};
struct VecReader final : wt::StateReader {
  const std::vector<uint8_t>& bytes;
  size_t at = 0;
  explicit VecReader(const std::vector<uint8_t>& b) : bytes(b) {}
  wt::Status read(void* dst, size_t n) override {
    if (at + n > bytes.size()) return wt::error(WT_ERR_FORMAT, "short");
    std::copy(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin() + static_cast<std::ptrdiff_t>(at + n),
              static_cast<uint8_t*>(dst));
    at += n;
    return wt::Status::ok();
  }
};
}  // namespace

TEST_CASE("prune decisions: decode_topk attends the prompt blocks whose best row sums the most attention, and every generated row") {
  const int32_t n_head = 4, n_kv = 2, L = 100, B = 16, n_cache = L + 3;  // 7 blocks, the last of 4 rows
  const wt::PruneShape shape{2, n_head, n_kv, 16, 256};
  wt_prune_params p = wt_prune_default_params();
  wt_prune_method m{};
  REQUIRE(wt_prune_method_from_name("decode_topk", &m) == WT_OK);
  p.method = m;
  p.keep = 0.4f;  // 40 rows: 2 whole blocks
  // The exact scores over blocks of 16 (the defaults are the bounds at blocks of 4): a
  // decode step's window scores.
  REQUIRE(wt_prune_set_param(&p, "decode_topk_bounds", "0") == WT_OK);
  REQUIRE(wt_prune_set_param(&p, "decode_topk_block", "16") == WT_OK);
  auto pol = make(p, shape);
  pol->begin(L, 0);
  // The prefill keeps everything and asks nothing.
  CHECK(pol->request(0, L).kind == ScoreRequest::Kind::none);
  CHECK(pol->kv_budget(1, L) == L);

  const ScoreRequest req = pol->decode_request(1, n_cache);
  REQUIRE(req.kind == ScoreRequest::Kind::window);
  CHECK(req.window == 1);
  CHECK(req.softmax);
  CHECK(req.n_cols == L);
  CHECK(req.pool_kernel == 1);

  std::vector<float> scores = randn(static_cast<size_t>(n_head) * L, 17);
  for (float& x : scores) x = std::abs(x);
  scores[static_cast<size_t>(2) * L + 98] = 50.0f;  // head 2: the partial last block wins
  // Directly: each row's sum over all heads, each block's best row, the two best blocks.
  std::vector<double> block(7, -1.0);
  for (int32_t r = 0; r < L; ++r) {
    double s = 0;
    for (int32_t h = 0; h < n_head; ++h) s += scores[static_cast<size_t>(h) * L + r];
    block[static_cast<size_t>(r / B)] = std::max(block[static_cast<size_t>(r / B)], s);
  }
  std::vector<int32_t> order(7);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return block[a] > block[b]; });
  REQUIRE(order[0] == 6);
  std::vector<int32_t> want;
  for (int32_t b : {std::min(order[0], order[1]), std::max(order[0], order[1])})
    for (int32_t r = b * B; r < std::min(L, (b + 1) * B); ++r) want.push_back(r);
  for (int32_t r = L; r < n_cache; ++r) want.push_back(r);

  auto decide = [&](wt::PrunePolicy& pl) {
    Observation o;
    o.layer = 1;
    o.n_rows = 1;
    o.n_keys = n_cache;
    o.scores = scores.data();
    o.n_cols = L;
    HostSelector sel;
    Decision d;
    REQUIRE(pl.decode_decide(1, o, sel, &d).is_ok());
    return std::vector<int32_t>(d.attend_rows, d.attend_rows + d.n_attend_rows);
  };
  CHECK(decide(*pol) == want);
  CHECK(want.size() == static_cast<size_t>(B + 4 + 3));

  // A saved context's policy decides the same after a load (the prompt's length is its state).
  VecWriter w;
  REQUIRE(pol->save_decode_state(w).is_ok());
  REQUIRE(w.bytes.size() == pol->decode_state_bytes());
  auto loaded = make(p, shape);
  VecReader check_only(w.bytes), take(w.bytes);
  REQUIRE(loaded->load_decode_state(check_only, w.bytes.size(), false).is_ok());
  CHECK(loaded->decode_request(1, n_cache).kind == ScoreRequest::Kind::none);  // not applied yet
  REQUIRE(loaded->load_decode_state(take, w.bytes.size(), true).is_ok());
  CHECK(decide(*loaded) == want);
  const std::vector<uint8_t> two_bytes(2, 0);
  VecReader short_state(two_bytes);
  CHECK(loaded->load_decode_state(short_state, 2, false).code() == WT_ERR_FORMAT);
  const int32_t too_long = 257;  // past n_ctx
  std::vector<uint8_t> bad(sizeof too_long);
  std::memcpy(bad.data(), &too_long, sizeof too_long);
  VecReader bad_state(bad);
  CHECK(loaded->load_decode_state(bad_state, bad.size(), false).code() == WT_ERR_FORMAT);

  // A budget below one block still attends one block (the best), never nothing.
  p.keep = 0.05f;  // 5 rows
  auto one = make(p, shape);
  one->begin(L, 0);
  REQUIRE(one->decode_request(1, n_cache).kind == ScoreRequest::Kind::window);
  std::vector<int32_t> best_block;
  for (int32_t r = 6 * B; r < L; ++r) best_block.push_back(r);
  for (int32_t r = L; r < n_cache; ++r) best_block.push_back(r);
  CHECK(decide(*one) == best_block);
  // A prompt within one block: nothing to choose.
  one->begin(B, 0);
  CHECK(one->decode_request(1, B + 1).kind == ScoreRequest::Kind::none);

  // A budget of every block asks nothing: the steps attend all rows, as full KV does.
  p.keep = 1.0f;
  auto all = make(p, shape);
  all->begin(L, 0);
  CHECK(all->decode_request(1, n_cache).kind == ScoreRequest::Kind::none);
  // Single rows: the 40 best rows by their summed score.
  p.keep = 0.4f;
  REQUIRE(wt_prune_set_param(&p, "decode_topk_block", "1") == WT_OK);
  auto rows = make(p, shape);
  rows->begin(L, 0);
  REQUIRE(rows->decode_request(1, n_cache).kind == ScoreRequest::Kind::window);
  CHECK(decide(*rows).size() == static_cast<size_t>(40 + 3));
}
