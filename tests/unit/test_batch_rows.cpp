// A prompt's rows go through the model n_batch_rows at a time (wt_context_params.n_batch_rows;
// runtime/engine/context_layout.h, pass_rows(), slice_rows() and ffn_rows()). Full KV runs a
// longer prompt in passes of that many rows, each appending to the KV as a prompt given in
// parts would; a pruned prompt, and any prompt with the KV pager, runs as one pass whose
// layers go in slices of that many rows (a policy's: at least twice its window). The
// activations are planned for those rows instead of n_ctx (a pass of n_ctx: all but x, k and
// v). On the CPU the logits must be the same bits whatever the value: for full KV's passes
// (every row's logits), the pager's slices, and every method's slices (methods that drop
// hidden rows part-way, skip rows' attention or restart included); the arena must shrink by
// the rows not planned, and the progress callback must count the passes.
#include <doctest/doctest.h>

#include <cstddef>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/real_model.h"
#include "whittle.h"

namespace {

// A tiny Qwen2 GGUF made by tests/reference (no real model needed).
const std::string kTinyModel = std::string(WT_TEST_DATA_DIR) + "/reference/tiny_qwen2.gguf";

wt_context_params params(int32_t n_ctx, int32_t n_batch_rows, const wt_prune_params& prune, int32_t kv_device_blocks = 0) {
  wt_context_params cp = wt_context_default_params();
  cp.kv_device_blocks = kv_device_blocks;  // > 0: the KV pager with a pool of that many blocks
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  cp.prune = prune;
  cp.logits_all = prune.method == WT_PRUNE_FULL;  // a pruned prefill keeps the last row only
  cp.n_batch_rows = n_batch_rows;
  return cp;
}

// The logits of every row the context keeps after the prompt (full KV: all of them; pruned:
// the last), then those of n_decode greedy steps, in one vector; *fewest_rows: the fewest
// hidden rows a layer computed in the prefill.
std::vector<float> run(const wt_model* m, const std::vector<wt_token>& prompt, int n_decode, int32_t n_batch_rows,
                       const wt_prune_params& prune, int32_t* fewest_rows, int32_t kv_device_blocks = 0) {
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const int32_t n_ctx = static_cast<int32_t>(prompt.size()) + n_decode + 4;
  const wt_context_params cp = params(n_ctx, n_batch_rows, prune, kv_device_blocks);
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, std::string(wt_last_error()));
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
    REQUIRE_MESSAGE(wt_context_decode(ctx, best) == WT_OK, std::string(wt_last_error()));
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    out.insert(out.end(), l, l + info.n_vocab);
  }
  wt_context_free(ctx);
  return out;
}

uint64_t arena_bytes(const wt_model* m, int32_t n_ctx, int32_t n_batch_rows) {
  const wt_context_params cp = params(n_ctx, n_batch_rows, wt_prune_default_params());
  wt_context_plan_info plan;
  REQUIRE_MESSAGE(wt_context_plan(m, &cp, &plan) == WT_OK, wt_last_error());
  return plan.arena_bytes;
}

}  // namespace

