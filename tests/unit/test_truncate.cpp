// wt_context_truncate: a context cut back to n tokens goes on exactly as one that never went
// past n (the invariant: the logits of every later call bit for bit, on the CPU), for full KV
// at any n, for every pruning method at or after its pruned prompt (but for the decode state
// SlimInfer and Token Filtering keep), and through the copying KV pager; the refusals change
// nothing. The same on Vulkan (lavapipe in CI) below; sliding-window layers against the
// NumPy reference: test_qwen2_reference.cpp.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/api/handles.h"
#include "runtime/engine/context.h"
#include "support/gguf_writer.h"
#include "whittle.h"

namespace {

wt_model* tiny_model() {
  const std::string& path = wt::test::tiny_chat_model_path();
  REQUIRE_MESSAGE(!path.empty(), "cannot write the tiny model to the temp folder");
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(path.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  return m;
}

wt_context_params params(wt_prune_method method, int32_t device_blocks = 0) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 256;
  cp.n_threads = 1;  // a tiny model: a second worker would only wait (and under qemu, spin)
  cp.prune.method = method;
  cp.prune.keep = 0.3f;
  cp.prune.slim_decode_keep = 0.5f;  // SlimInfer re-selects its active blocks while decoding
  cp.prune.asl_obs_layers = 2;       // the tiny model has 4 layers
  cp.prune.claa_min_layer = 1;
  cp.prune.claa_n_layers = 2;
  cp.kv_device_blocks = device_blocks;
  cp.kv_block_tokens = 8;
  cp.kv_pager_flags = device_blocks > 0 ? WT_KV_PAGER_COPY : 0;
  return cp;
}

wt_context* make_ctx(const wt_model* m, const wt_context_params& cp) {
  wt_context* c = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &c) == WT_OK, std::string(wt_last_error()));
  return c;
}

// n tokens of byte-level text, varied so that the methods' scores differ.
std::vector<wt_token> tokens(int32_t n, int32_t seed) {
  std::vector<wt_token> t;
  for (int32_t i = 0; i < n; ++i) t.push_back(static_cast<wt_token>(32 + (i * 37 + seed * 11 + i * i % 13) % 90));
  return t;
}

std::vector<float> last_logits(const wt_context* c) {
  const float* l = nullptr;
  REQUIRE_MESSAGE(wt_context_logits(c, -1, &l) == WT_OK, wt_last_error());
  return std::vector<float>(l, l + wt::test::kTinyVocab);
}

void prefill(wt_context* c, const std::vector<wt_token>& t) {
  REQUIRE_MESSAGE(wt_context_prefill(c, t.data(), t.size()) == WT_OK, wt_last_error());
}

// Decodes each token, keeping the logits after each.
std::vector<std::vector<float>> decode_all(wt_context* c, const std::vector<wt_token>& t) {
  std::vector<std::vector<float>> out;
  for (wt_token x : t) {
    REQUIRE_MESSAGE(wt_context_decode(c, x) == WT_OK, wt_last_error());
    out.push_back(last_logits(c));
  }
  return out;
}

void check_pager(const wt_context* c) {
  const wt::PagedKv* kv = c->ctx->paged_kv();
  if (!kv) return;
  const wt::Status st = kv->pager().check_invariants();
  CHECK_MESSAGE(st.is_ok(), st.message());
  for (int32_t l = 0; l < c->owner->model->hp.n_layer; ++l) CHECK(kv->n_rows(l) == c->ctx->kv_len(l));
}

}  // namespace

// A third of the KV's blocks on the device (the tiny model: 4 layers of 256 / 8 blocks).
constexpr int32_t kThirdOfBlocks = 4 * 256 / 8 / 3;

