// The C API's parameter validation: every params struct from fuzz bytes (api_params.h), then
// the calls that read them, on a tiny 8-layer model loaded once. Each call must return a
// status the input calls for, write its outputs only on success, and every object created is
// freed (LeakSanitizer checks). Contexts are created only when the planner says they are
// small, so a run stays in milliseconds; huge n_ctx and the like meet the planner alone.
//
// Oracles besides the statuses: a struct_size is refused exactly when whittle.h's layout rule
// refuses it; an older layout reads as the newest with the later fields at their defaults;
// wt_context_plan refuses exactly what wt_context_create refuses, with the same status, and a
// created context allocates what the plan said; wt_sampler_create refuses exactly the values
// whittle.h names; a wt_context_abort request stops the next prefill.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "api_params.h"
#include "c_caller.h"
#include "fuzz_support.h"

using namespace wt::fuzz;

namespace {

wt_model* g_model = nullptr;
std::string g_model_path;  // the same model on disk, for wt_model_load
int32_t g_n_vocab = 0, g_n_layer = 0, g_n_ctx_train = 0;

// Contexts above this are only planned: the arena of a fuzzed n_ctx may be gigabytes.
constexpr uint64_t kMaxContextBytes = 48ull << 20;
volatile int g_sink = 0;
// An output pointer's value before a call: a failed call must leave it so.
wt_context* const kUnset = reinterpret_cast<wt_context*>(uintptr_t{0x5a5a5a5a});

// Progress callbacks that stop after a fuzzed number of calls.
struct StopAfter {
  int calls_left = 0;
};
bool progress_stop_after(float, void* user) {
  StopAfter* s = static_cast<StopAfter*>(user);
  return s->calls_left-- > 0;
}

void fuzz_model_load(FuzzedDataProvider& fdp) {
  wt_model_params p = wt_model_default_params();
  p.struct_size = pick_struct_size(fdp, model_params_sizes(), sizeof p);
  const int32_t backend = fdp.ConsumeIntegralInRange<int>(0, 3) == 0 ? pick_int(fdp, 3) : 0;
  set_raw_enum(&p.backend, backend);
  StopAfter stop{fdp.ConsumeIntegralInRange<int>(0, 10)};
  if (fdp.ConsumeBool()) p.progress = progress_stop_after, p.progress_user = &stop;
  // The API 13 rope fields, read only where the caller's struct has them: a kind in [0, 3],
  // a factor in [1, 1024] and a context >= 0 are accepted (the tiny model turns rope over
  // every head dimension, so YaRN loads).
  const int32_t rope = fdp.ConsumeBool() ? pick_int(fdp, 4) : 0;
  set_raw_enum(&p.rope_scaling, rope);
  const float factors[] = {1.0f, 2.0f, 4.0f, 1024.0f, 0.5f, 1025.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity()};
  p.rope_scaling_factor = fdp.ConsumeBool() ? factors[fdp.ConsumeIntegralInRange<size_t>(0, std::size(factors) - 1)] : 1.0f;
  p.rope_orig_ctx = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int32_t>(-3, 1 << 20) : 0;
  const bool has_rope = p.struct_size >= offsetof(wt_model_params, rope_orig_ctx) + sizeof(int32_t);
  const bool rope_ok = !has_rope || (rope >= 0 && rope <= 3 && p.rope_scaling_factor >= 1.0f &&
                                     p.rope_scaling_factor <= 1024.0f && p.rope_orig_ctx >= 0);
  const bool accepted = size_accepted(model_params_sizes(), p.struct_size);
  CallerStruct<wt_model_params> caller(p);
  wt_model* m = nullptr;
  const wt_status st = wt_model_load(g_model_path.c_str(), caller.get(), &m);
  if (!accepted || backend < 0 || backend > 2 || !rope_ok) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_model_load with a bad struct_size, backend or rope field");
  } else if (backend != WT_BACKEND_CPU) {
    expect_status(st, {WT_ERR_UNSUPPORTED}, "wt_model_load for a backend this build lacks");
  } else {
    // The progress callback runs once per layer and may stop the load.
    expect_status(st, {p.progress && stop.calls_left < 0 ? WT_ERR_ABORTED : WT_OK}, "wt_model_load");
  }
  if ((st == WT_OK) != (m != nullptr)) fail("wt_model_load: status %d, model %p", st, static_cast<void*>(m));
  wt_model_free(m);
}