TEST_CASE("model: passes and slices of n_batch_rows give the logits of the whole prompt bit for bit (CPU)" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(151);
  // Every method: each asks other questions before attention (window scores, block scores, KV
  // similarities, none) and acts on other things after it (KV rows, rows skipped, rows
  // dropped, a restart), all of which must see the same values whatever the slices.
  std::vector<wt_prune_method> methods;
  for (const char* name : {"full", "streaming", "snapkv", "fastkv", "gemfilter", "asl", "claa", "sliminfer",
                           "tokenfilter", "oracle", "decode_topk"}) {
    wt_prune_method method;
    REQUIRE(wt_prune_method_from_name(name, &method) == WT_OK);
    methods.push_back(method);
  }
  for (const wt_prune_method method : methods) {
    wt_prune_params prune = wt_prune_default_params();
    prune.method = method;
    if (method != WT_PRUNE_FULL) {
      prune.keep = 0.3f;  // with a window of 8 it prunes a prompt of 151 tokens
      prune.window = 8;
    }
    CAPTURE(std::string(wt_prune_method_name(prune.method)));
    // n_ctx rows: one pass, one slice, as the model ran before passes and slices.
    int32_t fewest = 0;
    const std::vector<float> whole = run(m, prompt, 4, 1 << 20, prune, &fewest);
    // FastKV's later layers run fewer rows (its TSP rate, 2 x keep: 90 of 151).
    if (prune.method == WT_PRUNE_FASTKV) CHECK(fewest < static_cast<int32_t>(prompt.size()));
    // Full KV: passes of 7 and 64 (a last pass shorter than the others); 1 and 2 (passes of
    // 3, the least: a one-row pass would run the kernels of decode steps, which round
    // differently; the last three rows as 2 and 2) and 150 (149 and 2, not 150 and 1, for the
    // same reason). A policy's pass: each layer in slices of as many (at least 16, twice the
    // window, which the last slice must hold: 10 slices of 15 and 16 rows), the feed-forward
    // block in slices of 7, 64 or 150; 150 rows: slices of 76 and 75. 0: the default
    // (WT_BATCH_ROWS_DEFAULT, more than the prompt: one pass, one slice).
    for (const int32_t rows : {1, 2, 7, 64, 150, 0}) {
      CAPTURE(rows);
      const std::vector<float> sliced = run(m, prompt, 4, rows, prune, &fewest);
      REQUIRE(sliced.size() == whole.size());
      CHECK(std::memcmp(sliced.data(), whole.data(), sizeof(float) * whole.size()) == 0);
    }
  }
}

// A prompt given after a pruned one appends to the KV as one pass of its rows, in slices
// (its policy asks nothing then); with an f32 cache the K and V matmuls write each slice's
// rows straight into the cache. Its logits and the decode steps' must be the same bits as
// in one slice.
TEST_CASE("model: a prompt after a pruned one runs in slices over an f32 cache bit for bit (CPU)" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const std::vector<wt_token> text = wt::test::real_model().prompt(191);
  const auto logits_after = [&](const wt_prune_params& prune, int32_t n_batch_rows) {
    wt_context_params cp = params(200, n_batch_rows, prune);
    cp.kv_type = WT_KV_F32;
    wt_context* ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
    // 151 tokens pruned, then 40 more appended (as 14, 13 and 13 at n_batch_rows 7: slices of
    // at least twice the window of 8).
    REQUIRE_MESSAGE(wt_context_prefill(ctx, text.data(), 151) == WT_OK, std::string(wt_last_error()));
    REQUIRE_MESSAGE(wt_context_prefill(ctx, text.data() + 151, 40) == WT_OK, std::string(wt_last_error()));
    std::vector<float> out;
    for (int i = 0; i < 4; ++i) {
      const float* l = nullptr;
      REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
      out.insert(out.end(), l, l + info.n_vocab);
      int32_t best = 0;
      for (int32_t t = 1; t < info.n_vocab; ++t)
        if (l[t] > l[best]) best = t;
      REQUIRE_MESSAGE(wt_context_decode(ctx, best) == WT_OK, std::string(wt_last_error()));
    }
    wt_context_free(ctx);
    return out;
  };
  for (const wt_prune_method method : {WT_PRUNE_SNAPKV, WT_PRUNE_FASTKV}) {
    wt_prune_params prune = wt_prune_default_params();
    prune.method = method;
    prune.keep = 0.3f;
    prune.window = 8;
    CAPTURE(std::string(wt_prune_method_name(method)));
    const std::vector<float> whole = logits_after(prune, 1 << 20), sliced = logits_after(prune, 7);
    REQUIRE(sliced.size() == whole.size());
    CHECK(std::memcmp(sliced.data(), whole.data(), sizeof(float) * whole.size()) == 0);
  }
}

