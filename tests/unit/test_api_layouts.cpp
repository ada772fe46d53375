// Params structs as applications built against older headers lay them out (whittle.h,
// "Binary compatibility"): API 4 grew wt_prune_params (extra), so an API 1-3 application's
// wt_context_params holds a shorter prune struct and every field after it sits earlier.
// The library must read those fields where that application put them.
// The structs the library fills carry a struct_size since API 5 that bounds what it writes.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/api/params_abi.h"
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

namespace {

// Makes each of the four calls that fill an output struct on a caller buffer of the
// struct's size plus `extra` bytes, all 0xAB but the struct_size: `struct_size`, or
// (kOwnSize) the struct's own size. Keeps the statuses and buffers for inspection.
constexpr size_t kOwnSize = ~size_t{0};

struct OutputCalls {
  wt_model* model = nullptr;
  wt_context* ctx = nullptr;
  std::vector<unsigned char> info, plan, stats, prune;
  wt_status st[4] = {};

  void run(size_t struct_size, size_t extra) {
    auto fresh = [&](std::vector<unsigned char>& b, size_t size) -> void* {
      b.assign(size + extra, 0xAB);
      const size_t n = struct_size == kOwnSize ? size : struct_size;
      std::memcpy(b.data(), &n, sizeof n);
      return b.data();
    };
    st[0] = wt_model_get_info(model, static_cast<wt_model_info*>(fresh(info, sizeof(wt_model_info))));
    st[1] = wt_context_plan(model, nullptr, static_cast<wt_context_plan_info*>(fresh(plan, sizeof(wt_context_plan_info))));
    st[2] = wt_context_get_stats(ctx, static_cast<wt_context_stats*>(fresh(stats, sizeof(wt_context_stats))));
    st[3] = wt_context_get_prune_stats(ctx, static_cast<wt_prune_stats*>(fresh(prune, sizeof(wt_prune_stats))));
  }
};

size_t size_field(const std::vector<unsigned char>& b) {
  size_t n = 0;
  std::memcpy(&n, b.data(), sizeof n);
  return n;
}

// Bytes from `from` on are all still 0xAB.
bool untouched(const std::vector<unsigned char>& b, size_t from) {
  for (size_t i = from; i < b.size(); ++i)
    if (b[i] != 0xAB) return false;
  return true;
}

}  // namespace

