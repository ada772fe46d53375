// The KV pager in the engine, on the real default model: with the device pool bounded to a
// quarter of the KV, generation gives the same logits and tokens as with every block
// resident, for full KV and every method (prefill and decode, async prefetch and sync
// swaps); the pager really moves blocks; decode allocates nothing; bad pool sizes are
// refused. The CPU backend's memory is unified, so a context's pager works in place by
// default there: the copying pager's cases ask for WT_KV_PAGER_COPY, and the in-place
// cases check the same exactness with nothing copied.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/api/handles.h"
#include "support/alloc_counter.h"
#include "support/real_model.h"
#include "whittle.h"

namespace {

const wt::test::RealModel& fixture() { return wt::test::real_model(); }

constexpr int32_t kCtx = 512;
constexpr int32_t kBlock = 64;

enum class Pager { copy, in_place };
std::string name(Pager p) { return p == Pager::copy ? "copy" : "in place"; }

wt_context* make_ctx(wt_prune_method m, int32_t device_blocks, bool sync, wt_kv_type kv_type = WT_KV_F32,
                     Pager pager = Pager::copy) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = kCtx;
  cp.n_threads = 2;
  cp.prune.method = m;
  cp.prune.keep = 0.3f;
  cp.prune.slim_decode_keep = 0.5f;  // SlimInfer decode re-selects active blocks
  cp.kv_device_blocks = device_blocks;
  cp.kv_block_tokens = kBlock;
  cp.kv_sync_swaps = sync;
  cp.kv_type = kv_type;
  cp.kv_pager_flags = pager == Pager::copy ? WT_KV_PAGER_COPY : 0;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(fixture().model, &cp, &ctx) == WT_OK, wt_last_error());
  return ctx;
}

struct Run {
  std::vector<std::vector<float>> logits;  // after the prefill, then after each decode
  std::vector<wt_token> tokens;
  wt_context_stats stats{};
};

Run generate(wt_context* ctx, const std::vector<wt_token>& prompt, int n_new) {
  Run r;
  const int32_t nv = ctx->owner->model->hp.n_vocab;
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  for (int i = 0;; ++i) {
    const float* l = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    r.logits.emplace_back(l, l + nv);
    const wt_token t = static_cast<wt_token>(std::max_element(l, l + nv) - l);
    r.tokens.push_back(t);
    if (i == n_new) break;
    REQUIRE_MESSAGE(wt_context_decode(ctx, t) == WT_OK, wt_last_error());
  }
  REQUIRE(wt_context_get_stats(ctx, &r.stats) == WT_OK);
  return r;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// A quarter of the KV: n_layer layers of kCtx / kBlock blocks.
int32_t quarter_pool() { return fixture().model->model->hp.n_layer * (kCtx / kBlock) / 4; }

}  // namespace

