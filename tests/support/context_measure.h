// Issue 8's measured-vs-planned check, shared by the CPU (tests/unit/test_planner.cpp) and
// Vulkan (tests/model_vulkan) tests: the cases, their parameters, and one measured run - the
// growth of the peak resident set from before wt_context_create to after a prompt of
// n_ctx - 16 tokens and 16 decode steps.
#pragma once

#include <whittle.h>

#include <algorithm>
#include <string>
#include <vector>

#include "rss.h"

namespace wt::test {

// The KV resident, the copying pager (WT_KV_PAGER_COPY), the pager in place (the default on
// the unified memory of the CPU backend and lavapipe).
enum class Paging { none, copy, in_place };

struct MeasureCase {
  wt_prune_method method;
  Paging pager;
  wt_kv_type kv_type = WT_KV_F32;
};
// Full KV, three methods, full KV paged (copying and in place), full KV and SlimInfer with an
// f16 and a q8_0 cache (q8_0 paged too), SlimInfer paged in place (its pool sized by the
// method's budgets).
inline constexpr MeasureCase kMeasureCases[] = {{WT_PRUNE_FULL, Paging::none},
                                                {WT_PRUNE_FASTKV, Paging::none},
                                                {WT_PRUNE_SNAPKV, Paging::none},
                                                {WT_PRUNE_SLIMINFER, Paging::none},
                                                {WT_PRUNE_FULL, Paging::copy},
                                                {WT_PRUNE_FULL, Paging::in_place},
                                                {WT_PRUNE_FULL, Paging::none, WT_KV_F16},
                                                {WT_PRUNE_SLIMINFER, Paging::none, WT_KV_F16},
                                                {WT_PRUNE_FULL, Paging::none, WT_KV_Q8_0},
                                                {WT_PRUNE_SLIMINFER, Paging::none, WT_KV_Q8_0},
                                                {WT_PRUNE_FULL, Paging::copy, WT_KV_Q8_0},
                                                {WT_PRUNE_SLIMINFER, Paging::in_place, WT_KV_Q8_0}};

inline std::string case_name(MeasureCase c) {
  return std::string(wt_prune_method_name(c.method)) +
         (c.pager == Paging::copy ? " (pager, copying)" : c.pager == Paging::in_place ? " (pager, in place)" : "") +
         (c.kv_type == WT_KV_F16 ? " (f16 KV)" : c.kv_type == WT_KV_Q8_0 ? " (q8_0 KV)" : "");
}

// Keep 0.3, the KV sized by the plan (max_new_tokens 16), and for the pager a device pool of
// a quarter of the KV (n_layer layers of n_ctx / 64 blocks).
inline wt_context_params measure_params(MeasureCase c, int32_t n_ctx, int32_t n_layer) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  cp.prune = wt_prune_default_params();
  cp.prune.method = c.method;
  cp.prune.keep = 0.3f;
  cp.max_new_tokens = 16;
  cp.kv_device_blocks = c.pager != Paging::none ? std::max(n_ctx / 64, n_layer * (n_ctx / 64) / 4) : 0;
  cp.kv_pager_flags = c.pager == Paging::copy ? WT_KV_PAGER_COPY : 0;
  cp.kv_type = c.kv_type;
  return cp;
}

struct ContextMeasure {
  wt_context_plan_info plan{};
  wt_context_stats stats{};
  uint64_t peak_growth = 0;  // the peak resident set during the run - the resident set before
  int64_t end_growth = 0;    // the resident set at the end, the context still alive - before
  std::string grew;          // the mappings that grew by the end
  std::string kept;          // the mappings still grown after wt_context_free
};

// The whole context once; false with *why if a call fails. text holds n_ctx tokens.
inline bool measure_context(const wt_model* m, const wt_context_params& cp, const std::vector<wt_token>& text,
                            ContextMeasure* out, std::string* why) {
  const size_t n_prompt = static_cast<size_t>(cp.n_ctx - 16);
  if (text.size() < static_cast<size_t>(cp.n_ctx)) {
    *why = "fewer tokens than n_ctx";
    return false;
  }
  if (wt_context_plan(m, &cp, &out->plan) != WT_OK) {
    *why = std::string("wt_context_plan: ") + wt_last_error();
    return false;
  }
  // The snapshot of the mappings first: a map of a few hundred strings, which taken after
  // `before` counted itself (0.25-0.55 MiB on lavapipe).
  const auto maps_before = rss_by_mapping();
  release_free_memory();
  if (!reset_rss_peak()) {
    *why = "cannot reset the peak resident set (/proc/self/clear_refs)";
    return false;
  }
  const uint64_t before = proc_status_kib("VmRSS:") * 1024;
  wt_context* ctx = nullptr;
  if (wt_context_create(m, &cp, &ctx) != WT_OK) {
    *why = std::string("wt_context_create: ") + wt_last_error();
    return false;
  }
  wt_status st = wt_context_prefill(ctx, text.data(), n_prompt);
  for (size_t i = 0; i < 16 && st == WT_OK; ++i) st = wt_context_decode(ctx, text[i]);
  if (st != WT_OK) {
    *why = std::string("running the context: ") + wt_last_error();
    wt_context_free(ctx);
    return false;
  }
  const uint64_t peak = proc_status_kib("VmHWM:") * 1024;
  out->peak_growth = peak > before ? peak - before : 0;
  out->end_growth = static_cast<int64_t>(proc_status_kib("VmRSS:") * 1024) - static_cast<int64_t>(before);
  out->grew = rss_growth(maps_before, rss_by_mapping(), 64);
  (void)wt_context_get_stats(ctx, &out->stats);
  wt_context_free(ctx);
  release_free_memory();
  out->kept = rss_growth(maps_before, rss_by_mapping(), 64);
  return true;
}

}  // namespace wt::test