void fuzz_tokenize_params(FuzzedDataProvider& fdp) {
  wt_tokenize_params p = wt_tokenize_default_params();
  p.struct_size = pick_struct_size(fdp, tokenize_params_sizes(), sizeof p);
  p.add_special = fdp.ConsumeBool();
  p.parse_special = fdp.ConsumeBool();
  CallerStruct<wt_tokenize_params> caller(p);
  wt_token ids[32];
  size_t n = 0;
  const char text[] = "<|im_start|>the the";
  const wt_status st = wt_tokenize(g_model, text, sizeof text - 1, caller.get(), ids, 32, &n);
  expect_status(st, {size_accepted(tokenize_params_sizes(), p.struct_size) ? WT_OK : WT_ERR_INVALID_ARGUMENT},
                "wt_tokenize with fuzzed params");
}

void fuzz_prune_names(FuzzedDataProvider& fdp) {
  const std::string name = fdp.ConsumeRandomLengthString(16);
  wt_prune_method m = WT_PRUNE_FULL;
  const wt_status st = wt_prune_method_from_name(name.c_str(), &m);
  expect_status(st, {WT_OK, WT_ERR_INVALID_ARGUMENT}, "wt_prune_method_from_name");
  if (st == WT_OK && std::strcmp(wt_prune_method_name(m), name.c_str()) != 0)
    fail("wt_prune_method_from_name(\"%s\") does not name back", name.c_str());
  const int32_t raw = pick_int(fdp, 12);
  const char* raw_name = wt_fuzz_prune_method_name(raw);
  if (!raw_name) fail("wt_prune_method_name returned NULL");
  bool listed = false;  // a method the library lists has that id
  for (int32_t i = 0; i < wt_prune_method_count(); ++i) {
    wt_prune_method id = WT_PRUNE_FULL;
    expect_status(wt_prune_method_at(i, &id), {WT_OK}, "wt_prune_method_at");
    listed = listed || id == raw;
  }
  if (listed == (std::strcmp(raw_name, "unknown") == 0)) fail("wt_prune_method_name(%d) is \"%s\"", raw, raw_name);
}