// Label long (not model): minutes under ASan (ten methods, three runs each), so the ASan stage
// leaves it to the Release stage and keeps the chunked, allocation and residency cases below;
// like every long test it is not run under qemu either.
TEST_CASE("paged kv: a device pool of 25% of the KV gives the resident logits and tokens for every method" *
          doctest::test_suite("long")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const std::vector<wt_token> prompt = fixture().prompt(300);
  const int n_new = 12;
  const wt_prune_method methods[] = {WT_PRUNE_FULL,      WT_PRUNE_STREAMING, WT_PRUNE_SNAPKV, WT_PRUNE_FASTKV,
                                     WT_PRUNE_GEMFILTER, WT_PRUNE_ASL,       WT_PRUNE_CLAA,   WT_PRUNE_SLIMINFER,
                                     WT_PRUNE_TOKENFILTER, WT_PRUNE_ORACLE,
                                     static_cast<wt_prune_method>(WT_PRUNE_FIRST_EXTENSION)};  // decode_topk
  for (wt_prune_method m : methods) {
    const std::string method = wt_prune_method_name(m);
    CAPTURE(method);
    wt_context* resident = make_ctx(m, 0, false);
    const Run want = generate(resident, prompt, n_new);
    wt_context_free(resident);
    CHECK(want.stats.pager_device_bytes == 0);
    // Copying with async prefetch, copying with sync swaps, in place.
    for (int mode = 0; mode < 3; ++mode) {
      const bool sync = mode == 1;
      const Pager pager = mode == 2 ? Pager::in_place : Pager::copy;
      CAPTURE(mode);
      wt_context* paged = make_ctx(m, quarter_pool(), sync, WT_KV_F32, pager);
      const Run got = generate(paged, prompt, n_new);
      wt_context_free(paged);
      CHECK(got.tokens == want.tokens);
      REQUIRE(got.logits.size() == want.logits.size());
      float worst = 0;
      for (size_t i = 0; i < got.logits.size(); ++i) worst = std::max(worst, max_abs_diff(got.logits[i], want.logits[i]));
      CHECK(worst == 0.0f);  // the same keys in the same order: the same arithmetic
      CHECK(got.stats.pager_device_bytes > 0);
      if (pager == Pager::in_place) {  // one pool of every block: nothing moves, nothing leaves
        CHECK(got.stats.pager_host_bytes == 0);
        CHECK(got.stats.pager_bytes_to_host == 0);
        CHECK(got.stats.pager_bytes_to_device == 0);
        CHECK(got.stats.pager_blocks_in == 0);
        CHECK(got.stats.pager_blocks_evicted == 0);
        continue;
      }
      // The pool is a quarter of the KV: decode had to bring blocks back.
      CHECK(got.stats.pager_host_bytes >= 4 * got.stats.pager_device_bytes);
      CHECK(got.stats.pager_bytes_to_host > 0);
      if (m == WT_PRUNE_FULL) {
        CHECK(got.stats.pager_blocks_in > 0);
        CHECK(got.stats.pager_blocks_evicted > 0);
        CHECK(got.stats.pager_bytes_to_device > 0);
        if (sync) {
          CHECK(got.stats.pager_blocks_on_demand == got.stats.pager_blocks_in);
        } else {
          CHECK(got.stats.pager_blocks_on_demand < got.stats.pager_blocks_in);  // most came ahead
        }
      }
    }
  }
}

// Every KV type: the pager moves an f16 or q8_0 cache's blocks as bytes, so the paged
// context reads back exactly what the resident one of the same type holds.
TEST_CASE("paged kv: prefill in chunks and after a reset reads the blocks back exactly for every KV type" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  for (Pager pager : {Pager::copy, Pager::in_place})
  for (wt_kv_type type : {WT_KV_F32, WT_KV_F16, WT_KV_Q8_0}) {
    CAPTURE(type);
    const std::string pager_name = name(pager);
    CAPTURE(pager_name);
    const std::vector<wt_token> prompt = fixture().prompt(260);
    wt_context* resident = make_ctx(WT_PRUNE_FULL, 0, false, type);
    wt_context* paged = make_ctx(WT_PRUNE_FULL, quarter_pool(), false, type, pager);
    const int32_t nv = fixture().model->model->hp.n_vocab;
    for (int round = 0; round < 2; ++round) {  // the second after a reset: no stale block
      for (wt_context* c : {resident, paged}) {
        wt_context_reset(c);
        // Chunks of 100, 90, 70 rows: later chunks read the earlier ones through the blocks.
        REQUIRE(wt_context_prefill(c, prompt.data(), 100) == WT_OK);
        REQUIRE(wt_context_prefill(c, prompt.data() + 100, 90) == WT_OK);
        REQUIRE(wt_context_prefill(c, prompt.data() + 190, 70) == WT_OK);
        REQUIRE(wt_context_decode(c, prompt[5]) == WT_OK);
      }
      const float *a = nullptr, *b = nullptr;
      REQUIRE(wt_context_logits(resident, -1, &a) == WT_OK);
      REQUIRE(wt_context_logits(paged, -1, &b) == WT_OK);
      CHECK(std::memcmp(a, b, sizeof(float) * static_cast<size_t>(nv)) == 0);
    }
    wt_context_free(resident);
    wt_context_free(paged);
  }
}