TEST_CASE("model: with the KV pager a prompt is one pass whose layers run in slices of the same bits (CPU)" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(151);
  // A pool of 3 blocks of 64 rows (one layer's, the least it takes). Passes would gather every
  // layer's earlier rows back into the staging for each pass, so the prompt is one pass, whose
  // layers run in slices of n_batch_rows: x, k and v are planned for n_ctx rows whatever
  // n_batch_rows says, xn, q, attn, gate and up for the slices.
  int32_t fewest = 0;
  const std::vector<float> whole = run(m, prompt, 4, 1 << 20, wt_prune_default_params(), &fewest, 3);
  for (const int32_t rows : {7, 64}) {
    CAPTURE(rows);
    const std::vector<float> sliced = run(m, prompt, 4, rows, wt_prune_default_params(), &fewest, 3);
    REQUIRE(sliced.size() == whole.size());
    CHECK(std::memcmp(sliced.data(), whole.data(), sizeof(float) * whole.size()) == 0);
  }
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const int32_t n_ctx = 1024;
  const auto plan = [&](int32_t rows, int32_t blocks) {
    const wt_context_params cp = params(n_ctx, rows, wt_prune_default_params(), blocks);
    wt_context_plan_info p;
    REQUIRE_MESSAGE(wt_context_plan(m, &cp, &p) == WT_OK, std::string(wt_last_error()));
    return p.arena_bytes;
  };
  // 64 rows against 1024: without the pager every activation shrinks with the passes; with it
  // all but x, k and v (the default model's rows: n_embd floats for x, xn, q and attn alike,
  // n_head_kv x head_dim for k and for v, each a whole number of 64-byte lines).
  const uint64_t kv = static_cast<uint64_t>(info.n_head_kv) * static_cast<uint64_t>(info.head_dim);
  const uint64_t slice_rows = 3 * static_cast<uint64_t>(info.n_embd) * 4 * (n_ctx - 64);
  const uint64_t pass_rows = (static_cast<uint64_t>(info.n_embd) + 2 * kv) * 4 * (n_ctx - 64);
  const uint64_t shrink = plan(1 << 20, 0) - plan(64, 0), paged_shrink = plan(1 << 20, 16) - plan(64, 16);
  CAPTURE(shrink);
  CAPTURE(paged_shrink);
  CHECK(paged_shrink >= slice_rows);
  CHECK(shrink - paged_shrink == pass_rows);
}

TEST_CASE("model: the progress callback counts full KV's passes up to 1" * doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(150);
  struct Seen {
    std::vector<float> values;
    int stop_after = -1;  // >= 0: false from that call on
  } seen;
  wt_context_params cp = params(160, 64, wt_prune_default_params());  // passes of 64, 64, 22
  cp.progress = [](float progress, void* user) {
    Seen* s = static_cast<Seen*>(user);
    s->values.push_back(progress);
    return s->stop_after < 0 || static_cast<int>(s->values.size()) <= s->stop_after;
  };
  cp.progress_user = &seen;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, std::string(wt_last_error()));
  // One call per layer of every pass, never falling, the last one 1, and where the first
  // pass ends: 64 of 150 rows.
  REQUIRE(seen.values.size() == static_cast<size_t>(3 * info.n_layer));
  CHECK(std::is_sorted(seen.values.begin(), seen.values.end()));
  CHECK(seen.values.back() == doctest::Approx(1.0f));
  CHECK(seen.values[static_cast<size_t>(info.n_layer) - 1] == doctest::Approx(64.0f / 150.0f));
  // Stopped in the second pass: WT_ERR_ABORTED, and the context starts over (no KV kept).
  wt_context_reset(ctx);
  seen.values.clear();
  seen.stop_after = info.n_layer + 2;
  CHECK(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_ERR_ABORTED);
  CHECK(wt_context_n_past(ctx) == 0);
  wt_context_free(ctx);
}

