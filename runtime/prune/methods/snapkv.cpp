// SnapKV: in every layer, the last W queries' pooled attention picks the top (C - W) prefix
// KV rows of each KV head, plus the window (METHODS.md §0-1). The official code repeats KV
// heads before selecting (a per-query-head cache of H heads); Whittle keeps the model's
// KV-head layout and sums the G query heads of each KV head, as FastKV/ASL/CLAA do (see
// runtime/prune/README.md).
#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"

namespace wt {
namespace {

class SnapKV final : public ScoredPolicy {
 public:
  using ScoredPolicy::ScoredPolicy;

  ScoreRequest request(int32_t, int32_t n) override {
    if (pass_ != 0 || n <= budget(n_prompt_)) return {};
    return window_request(n, window_);
  }

  Status decide(int32_t, const Observation& obs, Selector& sel, Decision* d) override {
    if (!obs.scores) return Status::ok();
    sum_groups(obs);
    record_summed(obs);
    // No shared selection: the last layer's ranking stands for the method's.
    record_final(obs.positions, token_scores_.data(), obs.n_cols);
    return keep_kv_per_head(sel, obs.n_rows, budget(n_prompt_), window_, d);
  }

  int32_t kv_budget(int32_t, int32_t n_prompt) const override { return std::min(n_prompt, budget(n_prompt)); }

 private:
  int32_t budget(int32_t n) const { return prune_budget(p_, n, prune_window(p_, n)); }
};

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& snapkv() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_SNAPKV,
                                    .name = "snapkv",
                                    .summary = "SnapKV: window scores in every layer keep the top (C - W) KV rows per KV head + W",
                                    .params = {},
                                    .window = 32,
                                    .pool_kernel = 31,
                                    .pool = WT_POOL_MAX,
                                    .resolve = nullptr,
                                    .check = nullptr,
                                    .make = make_policy_of<SnapKV>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
