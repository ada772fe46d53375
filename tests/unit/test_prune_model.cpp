// Pruning on the real default model: equivalence with full KV when the budget covers the
// prompt, the invariants of every method at 10/20/40% keep, no allocation in prefill and
// decode, and parameter checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "runtime/api/handles.h"
#include "support/alloc_counter.h"
#include "support/real_model.h"
#include "whittle.h"

namespace {

// decode_topk has no enumerator (whittle.h: methods after the first ten).
const wt_prune_method kDecodeTopk = static_cast<wt_prune_method>(WT_PRUNE_FIRST_EXTENSION);
const wt_prune_method kMethods[] = {WT_PRUNE_STREAMING, WT_PRUNE_SNAPKV,    WT_PRUNE_FASTKV,
                                    WT_PRUNE_GEMFILTER, WT_PRUNE_ASL,       WT_PRUNE_CLAA,
                                    WT_PRUNE_SLIMINFER, WT_PRUNE_TOKENFILTER, WT_PRUNE_ORACLE,
                                    kDecodeTopk};

const wt::test::RealModel& fixture() { return wt::test::real_model(); }
bool have_model() { return wt::test::have_real_model(); }

// f32 KV unless told: these invariants are bit-level, on the cache's f32 rows (the f16
// default is checked against f32 in test_kv_type.cpp).
wt_context* make_ctx(const wt_prune_params& pp, int n_ctx, wt_kv_type kv = WT_KV_F32,
                     wt_matmul_mode mode = WT_MATMUL_FAST) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  cp.prune = pp;
  cp.kv_type = kv;
  cp.matmul_mode = mode;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(fixture().model, &cp, &ctx) == WT_OK, wt_last_error());
  return ctx;
}

wt_prune_params params(wt_prune_method m, float keep) {
  wt_prune_params p = wt_prune_default_params();
  p.method = m;
  p.keep = keep;
  return p;
}

std::vector<float> last_logits(const wt_context* ctx) {
  const float* l = nullptr;
  REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
  const int32_t nv = ctx->owner->model->hp.n_vocab;
  return {l, l + nv};
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

// With an f32 cache, bit for bit. With an f16 cache (the default) full KV's prompt attends
// the cache's rounded rows while a method's pruning pass attends the pass's own f32 rows
// (forward_llama.cpp, append_kv), so their logits part in the low bits: there, with f32
// activations, the same argmax at every step and a small distance are asked. (In the fast
// mode the int8 activations amplify that difference as they do any: measured max abs 1.09
// and one argmax of five apart, the distance of f32 KV from the exact model; kv_type_noise.)
TEST_CASE("prune: a budget covering the prompt gives exactly the full-KV logits for every method" * doctest::test_suite("model")) {
  if (!have_model()) return;
  const std::vector<wt_token> prompt = fixture().prompt(200);
  for (const wt_kv_type kv : {WT_KV_F32, WT_KV_F16}) {
    const std::string kv_name = kv == WT_KV_F32 ? "f32" : "f16";
    CAPTURE(kv_name);
    const wt_matmul_mode mode = kv == WT_KV_F32 ? WT_MATMUL_FAST : WT_MATMUL_F32;
    wt_context* full = make_ctx(params(WT_PRUNE_FULL, 1.0f), 256, kv, mode);
    REQUIRE(wt_context_prefill(full, prompt.data(), prompt.size()) == WT_OK);
    std::vector<std::vector<float>> want{last_logits(full)};
    std::vector<wt_token> next;
    for (int i = 0; i < 4; ++i) {
      next.push_back(argmax(want.back()));
      REQUIRE(wt_context_decode(full, next.back()) == WT_OK);
      want.push_back(last_logits(full));
    }
    wt_context_free(full);

    for (wt_prune_method m : kMethods) {
      const std::string method = wt_prune_method_name(m);
      CAPTURE(method);
      wt_prune_params pp = params(m, 1.0f);
      pp.tf_warmup = 256;  // Token Filtering has no budget: a warm-up longer than the prompt
      wt_context* ctx = make_ctx(pp, 256, kv, mode);
      REQUIRE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK);
      float max_abs = 0;
      for (int i = 0; i < 5; ++i) {
        CAPTURE(i);
        if (i > 0) REQUIRE(wt_context_decode(ctx, next[static_cast<size_t>(i - 1)]) == WT_OK);
        const std::vector<float> got = last_logits(ctx);
        const std::vector<float>& w = want[static_cast<size_t>(i)];
        if (kv == WT_KV_F32) {
          // The same ops over the same rows: bit-identical, not just close.
          CHECK(std::memcmp(got.data(), w.data(), w.size() * sizeof(float)) == 0);
        } else {
          CHECK(argmax(got) == argmax(w));
          for (size_t j = 0; j < w.size(); ++j) max_abs = std::max(max_abs, std::fabs(got[j] - w[j]));
        }
      }
      if (kv == WT_KV_F16) {
        MESSAGE(method << " keep 1 against full KV, f16 cache: logits max abs difference " << max_abs);
        CHECK(max_abs < 0.05f);  // measured 0.017 for every method
      }
      CHECK(wt_context_n_past(ctx) == 204);
      wt_context_free(ctx);
    }
  }
}

