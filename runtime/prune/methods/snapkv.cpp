// SnapKV: in every layer, the last W queries' pooled attention picks the top (C - W) prefix
// KV rows of each KV head, plus the window (METHODS.md §0-1). The official code repeats KV
// heads before selecting (a per-query-head cache of H heads); Whittle keeps the model's
// KV-head layout and sums the G query heads of each KV head, as FastKV/ASL/CLAA do (see
// runtime/prune/README.md).
//
// snapkv_pyramid = beta > 0 spreads the same total budget over the layers as PyramidKV
// does (Cai et al. 2024): attention is broad in the lower layers and narrow in the upper
// ones, so the prefix budget P = C - W falls linearly from 2P - P/beta at layer 0 to P/beta
// at the last layer (the authors' default beta is 20); each layer keeps its window too. A
// negative beta turns the pyramid upside down (the most rows in the last layer), which is
// what measurement on Qwen2.5 asked about (docs/results/fidelity-qwen2.5-0.5b.md).
//
// snapkv_union = 1 selects as the authors' code does, per query head, at the same budget:
// each of a KV head's G query heads ranks the prefix by its own pooled scores, and the KV
// head keeps the union, taking the heads' ranks in turn (head 0's best, head 1's best, ...,
// then their second best) until C - W rows; the default sums the group's scores first.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"

namespace wt {
namespace {

constexpr PruneParamSpec kParams[] = {
    {"snapkv_pyramid", PruneParamType::i32, kPruneExtra, 0, {}, false,
     "beta > 0: PyramidKV's per-layer budgets (layer 0 keeps 2P - P/beta prefix rows, the last P/beta, "
     "the same total); beta < 0: the same upside down; 0 = every layer P"},
    {"snapkv_union", PruneParamType::i32, kPruneExtra, 0, {0, 1}, false,
     "1: per KV head the union of its query heads' own top rows, their ranks taken in turn up to C - W "
     "(the authors' per-query-head selection at the same budget); 0 = the group's summed scores"},
};

class SnapKV final : public ScoredPolicy {
 public:
  SnapKV(const wt_prune_params& p, const PruneShape& s)
      : ScoredPolicy(p, s),
        beta_(static_cast<int32_t>(prune_param_value(p, kParams[0]))),
        union_(prune_param_value(p, kParams[1]) != 0) {
    if (union_) {
      const size_t n = static_cast<size_t>(s.n_ctx), g = static_cast<size_t>(s.n_head / s.n_head_kv);
      order_.assign(n * g, 0);
      seen_.assign(n, 0);
    }
  }

  ScoreRequest request(int32_t, int32_t n) override {
    if (pass_ != 0 || n <= budget(n_prompt_)) return {};
    return window_request(n, window_);
  }

  Status decide(int32_t l, const Observation& obs, Selector& sel, Decision* d) override {
    if (!obs.scores) return Status::ok();
    sum_groups(obs);
    record_summed(obs);
    // No shared selection: the last layer's ranking stands for the method's.
    record_final(obs.positions, token_scores_.data(), obs.n_cols);
    if (union_) return keep_kv_union(obs, layer_budget(l, n_prompt_), d);
    return keep_kv_per_head(sel, obs.n_rows, layer_budget(l, n_prompt_), window_, d);
  }

  int32_t kv_budget(int32_t l, int32_t n_prompt) const override {
    return std::min(n_prompt, layer_budget(l, n_prompt));
  }

 private:
  int32_t budget(int32_t n) const { return prune_budget(p_, n, prune_window(p_, n)); }

  // Layer l's budget C_l (window included) for a prompt of n tokens. With beta, the prefix
  // budgets fall linearly from hi to lo with mean P: lo = P / beta, hi = 2P - lo, and where
  // hi is more than the prefix holds, hi = the prefix and lo = 2P - hi (as the authors'
  // code clamps). The step is rounded down from the top, so the layers' sum is at most
  // n_layer * P: the pyramid never keeps more than the flat budget in total.
  int32_t layer_budget(int32_t l, int32_t n) const {
    const int32_t c = budget(n);
    const int32_t L = shape_.n_layer;
    if (beta_ == 0 || L < 2 || n <= c) return c;
    // up: the distance from the layer with the fewest rows (the last; upside down, the first).
    const int64_t beta = beta_ > 0 ? beta_ : -int64_t{beta_}, up = beta_ > 0 ? L - 1 - l : l;
    const int32_t w = prune_window(p_, n);
    const int64_t p = c - w, n_prefix = n - w;
    int64_t lo = p / beta, hi = 2 * p - lo;
    if (hi > n_prefix) {
      hi = n_prefix;
      lo = 2 * p - hi;
    }
    const int64_t span = (hi - lo) * up / (L - 1);
    return static_cast<int32_t>(w + lo + span);
  }

  // snapkv_union: per KV head, the query heads' own top (c - w) prefix rows (score
  // descending, lower index first on ties), taken rank by rank in head order until c - w
  // distinct rows; then ascending, plus the window. On the host: a partial sort per query
  // head of the pooled scores the observation already holds.
  Status keep_kv_union(const Observation& obs, int32_t c, Decision* d) {
    const int32_t n_rows = obs.n_rows, w = window_;
    if (c >= n_rows) return Status::ok();
    const int32_t n_prefix = obs.n_cols, k = c - w, g = shape_.n_head / shape_.n_head_kv;  // n_cols = n_rows - w
    const size_t n = static_cast<size_t>(n_prefix);  // a score row's and an order row's stride
    for (int32_t kv = 0; kv < shape_.n_head_kv; ++kv) {
      for (int32_t h = 0; h < g; ++h) {
        const float* sc = obs.scores + static_cast<size_t>(kv * g + h) * n;
        int32_t* ord = order_.data() + static_cast<size_t>(h) * n;
        std::iota(ord, ord + n_prefix, 0);
        std::partial_sort(ord, ord + k, ord + n_prefix,
                          [sc](int32_t a, int32_t b) { return sc[a] > sc[b] || (sc[a] == sc[b] && a < b); });
      }
      std::fill(seen_.begin(), seen_.begin() + n_prefix, uint8_t{0});
      int32_t* row = kv_rows_.data() + static_cast<size_t>(kv) * c;
      int32_t picked = 0;
      for (int32_t r = 0; r < k && picked < k; ++r) {
        for (int32_t h = 0; h < g && picked < k; ++h) {
          const int32_t j = order_[static_cast<size_t>(h) * n + static_cast<size_t>(r)];
          if (!seen_[static_cast<size_t>(j)]) {
            seen_[static_cast<size_t>(j)] = 1;
            row[picked++] = j;
          }
        }
      }
      std::sort(row, row + k);
      for (int32_t i = 0; i < w; ++i) row[k + i] = n_prefix + i;
    }
    d->kv = Decision::Kv::per_head;
    d->kv_rows = kv_rows_.data();
    d->n_kv_rows = c;
    return Status::ok();
  }

  int32_t beta_;
  bool union_;
  std::vector<int32_t> order_;  // [G][n_ctx] a query head's prefix rows, best first (snapkv_union)
  std::vector<uint8_t> seen_;   // [n_ctx] rows the KV head took already
};

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& snapkv() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_SNAPKV,
                                    .name = "snapkv",
                                    .summary = "SnapKV: window scores in every layer keep the top (C - W) KV rows per KV head + W",
                                    .params = kParams,
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