// A pruned prompt's kept rows reach the pager through the typed staging (a copy of one
// type into blocks of the same): FastKV and SlimInfer (decode re-selection) with each
// narrow type, async, sync and in place, against the resident context of that type.
TEST_CASE("paged kv: pruned prompts in f16 and q8_0 caches give the resident logits and tokens" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const std::vector<wt_token> prompt = fixture().prompt(300);
  for (wt_kv_type type : {WT_KV_F16, WT_KV_Q8_0}) {
    for (wt_prune_method m : {WT_PRUNE_FASTKV, WT_PRUNE_SLIMINFER}) {
      CAPTURE(type);
      CAPTURE(m);
      wt_context* resident = make_ctx(m, 0, false, type);
      const Run want = generate(resident, prompt, 8);
      wt_context_free(resident);
      for (int mode = 0; mode < 3; ++mode) {  // copying async, copying sync, in place
        CAPTURE(mode);
        const Pager pager = mode == 2 ? Pager::in_place : Pager::copy;
        wt_context* paged = make_ctx(m, quarter_pool(), mode == 1, type, pager);
        const Run got = generate(paged, prompt, 8);
        wt_context_free(paged);
        CHECK(got.tokens == want.tokens);
        REQUIRE(got.logits.size() == want.logits.size());
        for (size_t i = 0; i < got.logits.size(); ++i) CHECK(max_abs_diff(got.logits[i], want.logits[i]) == 0.0f);
        CHECK((got.stats.pager_bytes_to_host > 0) == (pager == Pager::copy));
      }
    }
  }
}

// A pool just above one layer: the prefetch of layer l + 1, queued before attention(l), finds
// room only among the blocks attention(l) is about to read. It must leave them and fall short
// (those blocks come on demand) rather than take them.
TEST_CASE("paged kv: a pool barely above one layer: the prefetch never takes the blocks attention reads next" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const std::vector<wt_token> prompt = fixture().prompt(400);  // 7 of a layer's 8 blocks: 2 layers do not fit
  for (wt_prune_method m : {WT_PRUNE_FULL, WT_PRUNE_SLIMINFER}) {
    const std::string method = wt_prune_method_name(m);
    CAPTURE(method);
    wt_context* resident = make_ctx(m, 0, false);
    const Run want = generate(resident, prompt, 6);
    wt_context_free(resident);
    wt_context* paged = make_ctx(m, kCtx / kBlock + 2, false);
    const Run got = generate(paged, prompt, 6);
    wt_context_free(paged);
    CHECK(got.tokens == want.tokens);
    REQUIRE(got.logits.size() == want.logits.size());
    for (size_t i = 0; i < got.logits.size(); ++i) CHECK(max_abs_diff(got.logits[i], want.logits[i]) == 0.0f);
    if (m == WT_PRUNE_FULL) CHECK(got.stats.pager_blocks_on_demand > 0);  // the prefetches fell short
  }
}

// SlimInfer's decode re-selection: the layers of a group share one active set, so when the
// group's first layer takes a new set, the prefetch of each later layer follows it (the
// paper's scheme). Only the first layer of a group learns its set at its own decision, so
// most blocks still arrive ahead. A prediction that loses track of the group (what each
// layer needed last step for the layers after the second) brings far more on demand.
TEST_CASE("paged kv: SlimInfer's later layers of a group are prefetched with the set the first just took" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  // 16-token blocks of 4-token units, a quarter of each group's blocks attended: sets of 5
  // of 19 prompt blocks that change from step to step.
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = kCtx;
  cp.n_threads = 2;
  cp.prune.method = WT_PRUNE_SLIMINFER;
  cp.prune.slim_block = 16;
  cp.prune.slim_unit = 4;
  cp.prune.slim_decode_keep = 0.25f;
  cp.kv_block_tokens = 16;
  cp.kv_device_blocks = fixture().model->model->hp.n_layer * (kCtx / 16) / 4;
  cp.kv_pager_flags = WT_KV_PAGER_COPY;
  wt_context* paged = nullptr;
  REQUIRE_MESSAGE(wt_context_create(fixture().model, &cp, &paged) == WT_OK, wt_last_error());
  const Run got = generate(paged, fixture().prompt(300), 12);
  wt_context_free(paged);
  const double on_demand = static_cast<double>(got.stats.pager_blocks_on_demand) / got.stats.pager_blocks_in;
  MESSAGE("SlimInfer: " << got.stats.pager_blocks_in << " blocks in, " << got.stats.pager_blocks_on_demand
                        << " on demand (" << on_demand << ")");
  CHECK(got.stats.pager_blocks_in > 0);
  CHECK(on_demand < 0.1);  // measured: 0 of 57; 16 of 85 when the prediction lost track of the group
}