// Label long: five minutes under ASan, where every method's host code already runs in the
// allocation and full-budget tests; the Release stage runs it (qemu leaves long and model out).
TEST_CASE("prune: invariants of every method at 10/20/40% keep on the real model" * doctest::test_suite("long")) {
  if (!have_model()) return;
  const int32_t L = 330;  // five full 64-token blocks and a partial one
  const std::vector<wt_token> prompt = fixture().prompt(static_cast<size_t>(L));
  wt_context* full = make_ctx(params(WT_PRUNE_FULL, 1.0f), 400);
  REQUIRE(wt_context_prefill(full, prompt.data(), prompt.size()) == WT_OK);
  const wt::Context& fc = *full->ctx;
  const wt::Hparams& hp = fc.model().hp;
  const size_t row_floats = static_cast<size_t>(hp.head_dim);

  for (wt_prune_method m : kMethods) {
    for (float keep : {0.1f, 0.2f, 0.4f}) {
      const std::string method = wt_prune_method_name(m);
    CAPTURE(method);
      CAPTURE(keep);
      wt_context* ctx = make_ctx(params(m, keep), 400);
      REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
      const wt::Context& c = *ctx->ctx;
      const wt::PrunePolicy& pol = *c.policy();
      const wt_prune_params& rp = c.prune_params();
      wt_prune_stats st;
      REQUIRE(wt_context_get_prune_stats(ctx, &st) == WT_OK);
      const bool reindexed = m == WT_PRUNE_GEMFILTER && !rp.gemfilter_original_positions;
      CHECK(wt_context_n_past(ctx) == (reindexed ? st.n_selected : L));
      // Layers whose rows are still the full prompt compute exactly what full KV computes.
      int32_t exact_until = -1;
      if (m == WT_PRUNE_SNAPKV || m == WT_PRUNE_STREAMING || m == kDecodeTopk) exact_until = hp.n_layer - 1;
      if (m == WT_PRUNE_FASTKV || m == WT_PRUNE_CLAA || m == WT_PRUNE_ASL || m == WT_PRUNE_SLIMINFER)
        exact_until = st.selection_layer >= 0 ? st.selection_layer : hp.n_layer - 1;
      if (m == WT_PRUNE_SLIMINFER) exact_until = rp.slim_layers[0];
      if (m == WT_PRUNE_TOKENFILTER) exact_until = static_cast<int32_t>(std::floor(rp.tf_start * hp.n_layer)) - 1;
      // The SnapKV family's window (GemFilter's too, scored by its window by default) is at most
      // half the budget (runtime/prune/README.md).
      const bool scored = m == WT_PRUNE_SNAPKV || m == WT_PRUNE_FASTKV || m == WT_PRUNE_CLAA || m == WT_PRUNE_ASL ||
                          m == WT_PRUNE_GEMFILTER;
      const int32_t window_w =
          scored ? std::max(1, std::min(rp.window, static_cast<int32_t>(std::floor(keep * L)) / 2)) : rp.window;
      const int32_t floor_w = m == WT_PRUNE_STREAMING ? rp.n_sink + rp.window : window_w;
      const int32_t keep_budget = std::max(static_cast<int32_t>(std::floor(keep * L)), floor_w);

      for (int32_t l = 0; l < hp.n_layer; ++l) {
        CAPTURE(l);
        const int32_t rows = c.kv_len(l);
        CHECK(rows == st.kv_rows[l]);
        CHECK(rows <= pol.kv_budget(l, L));
        // decode_topk keeps every row; its budget is what a decode step attends.
        const bool budgeted = m != WT_PRUNE_TOKENFILTER && m != WT_PRUNE_SLIMINFER && m != kDecodeTopk &&
                              !(m == WT_PRUNE_CLAA && l < rp.claa_min_layer);
        if (budgeted) CHECK(pol.kv_budget(l, L) <= keep_budget);
        for (int32_t h = 0; h < hp.n_head_kv; ++h) {
          const int32_t* pos = c.kv_positions(l, h);
          bool sorted = true, in_range = true;
          for (int32_t r = 0; r < rows; ++r) {
            in_range &= pos[r] >= 0 && pos[r] < L;
            if (r > 0) sorted &= pos[r] > pos[r - 1];
          }
          CHECK(in_range);
          CHECK(sorted);  // ascending and unique
          if (!reindexed) {  // every method keeps its newest W tokens (GemFilter's: prune ranking)
            const int32_t w = m == WT_PRUNE_SLIMINFER || m == WT_PRUNE_TOKENFILTER ? 8 : window_w;
            std::set<int32_t> have(pos, pos + rows);
            bool window = true;
            for (int32_t p = L - w; p < L; ++p) window &= have.count(p) == 1;
            CHECK(window);
          }
          if (l <= exact_until) {
            // Original positions: each kept key equals full KV's key at that position.
            bool same = true;
            for (int32_t r = 0; r < rows; ++r) {
              const float* a = c.k_cache(l).row<float>(h, r);
              const float* b = fc.k_cache(l).row<float>(h, pos[r]);
              same &= std::memcmp(a, b, row_floats * sizeof(float)) == 0;
            }
            CHECK(same);
          }
        }
      }
      // Decode continues at the original positions and stays finite.
      std::vector<float> lg = last_logits(ctx);
      for (int i = 0; i < 3; ++i) {
        REQUIRE(wt_context_decode(ctx, argmax(lg)) == WT_OK);
        lg = last_logits(ctx);
      }
      bool finite = true;
      for (float v : lg) finite &= std::isfinite(v);
      CHECK(finite);
      CHECK(wt_context_n_past(ctx) == (reindexed ? st.n_selected : L) + 3);
      wt_context_free(ctx);
    }
  }
  wt_context_free(full);
}