wt_context_params fuzz_context_params(FuzzedDataProvider& fdp, StopAfter* stop) {
  wt_context_params p = wt_context_default_params();
  p.n_ctx = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int32_t>(0, 96) : pick_int(fdp, 512);
  // A valid thread count above 2 becomes 2: each context starts its threads, and a thousand
  // per run would be all the fuzzer measures. Invalid counts stay as they are.
  p.n_threads = pick_int(fdp, 2);
  if (p.n_threads > 2 && p.n_threads <= 1024) p.n_threads = 2;
  p.logits_all = fdp.ConsumeBool();
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    stop->calls_left = fdp.ConsumeIntegralInRange<int>(0, 8);
    p.progress = progress_stop_after, p.progress_user = stop;
  }
  set_raw_enum(&p.matmul_mode, fdp.ConsumeIntegralInRange<int>(0, 7) == 0 ? pick_int(fdp, 2) : fdp.ConsumeBool());
  p.prune = fuzz_prune_params(fdp);
  switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: p.memory_budget_bytes = fdp.ConsumeIntegral<uint64_t>(); break;
    case 1: p.memory_budget_bytes = fdp.ConsumeIntegralInRange<uint64_t>(0, 8ull << 20); break;
    default: break;
  }
  if (fdp.ConsumeBool()) p.max_new_tokens = pick_int(fdp, 64);
  if (fdp.ConsumeBool()) {
    p.kv_device_blocks = pick_int(fdp, 16);
    p.kv_block_tokens = pick_int(fdp, 64);
    p.kv_sync_swaps = fdp.ConsumeBool();
  }
  // The KV type (API 6): one of the three mostly (f16 is the default), now and then any int.
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0)
    set_raw_enum(&p.kv_type, fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int32_t>(WT_KV_F32, WT_KV_Q8_0)
                                               : pick_int(fdp, 3));
  // The pager's flags (API 8): the copying pager mostly, now and then any bits.
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0)
    p.kv_pager_flags = fdp.ConsumeBool() ? WT_KV_PAGER_COPY : fdp.ConsumeIntegral<uint64_t>();
  // Prompt passes and layer slices (API 10): a few rows mostly (several of a short prompt), now
  // and then any int (negative: refused).
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0)
    p.n_batch_rows = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int32_t>(0, 9) : pick_int(fdp, 512);
  // The CPU's flags (API 14): fixed threads mostly, now and then any bits (refused).
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0)
    p.cpu_flags = fdp.ConsumeBool() ? WT_CPU_FIXED_THREADS : fdp.ConsumeIntegral<uint64_t>();
  const size_t shift = prune_shift(p.prune.struct_size);
  p.struct_size = pick_struct_size(fdp, context_params_sizes(shift), sizeof p - shift);
  return p;
}

// The caller's struct as the library should read it: its layout's fields, the rest defaults.
wt_context_params as_read(const wt_context_params& p) {
  wt_context_params full = wt_context_default_params();
  size_t end = sizeof full;
  const size_t shift = prune_shift(p.prune.struct_size);
  for (const SizeRange& r : context_params_sizes(shift))
    if (p.struct_size >= r.lo && p.struct_size <= r.hi) end = r.lo + shift;
  std::memcpy(&full, &p, end);
  full.struct_size = sizeof full;
  if (shift > 0) {  // an API 1-3 prune struct: its fields, the later ones (extra) at their defaults
    const wt_prune_params defaults = wt_prune_default_params();
    std::memcpy(&full.prune.extra, &defaults.extra, sizeof defaults.extra);
    full.prune.struct_size = sizeof full.prune;
  }
  return full;
}

bool same_plan(const wt_context_plan_info& a, const wt_context_plan_info& b) {
  return a.n_ctx == b.n_ctx && a.weights_bytes == b.weights_bytes && a.arena_bytes == b.arena_bytes &&
         a.kv_bytes == b.kv_bytes && a.pager_device_bytes == b.pager_device_bytes &&
         a.pager_host_bytes == b.pager_host_bytes && a.context_bytes == b.context_bytes &&
         a.batch_rows == b.batch_rows;
}

wt_sampler* fuzz_sampler(FuzzedDataProvider& fdp) {
  wt_sampler_params p = wt_sampler_default_params();
  p.struct_size = pick_struct_size(fdp, sampler_params_sizes(), sizeof p);
  if (fdp.ConsumeBool()) p.temperature = pick_float(fdp);
  if (fdp.ConsumeBool()) p.top_k = pick_int(fdp, 300);
  if (fdp.ConsumeBool()) p.top_p = pick_float(fdp);
  p.seed = fdp.ConsumeIntegral<uint64_t>();
  if (fdp.ConsumeBool()) p.min_p = pick_float(fdp);
  if (fdp.ConsumeBool()) p.repeat_penalty = pick_float(fdp);
  if (fdp.ConsumeBool()) p.frequency_penalty = pick_float(fdp);
  if (fdp.ConsumeBool()) p.presence_penalty = pick_float(fdp);
  if (fdp.ConsumeBool()) p.penalty_last_n = pick_int(fdp, 300);
  // An API 1 struct has none of the API 12 fields: the library reads their defaults.
  const bool api12 = p.struct_size >= offsetof(wt_sampler_params, penalty_last_n) + sizeof(int32_t);
  const bool valid = size_accepted(sampler_params_sizes(), p.struct_size) && std::isfinite(p.temperature) &&
                     p.top_k >= 0 && p.top_p > 0.0f && p.top_p <= 1.0f &&
                     (!api12 || (p.min_p >= 0.0f && p.min_p <= 1.0f && std::isfinite(p.repeat_penalty) &&
                                 p.repeat_penalty > 0.0f && std::isfinite(p.frequency_penalty) &&
                                 std::isfinite(p.presence_penalty) && p.penalty_last_n >= 0 &&
                                 p.penalty_last_n <= (1 << 20)));
  CallerStruct<wt_sampler_params> caller(p);
  wt_sampler* s = nullptr;
  const wt_status st = wt_sampler_create(g_model, caller.get(), &s);
  expect_status(st, {valid ? WT_OK : WT_ERR_INVALID_ARGUMENT}, "wt_sampler_create");
  return s;
}