TEST_CASE("model: the arena plans full KV's activations for n_batch_rows rows and not for n_ctx" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const int32_t n_ctx = 2 * WT_BATCH_ROWS_DEFAULT;
  const uint64_t whole = arena_bytes(m, n_ctx, n_ctx);
  const uint64_t sliced = arena_bytes(m, n_ctx, 7);
  // Per row: x, xn, q and attn (n_embd f32 each: the default model's n_head x head_dim is
  // n_embd), k and v (n_head_kv x head_dim), gate and up (n_ff), each tensor 64-byte aligned;
  // the op workspace may shrink too (the matmuls see fewer rows), never grow.
  const int64_t kv_width = static_cast<int64_t>(info.n_head_kv) * (info.n_embd / info.n_head);
  const auto rows_bytes = [&](int64_t rows) {
    uint64_t sum = 0;
    const int64_t e = info.n_embd, f = info.n_ff;
    for (const int64_t width : {e, e, e, e, kv_width, kv_width, f, f})
      sum += (static_cast<uint64_t>(rows * width) * 4 + 63) / 64 * 64;
    return sum;
  };
  CAPTURE(whole);
  CAPTURE(sliced);
  CHECK(whole - sliced >= rows_bytes(n_ctx) - rows_bytes(7));
  // The default plans WT_BATCH_ROWS_DEFAULT rows: between the two.
  const uint64_t by_default = arena_bytes(m, n_ctx, 0);
  CHECK(by_default < whole);
  CHECK(by_default > sliced);
  CHECK(whole - by_default >= rows_bytes(n_ctx) - rows_bytes(WT_BATCH_ROWS_DEFAULT));
  // More rows than n_ctx plan n_ctx.
  CHECK(arena_bytes(m, n_ctx, 1 << 20) == whole);
}

TEST_CASE("api: a negative n_batch_rows is refused by name") {
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTinyModel.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.n_batch_rows = -1;
  wt_context* ctx = nullptr;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);
  CHECK(std::string(wt_last_error()).find("n_batch_rows -1") != std::string::npos);
  wt_context_plan_info plan;
  CHECK(wt_context_plan(m, &cp, &plan) == WT_ERR_INVALID_ARGUMENT);
  // A struct from before API 10 ends before the field: it is not read.
  cp.struct_size = offsetof(wt_context_params, n_batch_rows);
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
  wt_context_free(ctx);
  wt_model_free(m);
}

