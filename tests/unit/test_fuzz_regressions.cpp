// Inputs the fuzz harnesses (fuzz/) found crashing the library, replayed after the fix. Each
// case names the harness that found it and what went wrong; fuzz/README.md describes how a
// finding becomes a case here.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/fast_math.h"
#include "runtime/engine/state_io.h"
#include "support/gguf_writer.h"
#include "whittle.h"

namespace {

const std::string kTiny = std::string(WT_TEST_DATA_DIR) + "/reference/tiny_qwen2.gguf";
const std::string kFound = std::string(WT_TEST_DATA_DIR) + "/fuzz_regressions/";

bool contains(const char* haystack, const char* needle) { return std::strstr(haystack, needle) != nullptr; }

// What fuzz_gguf does with a model that loads: a short context, a prefill, a decode and a
// greedy sample; every call must succeed (garbage weights give garbage logits, nothing else).
void run_found_model(const std::string& path) {
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(path.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 16;
  cp.n_threads = 1;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  const wt_token prompt[3] = {0, info.n_vocab / 2, info.n_vocab - 1};
  CHECK(wt_context_prefill(ctx, prompt, 3) == WT_OK);
  CHECK(wt_context_decode(ctx, info.n_vocab - 1) == WT_OK);
  wt_sampler* s = nullptr;
  REQUIRE(wt_sampler_create(m, nullptr, &s) == WT_OK);
  wt_token next = -1;
  CHECK(wt_sampler_sample(s, ctx, &next) == WT_OK);
  CHECK(next >= 0);
  CHECK(next < info.n_vocab);
  wt_sampler_free(s);
  wt_context_free(ctx);
  wt_model_free(m);
}

// A C caller may store any int in an enum field; C++ must not load it as the enum type.
template <typename E>
void store_raw(E* field, int32_t v) {
  std::memcpy(field, &v, sizeof v);
}

}  // namespace

TEST_CASE("fuzz regression: enum fields outside their enumerators are refused and not loaded (fuzz_api)") {
  // fuzz_api: wt_context_plan compared matmul_mode 0x80000000 as a wt_matmul_mode, undefined
  // behaviour (UBSan: "load of value 2147483648, which is not a valid value"); wt_model_load
  // did the same with backend. Both are now read as the int the caller stored.
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTiny.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 8;
  for (const int32_t bad : {INT32_MIN, 2, 7, -1}) {
    CAPTURE(bad);
    store_raw(&cp.matmul_mode, bad);
    wt_context_plan_info plan;
    CHECK(wt_context_plan(m, &cp, &plan) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), ("matmul_mode " + std::to_string(bad)).c_str()));
    wt_context* ctx = nullptr;
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
    CHECK(ctx == nullptr);
  }
  wt_model_free(m);

  wt_model_params mp = wt_model_default_params();
  for (const int32_t bad : {INT32_MIN, 3, 7, -1}) {
    CAPTURE(bad);
    store_raw(&mp.backend, bad);
    wt_model* other = nullptr;
    CHECK(wt_model_load(kTiny.c_str(), &mp, &other) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), ("unknown backend kind " + std::to_string(bad)).c_str()));
    CHECK(other == nullptr);
  }
}

TEST_CASE("fuzz regression: pruning token counts beyond any context are refused (fuzz_api)") {
  // fuzz_api: budget = INT32_MAX overflowed computing the default fastkv_tsp_len (2 * budget),
  // signed overflow in wt_context_plan; n_sink + window, slim_block sums and n_prompt +
  // oracle_tokens had the same reach. Every token count is now at most the largest n_ctx.
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTiny.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  const struct {
    const char* method;
    const char* key;
  } cases[] = {{"fastkv", "budget"},         {"streaming", "n_sink"},   {"streaming", "window"},
               {"sliminfer", "slim_block"},  {"sliminfer", "slim_unit"}, {"oracle", "oracle_tokens"},
               {"gemfilter", "pool_kernel"}, {"fastkv", "fastkv_tsp_len"}, {"sliminfer", "slim_query"}};
  for (const auto& c : cases) {
    CAPTURE(c.method);
    CAPTURE(c.key);
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 32;
    REQUIRE(wt_prune_set_param(&cp.prune, "method", c.method) == WT_OK);
    REQUIRE(wt_prune_set_param(&cp.prune, c.key, "2147483647") == WT_OK);
    wt_context_plan_info plan;
    CHECK(wt_context_plan(m, &cp, &plan) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), (std::string(c.key) + " 2147483647 is above the limit of 1048576").c_str()));
    // The largest count is accepted.
    REQUIRE(wt_prune_set_param(&cp.prune, c.key, "1048575") == WT_OK);
    const wt_status st = wt_context_plan(m, &cp, &plan);
    CHECK_MESSAGE(!contains(wt_last_error(), "is above"), wt_status_string(st), ": ", wt_last_error());
  }
  wt_model_free(m);
}

