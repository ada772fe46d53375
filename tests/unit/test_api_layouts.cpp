// Params structs as applications built against older headers lay them out (whittle.h,
// "Binary compatibility"): API 4 grew wt_prune_params (extra), so an API 1-3 application's
// wt_context_params holds a shorter prune struct and every field after it sits earlier.
// The library must read those fields where that application put them.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "whittle.h"

namespace {

const std::string kTinyModel = std::string(WT_TEST_DATA_DIR) + "/reference/tiny_qwen2.gguf";

// wt_prune_params of API 1-3: the fields up to record_ranking, no extra.
struct prune_params_api3 {
  unsigned char bytes[offsetof(wt_prune_params, extra)];
} __attribute__((aligned(alignof(wt_prune_params))));
static_assert(sizeof(prune_params_api3) == offsetof(wt_prune_params, extra));

// wt_context_params of API 3, with its prune struct.
struct context_params_api3 {
  size_t struct_size;
  int32_t n_ctx;
  int32_t n_threads;
  bool logits_all;
  wt_progress_callback progress;
  void* progress_user;
  wt_matmul_mode matmul_mode;
  prune_params_api3 prune;
  uint64_t memory_budget_bytes;
  int32_t max_new_tokens;
  int32_t kv_device_blocks;
  int32_t kv_block_tokens;
  bool kv_sync_swaps;
};
static_assert(offsetof(context_params_api3, prune) == offsetof(wt_context_params, prune));

// An API 3 application's defaults: this header's, packed into the older layout.
context_params_api3 api3_defaults() {
  const wt_context_params now = wt_context_default_params();
  context_params_api3 old;
  std::memset(&old, 0, sizeof old);
  std::memcpy(&old, &now, offsetof(wt_context_params, prune));
  std::memcpy(&old.prune, &now.prune, sizeof old.prune);
  const size_t prune_size = sizeof old.prune;
  std::memcpy(old.prune.bytes, &prune_size, sizeof prune_size);  // prune.struct_size
  old.memory_budget_bytes = now.memory_budget_bytes;
  old.max_new_tokens = now.max_new_tokens;
  old.kv_device_blocks = now.kv_device_blocks;
  old.kv_block_tokens = now.kv_block_tokens;
  old.kv_sync_swaps = now.kv_sync_swaps;
  old.struct_size = sizeof old;
  return old;
}

}  // namespace

TEST_CASE("api: an API 3 wt_context_params, whose prune struct has no extra, is read at its own offsets") {
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTinyModel.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  REQUIRE(sizeof(context_params_api3) < sizeof(wt_context_params));

  // The fields after prune: the pager on (kv_device_blocks), read from where API 3 put them.
  context_params_api3 old = api3_defaults();
  old.n_ctx = 64;
  old.n_threads = 1;
  old.kv_block_tokens = 16;
  old.kv_device_blocks = 4;
  // A prune field of API 1 set as the application would, through its own header's offsets.
  const float keep = 0.5f;
  std::memcpy(old.prune.bytes + offsetof(wt_prune_params, keep), &keep, sizeof keep);
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, reinterpret_cast<const wt_context_params*>(&old), &ctx) == WT_OK,
                  wt_last_error());
  wt_context_stats st{};
  REQUIRE(wt_context_get_stats(ctx, &st) == WT_OK);
  CHECK(st.pager_device_bytes > 0);
  const wt_token prompt[4] = {10, 20, 30, 40};
  CHECK(wt_context_prefill(ctx, prompt, 4) == WT_OK);
  CHECK(wt_context_decode(ctx, 50) == WT_OK);
  wt_context_free(ctx);

  // memory_budget_bytes, also after prune: 1 byte cannot hold the arena.
  old.kv_device_blocks = 0;
  old.memory_budget_bytes = 1;
  ctx = nullptr;
  CHECK(wt_context_create(m, reinterpret_cast<const wt_context_params*>(&old), &ctx) == WT_ERR_BUDGET);
  CHECK(ctx == nullptr);

  // The same plan as this header's struct with the same values.
  old.memory_budget_bytes = 0;
  wt_context_params now = wt_context_default_params();
  now.n_ctx = 64;
  now.n_threads = 1;
  now.prune.keep = 0.5f;
  now.kv_block_tokens = 16;
  wt_context_plan_info a{}, b{};
  REQUIRE(wt_context_plan(m, reinterpret_cast<const wt_context_params*>(&old), &a) == WT_OK);
  REQUIRE(wt_context_plan(m, &now, &b) == WT_OK);
  CHECK(a.arena_bytes == b.arena_bytes);
  CHECK(a.context_bytes == b.context_bytes);

  // A struct_size no layout has, with the API 3 prune: refused, the message giving the sizes
  // accepted with either prune layout.
  old.struct_size = sizeof(wt_context_params) - 4;
  CHECK(wt_context_create(m, reinterpret_cast<const wt_context_params*>(&old), &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("with wt_context_params.prune.struct_size") != std::string::npos);
  wt_model_free(m);
}

TEST_CASE("api: an API 3 wt_prune_params takes every parameter of the methods it knows") {
  // Every parameter of the ten API 1 methods is a field an API 3 struct has (a later
  // method's, kept in extra, is refused there: test_prune_registry.cpp).
  prune_params_api3 old;
  const wt_prune_params now = wt_prune_default_params();
  std::memcpy(&old, &now, sizeof old);
  const size_t size = sizeof old;
  std::memcpy(old.bytes, &size, sizeof size);
  auto* p = reinterpret_cast<wt_prune_params*>(&old);
  CHECK(wt_prune_set_param(p, "keep", "0.3") == WT_OK);
  CHECK(wt_prune_set_param(p, "slim_gamma", "0.5") == WT_OK);
  CHECK(wt_prune_set_param(p, "record_ranking", "1") == WT_OK);
  float keep = 0;
  std::memcpy(&keep, old.bytes + offsetof(wt_prune_params, keep), sizeof keep);
  CHECK(keep == 0.3f);
}
