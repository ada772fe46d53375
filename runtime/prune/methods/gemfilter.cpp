// GemFilter (METHODS.md §3): pass 1 runs up to the filter layer f and scores every key; the
// top K tokens (sorted) are re-prefilled as a fresh prompt at positions 0..K-1, as the
// reference does. The reference scores by the raw dot product with the last query, summed
// over all query heads, avg-pooled (k 5), and keeps no window. By default Whittle scores as
// SnapKV does (the last W = 32 queries' causal softmax, summed over all heads, max-pooled
// k 31) and keeps the window: on the models measured, with the filter layer at 0.6 of the
// depth, it kept every answer only so (docs/results/fidelity-gemfilter.md).
// `gemfilter_window_scores=0 pool_kernel=5 pool=avg` is the reference. Options: original positions, force-keep the
// last W tokens with the reference's scores. The window is at most half the budget.
#include <algorithm>
#include <cstring>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"

namespace wt {
namespace {

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"gemfilter_original_positions", PruneParamType::boolean, offsetof(wt_prune_params, gemfilter_original_positions),
     0, {}, false, "pass 2 at the tokens' original positions (default: re-indexed 0..K-1, as the reference)"},
    {"gemfilter_keep_window", PruneParamType::boolean, offsetof(wt_prune_params, gemfilter_keep_window), 0, {}, false,
     "with the reference's scores (gemfilter_window_scores=0): always keep the last W tokens (default: off, "
     "as the reference); window scores always keep them"},
    {"gemfilter_window_scores", PruneParamType::i32, kPruneExtra, 1, {0, 1}, false,
     "1 (default): score by the last W queries' causal softmax summed over heads (SnapKV's window) and "
     "keep the window; 0: the reference's raw dot products of the last query"},
};

class GemFilter final : public ScoredPolicy {
 public:
  GemFilter(const wt_prune_params& p, const PruneShape& s)
      : ScoredPolicy(p, s),
        window_scores_(prune_param_value(p, kParams[2]) != 0),
        keeps_window_(window_scores_ || p.gemfilter_keep_window) {}

  ScoreRequest request(int32_t l, int32_t n) override {
    if (l != p_.layer || !restarts(n)) return {};
    if (window_scores_) return window_request(n, window_);
    ScoreRequest r;
    r.kind = ScoreRequest::Kind::window;
    r.window = 1;
    r.softmax = false;
    r.n_cols = n;
    r.pool_kernel = p_.pool_kernel;
    r.pool_max = p_.pool == WT_POOL_MAX;
    return r;
  }

  Status decide(int32_t l, const Observation& obs, Selector& sel, Decision* d) override {
    // A first pass that will restart at the filter layer (request's test) keeps no KV: the
    // re-prefill rewrites every layer, so the plan holds K rows in each.
    if (l < p_.layer && restarts(obs.n_rows)) d->kv = Decision::Kv::none;
    if (!obs.scores) return Status::ok();
    const int32_t n = obs.n_rows, k = top_k(n), n_cols = obs.n_cols;
    // Each query head's pooled scores summed over all H heads (n_cols: every token for the
    // reference's one query; the prefix before the window for window scores).
    std::memcpy(token_scores_.data(), obs.scores, sizeof(float) * static_cast<size_t>(n_cols));
    for (int32_t h = 1; h < shape_.n_head; ++h) {
      const float* s = obs.scores + static_cast<size_t>(h) * n_cols;
      for (int32_t j = 0; j < n_cols; ++j) token_scores_[static_cast<size_t>(j)] += s[j];
    }
    record(l, obs.positions, token_scores_.data(), n_cols);
    record(-1, obs.positions, token_scores_.data(), n_cols);
    // The top K - W prefix rows and the window; the reference keeps no window (W 0: the top K).
    WT_TRY(keep_tokens(sel, token_scores_.data(), n, k, keeps_window_ ? window_ : 0, d));
    d->restart = true;
    d->reindex = !p_.gemfilter_original_positions;
    report_.selection_layer = l;
    report_.triggered = true;
    report_.n_selected = k;
    return Status::ok();
  }

  // Its peak too: the first pass keeps no KV (decide) and restarts at the filter layer's
  // decision, before that layer writes any.
  int32_t kv_budget(int32_t, int32_t n_prompt) const override { return std::min(n_prompt, top_k(n_prompt)); }

 private:
  // Whether this pass of n rows restarts at the filter layer: the first, when it keeps fewer.
  bool restarts(int32_t n) const { return pass_ == 0 && n > top_k(n); }
  // K tokens, never fewer than the window that is kept (at most half the budget, as SnapKV's).
  int32_t top_k(int32_t n) const { return std::min(n, prune_budget(p_, n, keeps_window_ ? prune_window(p_, n) : 1)); }

  const bool window_scores_;  // scored by the window (else the reference's last query)
  const bool keeps_window_;   // the last W tokens are kept (window scores, or the option)
};

// The filter layer: 0.6 of the depth. The authors filter at 13 of Llama-3.1-8B's 32 layers
// and 19 of Phi-3.5-mini's 32 (0.4 and 0.6); on the three models measured here (SmolLM2-135M,
// Qwen2.5-0.5B at 4k-16k, Qwen2.5-1.5B) 0.4 lost a quarter of the answers full KV finds and 0.6
// lost none (docs/results/fidelity-gemfilter.md). `layer` trades them back for TTFT.
void resolve(wt_prune_params* p, const PruneShape& s) {
  if (p->layer < 0) p->layer = std::min(s.n_layer - 1, static_cast<int32_t>(std::lround(0.6 * s.n_layer)));
}

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& gemfilter() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_GEMFILTER,
                                    .name = "gemfilter",
                                    .summary = "GemFilter: two passes, filter at one layer, re-prefill the top tokens",
                                    .params = kParams,
                                    .window = 32,
                                    .pool_kernel = 31,
                                    .pool = WT_POOL_MAX,
                                    .resolve = resolve,
                                    .check = nullptr,
                                    .make = make_policy_of<GemFilter>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