TEST_CASE("fuzz regression: an integer parameter kept in extra must be a whole int32 (fuzz_api)") {
  // fuzz_api: snapkv_pyramid (an i32 kept in extra, a double) stored as 3.4e38 reached
  // SnapKV's constructor, whose conversion to int32 is undefined; a parameter without a
  // range was never checked. Now refused with the reason, as 0.5 and NaN are.
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTiny.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  for (double bad : {3.4e38, -3.0e9, 0.5, std::nan("")}) {
    CAPTURE(bad);
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 32;
    REQUIRE(wt_prune_set_param(&cp.prune, "method", "snapkv") == WT_OK);
    REQUIRE(wt_prune_set_param(&cp.prune, "snapkv_pyramid", "2") == WT_OK);
    int set = 0;
    for (wt_prune_extra_param& e : cp.prune.extra)
      if (e.key != 0 && e.value == 2.0) e.value = bad, ++set;
    REQUIRE(set == 1);
    wt_context_plan_info plan;
    CHECK(wt_context_plan(m, &cp, &plan) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), "snapkv_pyramid"));
    if (!std::isnan(bad)) CHECK(contains(wt_last_error(), "is not a whole number in the int32 range"));  // NaN: out of range
  }
  wt_model_free(m);
}

TEST_CASE("fuzz regression: NaN attention scores stay NaN without undefined behaviour (fuzz_gguf)") {
  // fuzz_gguf: a tiny model whose weights make attention scores NaN; fast_exp converted
  // floor(NaN) to int32_t, undefined (UBSan: "nan is outside the range of representable
  // values of type 'int'"). It now maps NaN to NaN. The ASan/UBSan build (which names
  // float-cast-overflow, not in gcc's "undefined") is the one that fails without the fix:
  // elsewhere the conversion happens to give a NaN too.
  CHECK(std::isnan(wt::cpu::fast_exp(std::numeric_limits<float>::quiet_NaN())));
  CHECK(wt::cpu::fast_exp(0.0f) == doctest::Approx(1.0f));
  CHECK(wt::cpu::fast_exp(-1000.0f) < 1e-30f);

  run_found_model(kFound + "gguf_nan_attention_scores.gguf");
}

TEST_CASE("fuzz regression: non-finite activations quantize without int32 overflow (fuzz_gguf)") {
  // fuzz_gguf: a tiny model whose activations overflow to inf/NaN. The AVX2 and AVX-512
  // activation quantizers map them to INT32_MIN lanes and act_store_chunk added two such
  // half-block sums in int32 (UBSan: signed integer overflow). The sum is now 64-bit. A CPU
  // without AVX2 runs the scalar quantizer, which clamps first, and passes either way. Once
  // f16 became the default KV type (2026-12-02) the model's infinities reached the AVX-512
  // quantizer's own lane sum, GCC's _mm512_reduce_add_epi32 (a scalar int addition at its
  // end): the lanes are now summed in wrapping vector adds.
  run_found_model(kFound + "gguf_nonfinite_activation_sums.gguf");
}

TEST_CASE("fuzz regression: an abort request stops a 2-token prefill of every method (fuzz_api)") {
  // fuzz_api (fuzz/open_findings until now): after wt_context_reset and wt_context_abort, a
  // 2-token prefill returned WT_OK: GemFilter with its filter at layer 0 left its first pass
  // there, before the pass's first abort check, and its second pass over the one kept token
  // ran as a one-row step, which never checked. Every pass of a prefill now checks.
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTiny.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  for (int32_t method = 0; method <= WT_PRUNE_ORACLE; ++method) {
    CAPTURE(method);
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 16;
    cp.n_threads = 1;
    cp.prune.method = static_cast<wt_prune_method>(method);
    cp.prune.keep = 0.5f;
    cp.prune.layer = 0;  // GemFilter's filter layer 0: its first pass ends before any check
    cp.prune.asl_obs_layers = 1;  // layer parameters within the tiny model's two layers
    cp.prune.claa_n_layers = 1;
    cp.prune.claa_min_layer = 0;
    if (cp.prune.method == WT_PRUNE_SLIMINFER) {  // three increasing pruning layers need three layers
      MESSAGE("SKIP SlimInfer: the 2-layer tiny model has no room for its three pruning layers");
      continue;
    }
    wt_context* ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    const wt_token two[2] = {0, 1};
    wt_context_abort(ctx);
    CHECK(wt_context_prefill(ctx, two, 2) == WT_ERR_ABORTED);
    CHECK(wt_context_n_past(ctx) == 0);
    CHECK(wt_context_prefill(ctx, two, 2) == WT_OK);  // the request was consumed
    wt_context_free(ctx);
  }
  wt_model_free(m);
}