std::vector<wt_token> fuzz_tokens(FuzzedDataProvider& fdp, int32_t max_n) {
  std::vector<wt_token> t(fdp.ConsumeIntegralInRange<int32_t>(0, max_n));
  for (wt_token& id : t)
    id = fdp.ConsumeIntegralInRange<int>(0, 15) == 0 ? pick_int(fdp, g_n_vocab) : fdp.ConsumeIntegralInRange(0, g_n_vocab - 1);
  return t;
}

bool all_in_vocab(const std::vector<wt_token>& t) {
  for (const wt_token id : t)
    if (id < 0 || id >= g_n_vocab) return false;
  return true;
}

void run_context(wt_context* ctx, const wt_context_plan_info& plan, FuzzedDataProvider& fdp) {
  wt_context_stats stats;
  expect_status(wt_context_get_stats(ctx, &stats), {WT_OK}, "wt_context_get_stats");
  if (stats.arena_bytes != plan.arena_bytes || stats.kv_bytes != plan.kv_bytes)
    fail("context arena %llu (KV %llu) bytes, planned %llu (KV %llu)", (unsigned long long)stats.arena_bytes,
         (unsigned long long)stats.kv_bytes, (unsigned long long)plan.arena_bytes, (unsigned long long)plan.kv_bytes);
  if (stats.batch_rows != plan.batch_rows) fail("context runs %d rows at once, planned %d", stats.batch_rows, plan.batch_rows);

  const std::vector<wt_token> prompt = fuzz_tokens(fdp, plan.n_ctx + 2);
  const wt_status st = wt_context_prefill(ctx, prompt.data(), prompt.size());
  expect_status(st, {WT_OK, WT_ERR_INVALID_ARGUMENT, WT_ERR_CONTEXT_FULL, WT_ERR_ABORTED}, "wt_context_prefill");
  if (prompt.empty()) expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_context_prefill of no tokens");
  if (st == WT_OK && (!all_in_vocab(prompt) || static_cast<int32_t>(prompt.size()) > plan.n_ctx))
    fail("wt_context_prefill accepted %zu tokens (n_ctx %d) with ids out of range or too many", prompt.size(), plan.n_ctx);

  for (int i = fdp.ConsumeIntegralInRange<int>(0, 3); i > 0; --i) {
    const wt_token t = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange(0, g_n_vocab - 1) : pick_int(fdp, g_n_vocab);
    expect_status(wt_context_decode(ctx, t), {WT_OK, WT_ERR_INVALID_ARGUMENT, WT_ERR_CONTEXT_FULL, WT_ERR_ABORTED},
                  "wt_context_decode");
  }
  const float* logits = nullptr;
  expect_status(wt_context_logits(ctx, pick_int(fdp, 8), &logits), {WT_OK, WT_ERR_INVALID_ARGUMENT}, "wt_context_logits");

  if (wt_sampler* s = fuzz_sampler(fdp)) {
    const std::vector<wt_token> seen = fuzz_tokens(fdp, 80);
    expect_status(wt_sampler_accept(s, seen.data(), seen.size()),
                  {all_in_vocab(seen) ? WT_OK : WT_ERR_INVALID_ARGUMENT}, "wt_sampler_accept");
    if (fdp.ConsumeBool()) expect_status(wt_sampler_reset(s), {WT_OK}, "wt_sampler_reset");
    const bool have_logits = wt_context_logits(ctx, -1, &logits) == WT_OK;
    wt_token tok = -7;
    const wt_status sampled = wt_sampler_sample(s, ctx, &tok);
    expect_status(sampled, {have_logits ? WT_OK : WT_ERR_INVALID_ARGUMENT}, "wt_sampler_sample");
    if (sampled == WT_OK && (tok < 0 || tok >= g_n_vocab)) fail("wt_sampler_sample gave token %d", tok);
    if (sampled != WT_OK && tok != -7) fail("wt_sampler_sample wrote its output on failure");
    const int32_t n_max = fdp.ConsumeIntegralInRange<int32_t>(-2, 4);
    int32_t n_generated = 0;
    expect_status(wt_generate(ctx, s, n_max, nullptr, nullptr, &n_generated),
                  {WT_OK, WT_ERR_INVALID_ARGUMENT, WT_ERR_CONTEXT_FULL}, "wt_generate");
    wt_sampler_free(s);
  }

  uint64_t dev = 0, host = 0;
  const int32_t layer = pick_int(fdp, g_n_layer);
  expect_status(wt_context_get_kv_residency(ctx, layer, &dev, &host),
                {layer >= 0 && layer < g_n_layer ? WT_OK : WT_ERR_INVALID_ARGUMENT}, "wt_context_get_kv_residency");
  wt_prune_stats ps;
  expect_status(wt_context_get_prune_stats(ctx, &ps), {WT_OK}, "wt_context_get_prune_stats");
  if (ps.asl_ratios)  // ASan: n_layer doubles behind the pointer
    for (int32_t l = 0; l < ps.n_layer; ++l) g_sink = g_sink + std::isnan(ps.asl_ratios[l]);
  const float* scores = nullptr;
  int32_t n_scores = 0;
  const wt_status ranked = wt_context_get_token_ranking(ctx, pick_int(fdp, g_n_layer), &scores, &n_scores);
  expect_status(ranked, {WT_OK, WT_ERR_INVALID_ARGUMENT}, "wt_context_get_token_ranking");
  if (ranked == WT_OK)
    for (int32_t i = 0; i < n_scores; ++i) g_sink = g_sink + std::isnan(scores[i]);  // ASan: the floats are there
  const int32_t* kv_pos = nullptr;
  int32_t n_kv = 0;
  const wt_status kv_listed = wt_context_get_kv_positions(ctx, pick_int(fdp, g_n_layer), pick_int(fdp, 4), &kv_pos, &n_kv);
  expect_status(kv_listed, {WT_OK, WT_ERR_INVALID_ARGUMENT}, "wt_context_get_kv_positions");
  if (kv_listed == WT_OK)
    for (int32_t i = 0; i < n_kv; ++i) g_sink = g_sink + (kv_pos[i] < 0);  // ASan: the rows are there
  const int32_t* attended = nullptr;
  int32_t n_attended = 0;
  const wt_status read = wt_context_get_attended_rows(ctx, pick_int(fdp, g_n_layer), &attended, &n_attended);
  expect_status(read, {WT_OK, WT_ERR_INVALID_ARGUMENT}, "wt_context_get_attended_rows");
  if (read == WT_OK)
    for (int32_t i = 0; i < n_attended; ++i) g_sink = g_sink + (attended[i] < 0);  // ASan: the rows are there

  // Cut back to a point from the input, then a step from there: n_past follows a cut that is
  // taken and no refusal changes it (whittle.h).
  const int32_t held = wt_context_n_past(ctx);
  const int32_t keep = fdp.ConsumeIntegralInRange<int32_t>(-2, held + 2);
  const wt_status cut = wt_context_truncate(ctx, keep);
  if (keep < 0 || keep > held)
    expect_status(cut, {WT_ERR_INVALID_ARGUMENT}, "wt_context_truncate out of range");
  else
    expect_status(cut, {WT_OK, WT_ERR_UNSUPPORTED}, "wt_context_truncate");
  if (wt_context_n_past(ctx) != (cut == WT_OK ? keep : held))
    fail("wt_context_truncate to %d of %d left %d tokens", keep, held, wt_context_n_past(ctx));
  if (cut == WT_OK && keep > 0)
    expect_status(wt_context_decode(ctx, pick_int(fdp, g_n_vocab)), {WT_OK, WT_ERR_INVALID_ARGUMENT, WT_ERR_CONTEXT_FULL},
                  "wt_context_decode after wt_context_truncate");

  // An output struct's struct_size from the input (API 5): the library writes no byte past
  // it, and refuses (writing nothing) one below the struct's first layout.
  // wt_context_stats has four layouts: API 5's, API 9's with pager_transfers, API 11's with
  // batch_rows and API 14's with threads_per_op; each accepts the sizes up to where the next begins, and any size above
  // the newest is read as it.
  const std::vector<SizeRange> stats_sizes = context_stats_sizes();
  const size_t size = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<size_t>(0, 512)
                                        : pick_struct_size(fdp, stats_sizes, sizeof(wt_context_stats));
  // The library writes at most its own struct, whatever the size says: the bytes after it
  // show a write too far.
  std::vector<unsigned char> buf(sizeof(wt_context_stats) + 64, 0xAB);
  std::memcpy(buf.data(), &size, sizeof size);
  const wt_status got = wt_context_get_stats(ctx, reinterpret_cast<wt_context_stats*>(buf.data()));
  // Below the first layout or between two is refused, writing nothing.
  const bool stats_ok = size_accepted(stats_sizes, size) || size > sizeof(wt_context_stats);
  expect_status(got, {stats_ok ? WT_OK : WT_ERR_INVALID_ARGUMENT}, "wt_context_get_stats");
  const size_t written = got != WT_OK                      ? sizeof(size_t)
                         : size >= sizeof(wt_context_stats) ? sizeof(wt_context_stats)
                                                            : size;
  for (size_t i = written; i < buf.size(); ++i)
    if (buf[i] != 0xAB) fail("wt_context_get_stats with struct_size %zu wrote byte %zu", size, i);
  // struct_size comes back as the bytes written (whittle.h), untouched on a refusal.
  size_t size_back = 0;
  std::memcpy(&size_back, buf.data(), sizeof size_back);
  if (size_back != (got == WT_OK ? written : size))
    fail("wt_context_get_stats with struct_size %zu returned struct_size %zu", size, size_back);

  // An abort request stops the next prefill of two tokens or more. (A one-token prefill runs
  // the decode path, which never checks the request, and only consumes it.)
  wt_context_reset(ctx);
  if (wt_context_n_past(ctx) != 0) fail("wt_context_reset left %d tokens", wt_context_n_past(ctx));
  wt_context_abort(ctx);
  const wt_token two[2] = {0, 1};
  expect_status(wt_context_prefill(ctx, two, 2), {plan.n_ctx >= 2 ? WT_ERR_ABORTED : WT_ERR_CONTEXT_FULL},
                "wt_context_prefill after wt_context_abort");
  // The request is consumed: the next prefill runs.
  expect_status(wt_context_prefill(ctx, two, 1), {WT_OK}, "wt_context_prefill after an aborted one");
}

