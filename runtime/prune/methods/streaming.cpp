// StreamingLLM (baseline): the first n_sink tokens plus the most recent ones, in every
// layer, chosen without looking at scores.
#include <algorithm>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"

namespace wt {
namespace {

class Streaming final : public ScoredPolicy {
 public:
  using ScoredPolicy::ScoredPolicy;

  ScoreRequest request(int32_t, int32_t) override { return {}; }

  Status decide(int32_t l, const Observation& obs, Selector&, Decision* d) override {
    const int32_t n = obs.n_rows, c = budget(n_prompt_);
    if (pass_ != 0 || n <= c) return Status::ok();
    if (l == 0) record_order(obs);
    const int32_t sinks = p_.n_sink, recent = c - sinks;
    for (int32_t i = 0; i < sinks; ++i) keep_rows_[static_cast<size_t>(i)] = i;
    for (int32_t i = 0; i < recent; ++i) keep_rows_[static_cast<size_t>(sinks + i)] = n - recent + i;
    d->kv = Decision::Kv::shared;
    d->kv_rows = keep_rows_.data();
    d->n_kv_rows = c;
    return Status::ok();
  }

  int32_t kv_budget(int32_t, int32_t n_prompt) const override { return std::min(n_prompt, budget(n_prompt)); }

 private:
  // The ranking tap, final row only (no layer scores anything): the order the method keeps
  // tokens in, sinks first (the first one highest), then the most recent.
  void record_order(const Observation& obs) {
    if (!recording()) return;
    const int32_t n = obs.n_rows, sinks = std::min(p_.n_sink, n);
    float* s = token_scores_.data();
    for (int32_t j = 0; j < n; ++j) s[j] = static_cast<float>(j < sinks ? n + (sinks - j) : j);
    record(-1, obs.positions, s, n);
  }
  // The recent part always covers the window.
  int32_t budget(int32_t n) const { return prune_budget(p_, n, p_.n_sink + p_.window); }
};

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"n_sink", PruneParamType::i32, offsetof(wt_prune_params, n_sink), 4, {0, kUnbounded}, true,
     "the first tokens always kept (attention sinks)"},
};

Status check(const wt_prune_params& p, const PruneShape&) {
  if (p.budget > 0 && p.budget < p.n_sink + p.window)
    return error(WT_ERR_INVALID_ARGUMENT, "prune.budget is below n_sink + window");
  return Status::ok();
}

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& streaming() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_STREAMING,
                                    .name = "streaming",
                                    .summary = "StreamingLLM: the n_sink first tokens and the most recent ones, every layer",
                                    .params = kParams,
                                    .window = 8,
                                    .pool_kernel = 7,
                                    .pool = WT_POOL_AVG,
                                    .resolve = nullptr,
                                    .check = check,
                                    .make = make_policy_of<Streaming>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