TEST_CASE("prune: decode_topk prefills as full KV bit for bit and its decode steps attend a subset" * doctest::test_suite("model")) {
  if (!have_model()) return;
  const std::vector<wt_token> prompt = fixture().prompt(200);
  wt_context* full = make_ctx(params(WT_PRUNE_FULL, 1.0f), 256);
  wt_context* topk = make_ctx(params(kDecodeTopk, 0.2f), 256);  // 40 rows: 2 blocks of 16 of 13
  REQUIRE(wt_context_prefill(full, prompt.data(), prompt.size()) == WT_OK);
  REQUIRE(wt_context_prefill(topk, prompt.data(), prompt.size()) == WT_OK);
  std::vector<float> want = last_logits(full), got = last_logits(topk);
  CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
  // The same tokens into both: each step of decode_topk reads two blocks (24-32) of the 200 prompt rows,
  // so its logits move away from full KV's (and stay finite).
  int differ = 0;
  for (int i = 0; i < 4; ++i) {
    const wt_token t = argmax(want);
    REQUIRE(wt_context_decode(full, t) == WT_OK);
    REQUIRE(wt_context_decode(topk, t) == WT_OK);
    want = last_logits(full);
    got = last_logits(topk);
    differ += std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) != 0;
    bool finite = true;
    for (float v : got) finite &= std::isfinite(v);
    CHECK(finite);
  }
  CHECK(differ == 4);
  wt_prune_stats st;
  REQUIRE(wt_context_get_prune_stats(topk, &st) == WT_OK);
  for (int32_t l = 0; l < topk->ctx->model().hp.n_layer; ++l) CHECK(st.kv_rows[l] == 200);
  wt_context_free(topk);
  wt_context_free(full);
}