TEST_CASE("api: output structs: struct_size set by C++ itself, bounds what the library writes") {
  OutputCalls c;
  REQUIRE_MESSAGE(wt_model_load(kTinyModel.c_str(), nullptr, &c.model) == WT_OK, wt_last_error());
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 32;
  cp.n_threads = 1;
  REQUIRE(wt_context_create(c.model, &cp, &c.ctx) == WT_OK);

  // C++: the member initializer sets struct_size, value- or default-initialized alike.
  wt_model_info info;
  wt_context_stats stats{};
  CHECK(info.struct_size == sizeof(wt_model_info));
  CHECK(stats.struct_size == sizeof(wt_context_stats));
  REQUIRE(wt_model_get_info(c.model, &info) == WT_OK);
  CHECK(info.struct_size == sizeof(wt_model_info));
  CHECK(info.n_layer > 0);

  SUBCASE("this header's size: every field, nothing after it") {
    const size_t sizes[4] = {sizeof(wt_model_info), sizeof(wt_context_plan_info), sizeof(wt_context_stats),
                             sizeof(wt_prune_stats)};
    c.run(kOwnSize, 64);
    for (int k = 0; k < 4; ++k) CHECK(c.st[k] == WT_OK);
    CHECK(size_field(c.stats) == sizeof(wt_context_stats));
    CHECK(reinterpret_cast<const wt_model_info*>(c.info.data())->n_layer == info.n_layer);
    CHECK(reinterpret_cast<const wt_context_plan_info*>(c.plan.data())->n_ctx > 0);
    CHECK(reinterpret_cast<const wt_context_stats*>(c.stats.data())->arena_bytes > 0);
    CHECK(reinterpret_cast<const wt_prune_stats*>(c.prune.data())->n_layer == info.n_layer);
    CHECK(untouched(c.info, sizes[0]));
    CHECK(untouched(c.plan, sizes[1]));
    CHECK(untouched(c.stats, sizes[2]));
    CHECK(untouched(c.prune, sizes[3]));
  }

  SUBCASE("a newer header's larger struct: the library's fields, struct_size the bytes written, the rest untouched") {
    c.run(4096, 4096);
    for (int k = 0; k < 4; ++k) CHECK(c.st[k] == WT_OK);
    CHECK(size_field(c.info) == sizeof(wt_model_info));
    CHECK(size_field(c.plan) == sizeof(wt_context_plan_info));
    CHECK(size_field(c.stats) == sizeof(wt_context_stats));
    CHECK(size_field(c.prune) == sizeof(wt_prune_stats));
    CHECK(reinterpret_cast<const wt_model_info*>(c.info.data())->n_layer == info.n_layer);
    CHECK(untouched(c.info, sizeof(wt_model_info)));
    CHECK(untouched(c.plan, sizeof(wt_context_plan_info)));
    CHECK(untouched(c.stats, sizeof(wt_context_stats)));
    CHECK(untouched(c.prune, sizeof(wt_prune_stats)));
  }

  SUBCASE("wt_prune_stats of an API 5-6 header (before asl_ratios): its fields, not one byte after") {
    // The first output struct that grew: the older layout ends at prefill_ms.
    const size_t old_size = offsetof(wt_prune_stats, asl_ratios);
    static_assert(offsetof(wt_prune_stats, prefill_ms) + sizeof(double) == offsetof(wt_prune_stats, asl_ratios));
    std::vector<unsigned char> b(sizeof(wt_prune_stats) + 16, 0xAB);
    std::memcpy(b.data(), &old_size, sizeof old_size);
    REQUIRE(wt_context_get_prune_stats(c.ctx, reinterpret_cast<wt_prune_stats*>(b.data())) == WT_OK);
    CHECK(size_field(b) == old_size);
    CHECK(reinterpret_cast<const wt_prune_stats*>(b.data())->n_layer == info.n_layer);
    CHECK(untouched(b, old_size));
  }

  SUBCASE("wt_context_stats of an API 5-8 header (before pager_transfers): its fields, not one byte after") {
    const size_t old_size = offsetof(wt_context_stats, pager_transfers);
    static_assert(offsetof(wt_context_stats, pager_wait_ms) + sizeof(double) == offsetof(wt_context_stats, pager_transfers));
    std::vector<unsigned char> b(sizeof(wt_context_stats) + 16, 0xAB);
    std::memcpy(b.data(), &old_size, sizeof old_size);
    REQUIRE(wt_context_get_stats(c.ctx, reinterpret_cast<wt_context_stats*>(b.data())) == WT_OK);
    CHECK(size_field(b) == old_size);
    CHECK(reinterpret_cast<const wt_context_stats*>(b.data())->arena_bytes > 0);
    CHECK(untouched(b, old_size));
    // Between the two layouts: refused, nothing written.
    const size_t between = old_size + 4;
    std::vector<unsigned char> m(sizeof(wt_context_stats) + 16, 0xAB);
    std::memcpy(m.data(), &between, sizeof between);
    CHECK(wt_context_get_stats(c.ctx, reinterpret_cast<wt_context_stats*>(m.data())) == WT_ERR_INVALID_ARGUMENT);
    CHECK(untouched(m, sizeof(size_t)));
  }

  SUBCASE("wt_context_stats and wt_context_plan_info of an API 9-10 header (before batch_rows): not one byte after") {
    const size_t stats_size = offsetof(wt_context_stats, batch_rows);
    std::vector<unsigned char> b(sizeof(wt_context_stats) + 16, 0xAB);
    std::memcpy(b.data(), &stats_size, sizeof stats_size);
    REQUIRE(wt_context_get_stats(c.ctx, reinterpret_cast<wt_context_stats*>(b.data())) == WT_OK);
    CHECK(reinterpret_cast<const wt_context_stats*>(b.data())->arena_bytes > 0);
    CHECK(untouched(b, stats_size));
    const size_t plan_size = offsetof(wt_context_plan_info, batch_rows);
    std::vector<unsigned char> p(sizeof(wt_context_plan_info) + 16, 0xAB);
    std::memcpy(p.data(), &plan_size, sizeof plan_size);
    REQUIRE(wt_context_plan(c.model, nullptr, reinterpret_cast<wt_context_plan_info*>(p.data())) == WT_OK);
    CHECK(reinterpret_cast<const wt_context_plan_info*>(p.data())->n_ctx > 0);
    CHECK(untouched(p, plan_size));
  }

  SUBCASE("wt_context_stats of an API 11-13 header (before threads_per_op): not one byte after") {
    const size_t stats_size = offsetof(wt_context_stats, threads_per_op);
    std::vector<unsigned char> b(sizeof(wt_context_stats) + 16, 0xAB);
    std::memcpy(b.data(), &stats_size, sizeof stats_size);
    REQUIRE(wt_context_get_stats(c.ctx, reinterpret_cast<wt_context_stats*>(b.data())) == WT_OK);
    CHECK(reinterpret_cast<const wt_context_stats*>(b.data())->batch_rows > 0);
    CHECK(untouched(b, stats_size));
  }

  SUBCASE("struct_size 0 (not set, or a C caller of an API 1-4 header) and too small: refused, nothing written") {
    for (size_t size : {size_t{0}, sizeof(size_t), size_t{12}}) {
      CAPTURE(size);
      c.run(size, 0);
      for (int k = 0; k < 4; ++k) CHECK(c.st[k] == WT_ERR_INVALID_ARGUMENT);
      CHECK(untouched(c.info, sizeof(size_t)));
      CHECK(untouched(c.plan, sizeof(size_t)));
      CHECK(untouched(c.stats, sizeof(size_t)));
      CHECK(untouched(c.prune, sizeof(size_t)));
      CHECK(size_field(c.stats) == size);
    }
    c.run(0, 0);
    const std::string msg = wt_last_error();  // the last call's: wt_context_get_prune_stats
    CHECK(msg.find("wt_prune_stats.struct_size is 0: set it to sizeof(wt_prune_stats)") != std::string::npos);
  }
  wt_context_free(c.ctx);
  wt_model_free(c.model);
}