// With the copying KV pager too: 113 rows per layer (60 blocks) in a pool of 42, so blocks
// have left the device; one more cut lands inside such a block, which the prompt after the
// cut (a multi-row pass over the pager's blocks) fetches back.
TEST_CASE("truncate: full KV cut back anywhere goes on as a context that never went past (CPU, bit for bit)") {
  wt_model* m = tiny_model();
  const int32_t n_layer = m->model->hp.n_layer;
  const std::vector<wt_token> a = tokens(40, 1), b = tokens(70, 2), c = tokens(9, 3), steps = tokens(5, 4);
  for (const int32_t device_blocks : {0, kThirdOfBlocks}) {
    const wt_context_params cp = params(WT_PRUNE_FULL, device_blocks);
    // After a whole prompt, inside one, after its first token; -1: inside a block off the device.
    for (const int32_t where : {40, 31, 1, -1}) {
      if (where < 0 && device_blocks == 0) continue;
      CAPTURE(device_blocks);
      CAPTURE(where);
      wt_context* cut = make_ctx(m, cp);
      prefill(cut, a);
      prefill(cut, b);
      decode_all(cut, {7, 8, 9});
      int32_t keep = where;
      if (const wt::PagedKv* kv = cut->ctx->paged_kv(); kv && where < 0) {
        for (int32_t l = 0; l < n_layer && keep < 0; ++l)
          for (int32_t blk = 0; blk < kv->pager().table(l).n_blocks() - 1 && keep < 0; ++blk)
            if (kv->pager().table(l).at(blk).device_slot < 0) keep = blk * 8 + 3;
        REQUIRE(keep > 0);
      }
      CAPTURE(keep);
      REQUIRE_MESSAGE(wt_context_truncate(cut, keep) == WT_OK, wt_last_error());
      CHECK(wt_context_n_past(cut) == keep);
      check_pager(cut);
      const float* none = nullptr;
      CHECK(wt_context_logits(cut, -1, &none) == WT_ERR_INVALID_ARGUMENT);  // no logits until the next call
      prefill(cut, c);
      check_pager(cut);

      wt_context* straight = make_ctx(m, cp);
      prefill(straight, std::vector<wt_token>(a.begin(), a.begin() + std::min<int32_t>(keep, 40)));
      if (keep > 40) prefill(straight, std::vector<wt_token>(b.begin(), b.begin() + (keep - 40)));
      prefill(straight, c);
      CHECK(last_logits(cut) == last_logits(straight));
      CHECK(decode_all(cut, steps) == decode_all(straight, steps));
      wt_context_free(straight);
      wt_context_free(cut);
    }
  }
  wt_model_free(m);
}

namespace {

struct MethodCase {
  wt_prune_method method;
  int32_t device_blocks;  // > 0: the copying KV pager with that many device blocks
};

// The pruned prompt stays; the decode steps after it are cut (to the prompt's end, and to two
// steps past it) and the context goes on as the one that stopped there.
void check_methods(wt_model* m, const std::vector<MethodCase>& cases) {
  const std::vector<wt_token> prompt = tokens(120, 5), before = tokens(2, 6), junk = tokens(6, 7),
                              after = tokens(4, 8);
  for (const MethodCase& k : cases) {
    for (const size_t n_before : {size_t{0}, before.size()}) {
      CAPTURE(std::string(wt_prune_method_name(k.method)));
      CAPTURE(k.device_blocks);
      CAPTURE(n_before);
      const wt_context_params cp = params(k.method, k.device_blocks);
      const std::vector<wt_token> kept(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(n_before));
      wt_context* straight = make_ctx(m, cp);
      prefill(straight, prompt);
      const int32_t prompt_end = wt_context_n_past(straight);  // GemFilter re-prefills fewer
      decode_all(straight, kept);
      const auto want = decode_all(straight, after);

      wt_context* cut = make_ctx(m, cp);
      prefill(cut, prompt);
      decode_all(cut, kept);
      const int32_t keep = wt_context_n_past(cut);
      decode_all(cut, junk);
      // Inside the pruned prompt: refused (a method that keeps every row is no exception), and
      // nothing changed.
      if (k.method != WT_PRUNE_FULL) {
        CHECK(wt_context_truncate(cut, prompt_end - 1) == WT_ERR_UNSUPPORTED);
        CHECK(std::string(wt_last_error()).find("pruned prompt") != std::string::npos);
        CHECK(wt_context_n_past(cut) == keep + static_cast<int32_t>(junk.size()));
      }
      REQUIRE_MESSAGE(wt_context_truncate(cut, keep) == WT_OK, wt_last_error());
      check_pager(cut);
      const auto got = decode_all(cut, after);
      // SlimInfer's active blocks and Token Filtering's skip threshold and anchors moved on with the
      // steps cut (whittle.h): the same KV, not the same state. The rest match bit for bit.
      const bool stateful = k.method == WT_PRUNE_SLIMINFER || k.method == WT_PRUNE_TOKENFILTER;
      if (!stateful) CHECK(got == want);
      check_pager(cut);
      // The state after truncating is a context's like any other: save, load, go on.
      REQUIRE(wt_context_truncate(cut, keep) == WT_OK);
      size_t bytes = 0;
      REQUIRE(wt_context_state_size(cut, &bytes) == WT_OK);
      std::vector<char> state(bytes);
      REQUIRE_MESSAGE(wt_context_state_save(cut, state.data(), state.size(), &bytes) == WT_OK, wt_last_error());
      wt_context* loaded = make_ctx(m, cp);
      REQUIRE_MESSAGE(wt_context_state_load(loaded, state.data(), bytes) == WT_OK, wt_last_error());
      if (!stateful) CHECK(decode_all(loaded, after) == want);
      // A loaded state of a pruned prompt does not say where its prompt ended: not below it.
      if (k.method != WT_PRUNE_FULL) CHECK(wt_context_truncate(loaded, keep - 1) == WT_ERR_UNSUPPORTED);
      wt_context_free(loaded);
      wt_context_free(straight);
      wt_context_free(cut);
    }
  }
}

}  // namespace

