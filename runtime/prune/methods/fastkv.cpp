// FastKV (METHODS.md §2): SnapKV-style KV compression in every layer, and at the TSP layer
// the window scores summed over all KV heads pick the T rows that later layers compute
// (token-selective propagation, original positions). Proportional mode: C = floor(n r)
// before the TSP layer, floor(n r / t) after it, T = floor(L t); constant mode: C, T.
#include <algorithm>
#include <cmath>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"

namespace wt {
namespace {

class FastKV final : public ScoredPolicy {
 public:
  using ScoredPolicy::ScoredPolicy;

  ScoreRequest request(int32_t l, int32_t n) override {
    if (pass_ != 0) return {};
    const bool compress = n > kv_cap(l, n, window_);
    const bool select = l == p_.layer && n > tsp_len(n_prompt_);
    return compress || select ? window_request(n, window_) : ScoreRequest{};
  }

  Status decide(int32_t l, const Observation& obs, Selector& sel, Decision* d) override {
    if (!obs.scores) return Status::ok();
    const int32_t n = obs.n_rows, w = window_;
    sum_groups(obs);
    record_summed(obs);
    WT_TRY(keep_kv_per_head(sel, n, kv_cap(l, n, w), w, d));
    if (l == p_.layer && n > tsp_len(n_prompt_)) {
      sum_kv_heads(obs.n_cols);
      record(-1, obs.positions, token_scores_.data(), obs.n_cols);
      WT_TRY(keep_tokens(sel, token_scores_.data(), n, tsp_len(n_prompt_), w, d));
      report_.selection_layer = l;
      report_.triggered = true;
      report_.n_selected = d->n_keep_rows;
    }
    return Status::ok();
  }

  int32_t kv_budget(int32_t l, int32_t n_prompt) const override {
    const int32_t n = l <= p_.layer ? n_prompt : std::min(n_prompt, tsp_len(n_prompt));
    return std::min(n, kv_cap(l, n, prune_window(p_, n_prompt)));
  }

 private:
  bool constant() const { return p_.budget > 0; }
  int32_t tsp_len(int32_t n_prompt) const {
    const int32_t t = constant() ? p_.fastkv_tsp_len
                                 : static_cast<int32_t>(std::floor(static_cast<double>(p_.fastkv_tsp_rate) * n_prompt));
    return std::max(t, prune_window(p_, n_prompt));
  }
  // KV budget of layer l whose current length is n, for a prompt whose window is w.
  int32_t kv_cap(int32_t l, int32_t n, int32_t w) const {
    if (constant()) return std::max(p_.budget, w);
    // Past the TSP layer the budget is keep / tsp_rate of the rows left; a tiny rate makes
    // that ratio huge (fuzz_api: 5.8e35 rows, beyond int), and past 1 it keeps every row.
    const double r = l <= p_.layer ? p_.keep : std::min(1.0, static_cast<double>(p_.keep) / p_.fastkv_tsp_rate);
    return std::max(static_cast<int32_t>(std::floor(r * n)), w);
  }
};

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"fastkv_tsp_rate", PruneParamType::f32, offsetof(wt_prune_params, fastkv_tsp_rate), 0, {0, 1, true, false}, false,
     "tokens kept past the TSP layer, a fraction of L; 0 = 2 * keep (at most 1)"},
    {"fastkv_tsp_len", PruneParamType::i32, offsetof(wt_prune_params, fastkv_tsp_len), 0, {}, true,
     "constant mode (budget > 0): tokens kept past the TSP layer; 0 = 2 * budget"},
};

void resolve(wt_prune_params* p, const PruneShape&) {
  if (p->fastkv_tsp_rate == 0.0f) p->fastkv_tsp_rate = std::min(1.0f, 2.0f * p->keep);
  if (p->fastkv_tsp_len == 0) p->fastkv_tsp_len = 2 * p->budget;
}

Status check(const wt_prune_params& p, const PruneShape&) {
  if (p.budget > 0 && p.fastkv_tsp_len < p.window)
    return error(WT_ERR_INVALID_ARGUMENT, "prune.fastkv_tsp_len is below the window");
  return Status::ok();
}

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& fastkv() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_FASTKV,
                                    .name = "fastkv",
                                    .summary = "FastKV: SnapKV-style KV + token-selective propagation at one layer",
                                    .params = kParams,
                                    .window = 8,
                                    .pool_kernel = 31,
                                    .pool = WT_POOL_MAX,
                                    .resolve = resolve,
                                    .check = check,
                                    .make = make_policy_of<FastKV>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