namespace {

// A struct that grew: one API version had `a`, the next appended `b` (at an aligned offset
// after a's padding), as the layout table of a real output struct will record it (the
// versions must not be newer than this header's: the table is checked like the real ones).
struct grown_old {
  size_t struct_size;
  int32_t a;
};
struct grown_new {
  size_t struct_size;
  int32_t a;
  double b;
};
constexpr wt::api::Layout kGrown[] = {
    {WT_API_VERSION - 1, 0, offsetof(grown_new, a) + sizeof(int32_t)},
    {WT_API_VERSION, offsetof(grown_new, b), offsetof(grown_new, b) + sizeof(double)},
};

wt::Status write_grown(void* out) {
  grown_new filled{};
  filled.a = 7;
  filled.b = 2.5;
  return wt::api::write_output_bytes("grown", kGrown, sizeof(grown_new), alignof(grown_new), &filled, out);
}

}  // namespace

TEST_CASE("api: an output struct of an older layout gets its own fields and nothing past them") {
  static_assert(sizeof(grown_old) < offsetof(grown_new, b) + sizeof(double));
  // The older caller: its struct then bytes it owns for something else.
  struct {
    grown_old s;
    unsigned char after[16];
  } old;
  std::memset(&old, 0xAB, sizeof old);
  old.s.struct_size = sizeof(grown_old);
  REQUIRE(write_grown(&old).is_ok());
  CHECK(old.s.a == 7);
  CHECK(old.s.struct_size == sizeof(grown_old));
  for (unsigned char byte : old.after) CHECK(byte == 0xAB);

  // The current caller: both fields.
  grown_new now{};
  now.struct_size = sizeof now;
  REQUIRE(write_grown(&now).is_ok());
  CHECK(now.a == 7);
  CHECK(now.b == 2.5);

  // A size between the layouts (within b) is no layout's: refused, nothing written.
  unsigned char between[sizeof(grown_new)];
  std::memset(between, 0xAB, sizeof between);
  const size_t size = offsetof(grown_new, b) + 4;
  std::memcpy(between, &size, sizeof size);
  const wt::Status st = write_grown(between);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("no layout of the struct has this size") != std::string::npos);
  for (size_t i = sizeof(size_t); i < sizeof between; ++i) CHECK(between[i] == 0xAB);
}