TEST_CASE("api: over its memory budget the default n_batch_rows runs fewer rows at once with the same logits") {
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTinyModel.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const int32_t n_ctx = 512;
  std::vector<wt_token> prompt(420);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<wt_token>((7 * i + 3) % info.n_vocab);
  // Full KV runs the prompt in passes of the rows; FastKV in one pass whose layers run in
  // slices of them.
  for (const wt_prune_method method : {WT_PRUNE_FULL, WT_PRUNE_FASTKV}) {
    CAPTURE(std::string(wt_prune_method_name(method)));
    wt_prune_params prune = wt_prune_default_params();
    prune.method = method;
    prune.keep = 0.3f;
    prune.window = 8;
    const auto make = [&](int32_t rows, uint64_t budget) {
      wt_context_params cp = params(n_ctx, rows, prune);
      cp.logits_all = false;
      cp.memory_budget_bytes = budget;
      return cp;
    };
    const auto plan_of = [&](int32_t rows, uint64_t budget, wt_context_plan_info* out) {
      const wt_context_params cp = make(rows, budget);
      REQUIRE_MESSAGE(wt_context_plan(m, &cp, out) == WT_OK, wt_last_error());
    };
    // Greedy: the prompt's last logits and those of 4 decode steps; the context's stats.
    const auto logits_of = [&](int32_t rows, uint64_t budget, wt_context_stats* st) {
      const wt_context_params cp = make(rows, budget);
      wt_context* ctx = nullptr;
      REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
      REQUIRE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK);
      std::vector<float> out;
      for (int step = 0; step < 5; ++step) {
        const float* l = nullptr;
        REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
        out.insert(out.end(), l, l + info.n_vocab);
        if (step < 4)
          REQUIRE(wt_context_decode(ctx, static_cast<wt_token>(std::max_element(l, l + info.n_vocab) - l)) == WT_OK);
      }
      REQUIRE(wt_context_get_stats(ctx, st) == WT_OK);
      wt_context_free(ctx);
      return out;
    };
    wt_context_plan_info whole, half;
    plan_of(0, 0, &whole);  // the default: every row at once (n_ctx < WT_BATCH_ROWS_DEFAULT)
    plan_of(n_ctx / 2, 0, &half);
    CHECK(whole.batch_rows == n_ctx);
    CHECK(half.batch_rows == n_ctx / 2);
    REQUIRE(half.context_bytes < whole.context_bytes);
    // A budget between the two: the default takes the most rows in steps of 64 that fit it.
    const uint64_t budget = (whole.context_bytes + half.context_bytes) / 2;
    wt_context_plan_info fitted, one_more;
    plan_of(0, budget, &fitted);
    CAPTURE(fitted.batch_rows);
    CHECK(fitted.batch_rows % 64 == 0);
    CHECK(fitted.batch_rows >= n_ctx / 2);
    CHECK(fitted.batch_rows < static_cast<int32_t>(prompt.size()));  // more than one pass or slice
    CHECK(fitted.context_bytes <= budget);
    plan_of(fitted.batch_rows + 64, 0, &one_more);
    CHECK(one_more.context_bytes > budget);
    // The context allocates that plan and runs those rows at once: the CPU's logits are those
    // of every row at once, bit for bit.
    wt_context_stats st_fitted{}, st_whole{};
    std::string warned;  // the library says so, once, at creation
    struct Unset {       // the callback goes with `warned`, also when a REQUIRE ends the case
      ~Unset() { wt_set_log_callback(nullptr, nullptr); }
    } unset;
    wt_set_log_callback(
        [](wt_log_level level, const char* text, void* user) {
          if (level == WT_LOG_WARN) *static_cast<std::string*>(user) += text;
        },
        &warned);
    const std::vector<float> a = logits_of(0, budget, &st_fitted);
    CHECK(warned.find("the prompt runs " + std::to_string(fitted.batch_rows) + " rows at once") != std::string::npos);
    const std::vector<float> b = logits_of(0, 0, &st_whole);
    CHECK(st_fitted.arena_bytes == fitted.arena_bytes);
    CHECK(st_fitted.batch_rows == fitted.batch_rows);
    CHECK(st_whole.arena_bytes == whole.arena_bytes);
    CHECK(st_whole.batch_rows == n_ctx);
    CHECK(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    // Rows the caller set are not lowered: refused with the rows that would fit.
    wt_context_params cp = make(n_ctx, budget);
    wt_context* ctx = nullptr;
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_BUDGET);
    CHECK(ctx == nullptr);
    std::string msg = wt_last_error();
    CAPTURE(msg);
    CHECK(msg.find("or an n_batch_rows of " + std::to_string(fitted.batch_rows) + " (the most in steps of 64") !=
          std::string::npos);
    // A budget that no step of rows fits: refused, the parts at 64 rows at once, and an n_ctx
    // that a context with the default rows then fits (by lowering them).
    wt_context_plan_info fewest;
    plan_of(64, 0, &fewest);
    cp = make(0, fewest.context_bytes - 1);
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_BUDGET);
    msg = wt_last_error();
    CHECK(msg.find("at 64 rows at once") != std::string::npos);
    char needs[64];  // the figures are those at 64 rows, not at the rows asked
    std::snprintf(needs, sizeof needs, "the context needs %.1f MiB", static_cast<double>(fewest.context_bytes) / 1048576.0);
    CHECK(msg.find(needs) != std::string::npos);
    // wt_context_plan gives that plan: the one the refusal counts.
    wt_context_plan_info refused;
    const wt_context_params refused_cp = cp;
    REQUIRE_MESSAGE(wt_context_plan(m, &refused_cp, &refused) == WT_OK, wt_last_error());
    CHECK(refused.batch_rows == fewest.batch_rows);
    CHECK(refused.context_bytes == fewest.context_bytes);
    const size_t at = msg.find("n_ctx of at most ");
    REQUIRE(at != std::string::npos);
    cp.n_ctx = std::atoi(msg.c_str() + at + std::strlen("n_ctx of at most "));
    CHECK(cp.n_ctx > 64);
    CHECK(cp.n_ctx < n_ctx);
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
    wt_context_free(ctx);
  }
  wt_model_free(m);
}