TEST_CASE("paged kv: prefill and decode allocate nothing" * doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const std::vector<wt_token> prompt = fixture().prompt(200);
  for (wt_prune_method m : {WT_PRUNE_FULL, WT_PRUNE_SLIMINFER, WT_PRUNE_FASTKV})
  for (Pager pager : {Pager::copy, Pager::in_place}) {
    const std::string method = wt_prune_method_name(m);
    CAPTURE(method);
    const std::string pager_name = name(pager);
    CAPTURE(pager_name);
    wt_context* ctx = make_ctx(m, quarter_pool(), false, WT_KV_F32, pager);
    // A first run lets the threads finish starting; what is counted comes after a reset.
    REQUIRE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK);
    REQUIRE(wt_context_decode(ctx, 42) == WT_OK);
    wt_context_reset(ctx);
    wt::test::alloc_counter_arm(true);
    const wt_status st = wt_context_prefill(ctx, prompt.data(), prompt.size());
    for (int i = 0; i < 4 && st == WT_OK; ++i) (void)wt_context_decode(ctx, 42 + i);
    wt::test::alloc_counter_arm(false);
    REQUIRE(st == WT_OK);
    CHECK(wt::test::alloc_counter_count() == 0);
    wt_context_free(ctx);
  }
}

TEST_CASE("paged kv: residency per layer: copying keeps every row on the host and at most the pool on the device and in place every row in the one pool" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const std::vector<wt_token> prompt = fixture().prompt(300);
  const int32_t n_layer = fixture().model->model->hp.n_layer;
  const uint64_t row_bytes = 2 * sizeof(float) * 3 * 64;  // SmolLM2: 3 KV heads of 64
  wt_context* paged = make_ctx(WT_PRUNE_FULL, quarter_pool(), false);
  wt_context* resident = make_ctx(WT_PRUNE_FULL, 0, false);
  wt_context* in_place = make_ctx(WT_PRUNE_FULL, quarter_pool(), false, WT_KV_F32, Pager::in_place);
  for (wt_context* c : {paged, resident, in_place}) {
    REQUIRE(wt_context_prefill(c, prompt.data(), prompt.size()) == WT_OK);
    REQUIRE(wt_context_decode(c, 42) == WT_OK);
  }
  uint64_t device_total = 0;
  for (int32_t l = 0; l < n_layer; ++l) {
    uint64_t d = 0, h = 0;
    REQUIRE(wt_context_get_kv_residency(paged, l, &d, &h) == WT_OK);
    CHECK(h == 301 * row_bytes);  // written through: the host tier holds every row
    device_total += d;
    for (wt_context* c : {resident, in_place}) {
      REQUIRE(wt_context_get_kv_residency(c, l, &d, &h) == WT_OK);
      CHECK(d == 301 * row_bytes);
      CHECK(h == 0);
    }
  }
  wt_context_stats st{};
  REQUIRE(wt_context_get_stats(paged, &st) == WT_OK);
  CHECK(device_total > 0);
  CHECK(device_total <= st.pager_device_bytes);
  // In place the pool is every block of every layer (full KV: n_ctx rows a layer), whatever
  // kv_device_blocks asked for, and there is no host pool.
  REQUIRE(wt_context_get_stats(in_place, &st) == WT_OK);
  CHECK(st.pager_device_bytes == static_cast<uint64_t>(n_layer) * kCtx * row_bytes);
  CHECK(st.pager_host_bytes == 0);
  uint64_t d = 0, h = 0;
  CHECK(wt_context_get_kv_residency(paged, n_layer, &d, &h) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_kv_residency(paged, 0, nullptr, &h) == WT_ERR_INVALID_ARGUMENT);
  wt_context_free(paged);
  wt_context_free(resident);
  wt_context_free(in_place);
}

TEST_CASE("paged kv: pool sizes and block sizes out of range are refused with the reason") {
  if (!wt::test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = kCtx;
  cp.n_threads = 1;
  wt_context* ctx = nullptr;
  cp.kv_device_blocks = kCtx / kBlock - 1;  // less than one layer
  CHECK(wt_context_create(fixture().model, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("one whole layer") != std::string::npos);
  CHECK(ctx == nullptr);
  cp.kv_device_blocks = -1;
  CHECK(wt_context_create(fixture().model, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  cp.kv_device_blocks = 100;
  cp.kv_block_tokens = 0;
  CHECK(wt_context_create(fixture().model, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);
  cp.kv_block_tokens = kBlock;
  cp.kv_pager_flags = WT_KV_PAGER_COPY | 4;  // a flag this library does not know
  CHECK(wt_context_create(fixture().model, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("kv_pager_flags") != std::string::npos);
  CHECK(ctx == nullptr);
}