TEST_CASE("prune: prefill and decode allocate nothing for every method with and without the ranking tap" * doctest::test_suite("model")) {
  if (!have_model()) return;
  // 192 tokens (was 300): every method's window and blocks still fit at keep 0.2,
  // and the ASan stage's run of 40 prefills takes ~2 minutes instead of ~4.
  const std::vector<wt_token> prompt = fixture().prompt(192);
  // The counter does see an allocation.
  wt::test::alloc_counter_arm(true);
  std::vector<int>* probe = new std::vector<int>(100);
  wt::test::alloc_counter_arm(false);
  delete probe;
  REQUIRE(wt::test::alloc_counter_count() >= 2);
  for (int32_t record : {0, 1}) {
    for (wt_prune_method m : kMethods) {
      const std::string method = wt_prune_method_name(m);
      CAPTURE(method);
      CAPTURE(record);
      wt_prune_params pp = params(m, 0.2f);
      pp.slim_decode_keep = 0.5f;  // exercise SlimInfer's decode re-selection too
      pp.record_ranking = record;
      wt_context* ctx = make_ctx(pp, 400);
      // A first run lets the worker threads finish starting (under ASan a starting thread
      // mallocs in libc); what is counted is a second prefill after a reset.
      REQUIRE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK);
      wt_context_reset(ctx);
      wt::test::alloc_counter_arm(true);
      const wt_status st = wt_context_prefill(ctx, prompt.data(), prompt.size());
      for (int i = 0; i < 4 && st == WT_OK; ++i) (void)wt_context_decode(ctx, 42);
      // Reading the ranking back is part of the hot path a benchmark runs.
      const float* ranking = nullptr;
      int32_t n = 0;
      const wt_status rs = record ? wt_context_get_token_ranking(ctx, -1, &ranking, &n) : WT_OK;
      wt::test::alloc_counter_arm(false);
      REQUIRE(st == WT_OK);
      CHECK(rs == WT_OK);
      CHECK(wt::test::alloc_counter_count() == 0);
      wt_context_free(ctx);
    }
  }
}