TEST_CASE("api: an API 1 wt_sampler_params reads the API 12 fields as their defaults and never past its own size") {
  // The API 1 struct ends at seed; what follows it in the caller's memory is the caller's
  // (here a min_p the library would refuse, were it read).
  struct {
    wt_sampler_params p;
    float after;
  } old;
  std::memset(&old, 0, sizeof old);
  old.p = wt_sampler_default_params();
  old.p.struct_size = offsetof(wt_sampler_params, min_p);
  // In the bytes the API 1 caller does not have: values the library would refuse, were
  // they read.
  old.p.min_p = -1.0f;
  old.p.repeat_penalty = -5.0f;
  old.p.frequency_penalty = std::numeric_limits<float>::quiet_NaN();
  old.p.presence_penalty = std::numeric_limits<float>::infinity();
  old.p.penalty_last_n = -3;
  old.p.temperature = 0.8f;
  wt_sampler_params read;
  const wt::Status st = wt::api::read_params(&old.p, &read);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  CHECK(read.min_p == 0.0f);
  CHECK(read.repeat_penalty == 1.0f);
  CHECK(read.frequency_penalty == 0.0f);
  CHECK(read.presence_penalty == 0.0f);
  CHECK(read.penalty_last_n == 64);
  CHECK(read.temperature == 0.8f);
  CHECK(read.struct_size == sizeof(wt_sampler_params));
  // The API 12 size reads min_p; a size inside the API 12 fields is no layout's.
  old.p.struct_size = sizeof(wt_sampler_params);
  old.p.min_p = 0.25f;
  REQUIRE(wt::api::read_params(&old.p, &read).is_ok());
  CHECK(read.min_p == 0.25f);
  old.p.struct_size = offsetof(wt_sampler_params, min_p) + 2;
  CHECK(wt::api::read_params(&old.p, &read).code() == WT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("api: an API 1 wt_model_params reads the API 13 rope fields as their defaults") {
  struct {
    wt_model_params p;
    int32_t after;
  } old;
  std::memset(&old, 0, sizeof old);
  old.p = wt_model_default_params();
  old.p.struct_size = offsetof(wt_model_params, rope_scaling);
  // In the bytes the API 1 caller does not have: values the library would refuse, were
  // they read.
  old.p.rope_scaling = static_cast<wt_rope_scaling>(77);
  old.p.rope_scaling_factor = -1.0f;
  old.p.rope_orig_ctx = -5;
  wt_model_params read;
  const wt::Status st = wt::api::read_params(&old.p, &read);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  CHECK(read.rope_scaling == WT_ROPE_SCALING_FILE);
  CHECK(read.rope_scaling_factor == 1.0f);
  CHECK(read.rope_orig_ctx == 0);
  CHECK(read.struct_size == sizeof(wt_model_params));
  old.p.struct_size = sizeof(wt_model_params);
  REQUIRE(wt::api::read_params(&old.p, &read).is_ok());
  CHECK(read.rope_orig_ctx == -5);  // read as given; wt_model_load refuses it
  old.p.struct_size = offsetof(wt_model_params, rope_scaling) + 4;
  CHECK(wt::api::read_params(&old.p, &read).code() == WT_ERR_INVALID_ARGUMENT);
}