void fuzz_context(FuzzedDataProvider& fdp) {
  StopAfter stop;
  const wt_context_params p = fuzz_context_params(fdp, &stop);
  const bool accepted = size_accepted(context_params_sizes(prune_shift(p.prune.struct_size)), p.struct_size);
  CallerContext caller(p);

  wt_context_plan_info plan{};  // zero, struct_size its size (whittle.h: C++ sets it)
  const wt_status planned = wt_context_plan(g_model, caller.get(), &plan);
  // WT_ERR_UNSUPPORTED: an f16 KV cache with the pager (whittle.h, kv_type).
  expect_status(planned, {WT_OK, WT_ERR_INVALID_ARGUMENT, WT_ERR_UNSUPPORTED}, "wt_context_plan");
  if (!accepted) expect_status(planned, {WT_ERR_INVALID_ARGUMENT}, "wt_context_plan with a bad struct_size");
  if (accepted && p.struct_size < sizeof p - prune_shift(p.prune.struct_size)) {
    // An older layout reads as the newest with the later fields at their defaults.
    const wt_context_params full = as_read(p);
    wt_context_plan_info plan_full{};
    const wt_status st = wt_context_plan(g_model, &full, &plan_full);
    if (st != planned || (st == WT_OK && !same_plan(plan, plan_full)))
      fail("struct_size %zu is not read as its layout with default later fields", p.struct_size);
  }
  if (planned != WT_OK || plan.context_bytes > kMaxContextBytes) {
    if (planned == WT_OK) return;
    // The plan refused the params: creation must refuse them the same way, allocating nothing.
    wt_context* ctx = kUnset;
    expect_status(wt_context_create(g_model, caller.get(), &ctx), {planned}, "wt_context_create after a refused plan");
    if (ctx != kUnset) fail("wt_context_create wrote its output on failure");
    return;
  }
  if (plan.n_ctx < 1 || (p.n_ctx > 0 && plan.n_ctx != p.n_ctx) || (p.n_ctx == 0 && plan.n_ctx != g_n_ctx_train))
    fail("planned n_ctx %d for n_ctx %d", plan.n_ctx, p.n_ctx);
  wt_context* ctx = kUnset;
  const wt_status created = wt_context_create(g_model, caller.get(), &ctx);
  const wt_context_params read = as_read(p);
  if (read.memory_budget_bytes != 0 && plan.context_bytes > read.memory_budget_bytes) {
    expect_status(created, {WT_ERR_BUDGET}, "wt_context_create over memory_budget_bytes");
  } else {
    expect_status(created, {WT_OK}, "wt_context_create within the plan");
  }
  if (created != WT_OK) {
    if (ctx != kUnset) fail("wt_context_create wrote its output on failure");
    return;
  }
  run_context(ctx, plan, fdp);
  wt_context_free(ctx);
}

void remove_model_file() {
  std::error_code ec;
  std::filesystem::remove(g_model_path, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  quiet_logs();
  const std::vector<uint8_t> bytes = wt::test::make_tiny_llama(wt::test::fuzz_model_options()).build();
  g_model = load_model_bytes(bytes, "api");
  g_model_path = wt::test::temp_file("fuzz_api_load.gguf");
  if (!wt::test::write_file(g_model_path, bytes)) fail("cannot write %s", g_model_path.c_str());
  std::atexit(remove_model_file);
  wt_model_info info;
  expect_status(wt_model_get_info(g_model, &info), {WT_OK}, "wt_model_get_info");
  g_n_vocab = info.n_vocab, g_n_layer = info.n_layer, g_n_ctx_train = info.n_ctx_train;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  // Which groups run: a byte of flags, so the fuzzer can focus on one.
  const uint8_t groups = fdp.ConsumeIntegral<uint8_t>();
  if (groups & 1) fuzz_model_load(fdp);
  if (groups & 2) fuzz_tokenize_params(fdp);
  if (groups & 4) fuzz_prune_names(fdp);
  if (groups & 8) wt_sampler_free(fuzz_sampler(fdp));
  fuzz_context(fdp);
  return 0;
}