TEST_CASE("prune: invalid parameters are refused with the parameter named") {
  if (!have_model()) return;
  struct Case {
    const char* key;
    const char* value;
    wt_prune_method method;
    const char* named;
  };
  const Case cases[] = {
      {"budget", "4", WT_PRUNE_SNAPKV, "budget"},      {"asl_tau", "0", WT_PRUNE_ASL, "asl_tau"},
      {"asl_tau", "-1", WT_PRUNE_ASL, "asl_tau"},      {"layer", "30", WT_PRUNE_FASTKV, "layer"},
      {"keep", "0", WT_PRUNE_FASTKV, "keep"},          {"keep", "1.5", WT_PRUNE_CLAA, "keep"},
      {"pool_kernel", "4", WT_PRUNE_SNAPKV, "pool_kernel"}, {"slim_layer2", "40", WT_PRUNE_SLIMINFER, "slim_layers"},
      {"tf_target", "1", WT_PRUNE_TOKENFILTER, "tf_target"}, {"asl_min_layer", "31", WT_PRUNE_ASL, "asl_min_layer"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.key);
    wt_prune_params p = wt_prune_default_params();
    p.method = k.method;
    REQUIRE(wt_prune_set_param(&p, k.key, k.value) == WT_OK);
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 64;
    cp.prune = p;
    wt_context* ctx = nullptr;
    CHECK(wt_context_create(fixture().model, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
    CHECK(std::string(wt_last_error()).find(k.named) != std::string::npos);
    CHECK(ctx == nullptr);
  }
  wt_prune_params p = wt_prune_default_params();
  CHECK(wt_prune_set_param(&p, "no_such_param", "1") == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_set_param(&p, "keep", "abc") == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_set_param(&p, "method", "sliminfer") == WT_OK);
  CHECK(p.method == WT_PRUNE_SLIMINFER);
  wt_prune_method m;
  CHECK(wt_prune_method_from_name("nope", &m) == WT_ERR_INVALID_ARGUMENT);
  // NULL arguments of every new entry point: a status and a message, never a crash.
  CHECK(wt_prune_method_from_name(nullptr, &m) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_method_from_name("asl", nullptr) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_set_param(nullptr, "keep", "0.2") == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_set_param(&p, nullptr, "0.2") == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_set_param(&p, "keep", nullptr) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).size() > 0);
  wt_prune_stats ps;
  CHECK(wt_context_get_prune_stats(nullptr, &ps) == WT_ERR_INVALID_ARGUMENT);
  // What a C caller can store in the enum field (99 is no method; set as an int, since a
  // C++ cast to the enum type would itself be out of range).
  wt_prune_params bad = wt_prune_default_params();
  const int32_t not_a_method = 99;
  std::memcpy(&bad.method, &not_a_method, sizeof not_a_method);
  CHECK(std::string(wt_prune_method_name(static_cast<wt_prune_method>(12))) == "unknown");
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.prune = bad;
  wt_context* ctx = nullptr;
  CHECK(wt_context_create(fixture().model, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("prune.method") != std::string::npos);
}

// wt_prune_stats.asl_ratios when the test fires: NULL before any pruned prefill; then 1 at
// the first tested layer, no ratio under tau before the selection layer (1 there cannot
// fire: it defines V_init), a ratio under tau at it, NaN after it; two-pass ASL reports the
// first pass's curve. tau 1e3: this model's ratios after L_min are 1-200 on this prompt
// (docs/results/asl-calibration.md), so it fires soon after L_min.
TEST_CASE("prune: ASL's ratio curve ends at the layer that fired in one pass and two" * doctest::test_suite("model")) {
  if (!have_model()) return;
  const std::vector<wt_token> prompt = fixture().prompt(300);
  for (bool two_pass : {false, true}) {
    CAPTURE(two_pass);
    wt_prune_params pp = params(WT_PRUNE_ASL, 0.2f);
    pp.asl_tau = 1e3f;
    pp.asl_two_pass = two_pass;
    wt_context* ctx = make_ctx(pp, 320);
    wt_prune_stats st{};
    REQUIRE(wt_context_get_prune_stats(ctx, &st) == WT_OK);
    CHECK(st.asl_ratios == nullptr);
    REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
    REQUIRE(wt_context_get_prune_stats(ctx, &st) == WT_OK);
    REQUIRE(st.triggered);
    REQUIRE(st.asl_ratios != nullptr);
    const int32_t sel = st.selection_layer;
    int32_t first = -1;
    for (int32_t l = 0; l < st.n_layer; ++l) {
      CAPTURE(l);
      const double r = st.asl_ratios[l];
      if (l > sel) {
        CHECK(std::isnan(r));
        continue;
      }
      if (std::isnan(r)) {
        CHECK(first < 0);  // untested layers come only before the first tested one
        continue;
      }
      if (first < 0) {
        first = l;
        CHECK(r == 1.0);
      } else if (l < sel) {
        CHECK(r >= pp.asl_tau);
      }
    }
    REQUIRE(first >= 0);
    CHECK(first < sel);
    CHECK(st.asl_ratios[sel] < pp.asl_tau);
    wt_context_free(ctx);
  }
}
