// A prompt's rows go through the feed-forward block in slices of wt_context_params.n_ffn_rows
// (runtime/engine/context_layout.h, ffn_rows()): its gate and up activations are planned for
// that many rows instead of n_ctx. Every op of the block works row by row, so on the CPU the
// logits must be the same bits whatever the slice, for full KV and for a method that drops
// hidden rows part-way (FastKV's token-selective propagation: the slices then cover fewer
// rows), and the arena must shrink by the gate and up rows not planned.
#include <doctest/doctest.h>

#include <cstddef>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "support/real_model.h"
#include "whittle.h"

namespace {

// A tiny Qwen2 GGUF made by tests/reference (no real model needed).
const std::string kTinyModel = std::string(WT_TEST_DATA_DIR) + "/reference/tiny_qwen2.gguf";

wt_context_params params(int32_t n_ctx, int32_t n_ffn_rows, const wt_prune_params& prune) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  cp.prune = prune;
  cp.logits_all = prune.method == WT_PRUNE_FULL;  // a pruned prefill keeps the last row only
  cp.n_ffn_rows = n_ffn_rows;
  return cp;
}

// The logits of every row the context keeps after the prompt (full KV: all of them; pruned:
// the last), then those of n_decode greedy steps, in one vector; *fewest_rows: the fewest
// hidden rows a layer computed in the prefill.
std::vector<float> run(const wt_model* m, const std::vector<wt_token>& prompt, int n_decode, int32_t n_ffn_rows,
                       const wt_prune_params& prune, int32_t* fewest_rows) {
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const int32_t n_ctx = static_cast<int32_t>(prompt.size()) + n_decode + 4;
  const wt_context_params cp = params(n_ctx, n_ffn_rows, prune);
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  *fewest_rows = static_cast<int32_t>(prompt.size());
  wt_prune_stats ps;
  if (prune.method != WT_PRUNE_FULL) {
    REQUIRE(wt_context_get_prune_stats(ctx, &ps) == WT_OK);
    REQUIRE(ps.hidden_rows);
    for (int32_t l = 0; l < ps.n_layer; ++l) *fewest_rows = std::min(*fewest_rows, ps.hidden_rows[l]);
  }
  std::vector<float> out;
  const int32_t first = cp.logits_all ? 0 : static_cast<int32_t>(prompt.size()) - 1;
  for (int32_t r = first; r < static_cast<int32_t>(prompt.size()); ++r) {
    const float* l = nullptr;
    REQUIRE(wt_context_logits(ctx, cp.logits_all ? r : -1, &l) == WT_OK);
    out.insert(out.end(), l, l + info.n_vocab);
  }
  for (int i = 0; i < n_decode; ++i) {
    const float* l = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    int32_t best = 0;
    for (int32_t t = 1; t < info.n_vocab; ++t)
      if (l[t] > l[best]) best = t;
    REQUIRE_MESSAGE(wt_context_decode(ctx, best) == WT_OK, wt_last_error());
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    out.insert(out.end(), l, l + info.n_vocab);
  }
  wt_context_free(ctx);
  return out;
}

uint64_t arena_bytes(const wt_model* m, int32_t n_ctx, int32_t n_ffn_rows) {
  const wt_context_params cp = params(n_ctx, n_ffn_rows, wt_prune_default_params());
  wt_context_plan_info plan;
  REQUIRE_MESSAGE(wt_context_plan(m, &cp, &plan) == WT_OK, wt_last_error());
  return plan.arena_bytes;
}

}  // namespace

TEST_CASE("model: feed-forward slices give the logits of the whole prompt bit for bit (CPU)" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(150);
  wt_prune_params fastkv = wt_prune_default_params();
  fastkv.method = WT_PRUNE_FASTKV;
  fastkv.keep = 0.3f;  // with a window of 8 it prunes a prompt of 150 tokens
  fastkv.window = 8;
  for (const wt_prune_params& prune : {wt_prune_default_params(), fastkv}) {
    CAPTURE(std::string(wt_prune_method_name(prune.method)));
    // n_ctx rows: one slice, the block as it ran before slices.
    int32_t fewest = 0;
    const std::vector<float> whole = run(m, prompt, 4, 1 << 20, prune, &fewest);
    // FastKV's later layers run fewer rows (its TSP rate, 2 x keep: 90 of 150).
    if (prune.method == WT_PRUNE_FASTKV) CHECK(fewest < static_cast<int32_t>(prompt.size()));
    // 1: a slice per row; 7 and 64: a last slice shorter than the others; 0: the default
    // (WT_FFN_ROWS_DEFAULT, more than the prompt: one slice).
    for (const int32_t rows : {1, 7, 64, 0}) {
      CAPTURE(rows);
      const std::vector<float> sliced = run(m, prompt, 4, rows, prune, &fewest);
      REQUIRE(sliced.size() == whole.size());
      CHECK(std::memcmp(sliced.data(), whole.data(), sizeof(float) * whole.size()) == 0);
    }
  }
}

TEST_CASE("model: the arena plans gate and up for the feed-forward slice and not for n_ctx" * doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const int32_t n_ctx = 2 * WT_FFN_ROWS_DEFAULT;
  const uint64_t whole = arena_bytes(m, n_ctx, n_ctx);
  const uint64_t sliced = arena_bytes(m, n_ctx, 7);
  // gate and up, f32 [rows, n_ff] each (64-byte aligned slices); the op workspace may shrink
  // too (the feed-forward matmuls see fewer rows), never grow.
  const auto pair_bytes = [&](int64_t rows) {
    const uint64_t one = (static_cast<uint64_t>(rows) * static_cast<uint64_t>(info.n_ff) * 4 + 63) / 64 * 64;
    return 2 * one;
  };
  CAPTURE(whole);
  CAPTURE(sliced);
  CHECK(whole - sliced >= pair_bytes(n_ctx) - pair_bytes(7));
  // The default plans WT_FFN_ROWS_DEFAULT rows: between the two.
  const uint64_t by_default = arena_bytes(m, n_ctx, 0);
  CHECK(by_default < whole);
  CHECK(by_default > sliced);
  CHECK(whole - by_default >= pair_bytes(n_ctx) - pair_bytes(WT_FFN_ROWS_DEFAULT));
  // More rows than n_ctx plan n_ctx.
  CHECK(arena_bytes(m, n_ctx, 1 << 20) == whole);
}

TEST_CASE("api: a negative n_ffn_rows is refused by name") {
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTinyModel.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.n_ffn_rows = -1;
  wt_context* ctx = nullptr;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);
  CHECK(std::string(wt_last_error()).find("n_ffn_rows -1") != std::string::npos);
  wt_context_plan_info plan;
  CHECK(wt_context_plan(m, &cp, &plan) == WT_ERR_INVALID_ARGUMENT);
  // A struct from before API 10 ends before the field: it is not read.
  cp.struct_size = offsetof(wt_context_params, n_ffn_rows);
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  wt_context_free(ctx);
  wt_model_free(m);
}