TEST_CASE("fuzz regression: FastKV with a tiny fastkv_tsp_rate keeps every row past the TSP layer (fuzz_api)") {
  // fuzz_api: keep / fastkv_tsp_rate, the KV budget of the layers past the TSP layer as a
  // fraction of their rows, was 5.8e35 for a rate near 1e-36, and converting that many rows to
  // int was undefined behaviour (UBSan). Past 1 the budget is every row.
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTiny.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 16;
  cp.n_threads = 1;
  cp.prune.method = WT_PRUNE_FASTKV;
  cp.prune.keep = 0.5f;
  cp.prune.layer = 0;
  cp.prune.window = 1;
  cp.prune.fastkv_tsp_rate = 1e-36f;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  const wt_token prompt[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(wt_context_prefill(ctx, prompt, 8) == WT_OK);
  CHECK(wt_context_decode(ctx, 9) == WT_OK);
  wt_context_free(ctx);
  wt_model_free(m);
}

// fuzz_state found two saved states that wt_context_state_load refused only in its applying
// pass, after it had reset the context (whittle.h promises a refused state leaves it as it
// was): a Token Filtering decode state with values its controller cannot hold (checked only
// while applying), and layer sizes that end the parts before the trailer (the applying pass
// then read its trailer from the middle). The invariant, for every byte: a state with that
// byte changed and its checksum rewritten (so it reaches the checks behind it) is accepted,
// or refused with the context's n_past and logits as they were.
TEST_CASE("fuzz regression: a refused state leaves the context as it was, whatever byte is wrong (fuzz_state)") {
  const wt::test::TinyModelOptions mo = wt::test::fuzz_model_options(64);  // fuzz_state's model
  const std::string path = wt::test::temp_file("fuzz_state_regression.gguf");
  REQUIRE(wt::test::write_file(path, wt::test::make_tiny_llama(mo).build()));
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(path.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  std::remove(path.c_str());
  std::vector<wt_token> prompt(16);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<wt_token>(1 + (i * 37) % 200);
  for (wt_prune_method method : {WT_PRUNE_TOKENFILTER, WT_PRUNE_SNAPKV, WT_PRUNE_SLIMINFER}) {
    const std::string name = wt_prune_method_name(method);
    CAPTURE(name);
    wt_context_params cp = wt_context_default_params();
    cp.n_threads = 1;
    cp.n_ctx = 64;
    cp.prune.method = method;
    wt_context* ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    REQUIRE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK);
    REQUIRE(wt_context_decode(ctx, 5) == WT_OK);
    size_t n = 0;
    REQUIRE(wt_context_state_size(ctx, &n) == WT_OK);
    std::vector<uint8_t> good(n);
    REQUIRE(wt_context_state_save(ctx, good.data(), good.size(), &n) == WT_OK);
    const float* l = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    const std::vector<float> logits(l, l + wt::test::kTinyVocab);
    const int32_t n_past = wt_context_n_past(ctx);
    int refused = 0, accepted = 0, changed = 0;
    for (size_t at = 0; at + 8 < good.size(); ++at) {
      std::vector<uint8_t> bad = good;
      bad[at] ^= 0x80;
      wt::StreamHash h;
      h.update(bad.data(), bad.size() - 8);
      const uint64_t v = h.value();
      std::memcpy(bad.data() + bad.size() - 8, &v, 8);
      if (wt_context_state_load(ctx, bad.data(), bad.size()) == WT_OK) {
        ++accepted;
        REQUIRE(wt_context_state_load(ctx, good.data(), good.size()) == WT_OK);  // back, for the next byte
        continue;
      }
      ++refused;
      const float* after = nullptr;
      const bool same = wt_context_n_past(ctx) == n_past && wt_context_logits(ctx, -1, &after) == WT_OK &&
                        std::memcmp(after, logits.data(), sizeof(float) * logits.size()) == 0;
      if (!same) {
        ++changed;
        REQUIRE(wt_context_state_load(ctx, good.data(), good.size()) == WT_OK);
      }
    }
    MESSAGE(name << ": " << good.size() - 8 << " bytes changed one at a time: " << refused
                                         << " refused, " << accepted << " accepted");
    CHECK(changed == 0);
    CHECK(refused > 0);
    wt_context_free(ctx);
  }
  wt_model_free(m);
}