// Every method, and the copying KV pager for full KV and SlimInfer.
TEST_CASE("truncate: every method cut back to its pruned prompt or later goes on as one that stopped there") {
  wt_model* m = tiny_model();
  std::vector<MethodCase> cases;
  for (int32_t i = 0; i < wt_prune_method_count(); ++i) {
    wt_prune_method method{};
    REQUIRE(wt_prune_method_at(i, &method) == WT_OK);
    cases.push_back({method, 0});
  }
  cases.push_back({WT_PRUNE_FULL, kThirdOfBlocks});
  cases.push_back({WT_PRUNE_SLIMINFER, kThirdOfBlocks});
  check_methods(m, cases);
  wt_model_free(m);
}

TEST_CASE("vulkan model: contexts cut back go on as ones that stopped there with full KV and SnapKV and the pager" *
          doctest::test_suite("model")) {
  const std::string& path = wt::test::tiny_chat_model_path();
  REQUIRE(!path.empty());
  wt_model_params mp = wt_model_default_params();
  mp.backend = WT_BACKEND_VULKAN;
  wt_model* m = nullptr;
  const wt_status st = wt_model_load(path.c_str(), &mp, &m);
  if (st == WT_ERR_UNSUPPORTED) {
    MESSAGE("SKIPPED: no Vulkan device: " << std::string(wt_last_error()));
    return;
  }
  REQUIRE_MESSAGE(st == WT_OK, std::string(wt_last_error()));
  check_methods(m, {{WT_PRUNE_FULL, 0}, {WT_PRUNE_SNAPKV, 0}, {WT_PRUNE_FULL, kThirdOfBlocks},
                    {WT_PRUNE_SLIMINFER, kThirdOfBlocks}});
  wt_model_free(m);
}

TEST_CASE("truncate: refusals name the reason and change nothing") {
  wt_model* m = tiny_model();
  CHECK(wt_context_truncate(nullptr, 0) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("ctx") != std::string::npos);
  wt_context* c = make_ctx(m, params(WT_PRUNE_FULL));
  CHECK(wt_context_truncate(c, 0) == WT_OK);  // an empty context: nothing to forget
  CHECK(wt_context_truncate(c, 1) == WT_ERR_INVALID_ARGUMENT);
  const std::vector<wt_token> t = tokens(10, 9);
  prefill(c, t);
  const std::vector<float> logits = last_logits(c);
  for (const int32_t bad : {11, -1, 1 << 30}) {
    CAPTURE(bad);
    CHECK(wt_context_truncate(c, bad) == WT_ERR_INVALID_ARGUMENT);
    CHECK(std::string(wt_last_error()).find("the context holds 10") != std::string::npos);
    CHECK(wt_context_n_past(c) == 10);
    CHECK(last_logits(c) == logits);
  }
  CHECK(wt_context_truncate(c, 10) == WT_OK);  // n_past: nothing changes, the logits stay
  CHECK(last_logits(c) == logits);
  CHECK(wt_context_truncate(c, 0) == WT_OK);  // wt_context_reset
  CHECK(wt_context_n_past(c) == 0);

  // From a callback of a call running on the context: WT_ERR_BUSY, and the call goes on.
  struct Seen {
    wt_context* ctx = nullptr;
    wt_status status = WT_OK;
  } seen;
  wt_context_params cp = params(WT_PRUNE_FULL);
  cp.progress = [](float, void* user) {
    auto* s = static_cast<Seen*>(user);
    s->status = wt_context_truncate(s->ctx, 0);
    return true;
  };
  cp.progress_user = &seen;
  wt_context* busy = make_ctx(m, cp);
  seen.ctx = busy;
  prefill(busy, t);
  CHECK(seen.status == WT_ERR_BUSY);
  CHECK(wt_context_n_past(busy) == 10);
  wt_context_free(busy);
  wt_context_free(c);
  wt_model_free(m);
}
