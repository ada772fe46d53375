// The building blocks the SnapKV family shares (METHODS.md §0): the window-score request,
// the GQA sum, per-KV-head KV selection (top C - W plus the window), shared token selection
// (top T - W plus the window) and budgets. Buffers are reserved for n_ctx tokens at
// construction; nothing here allocates afterwards.
#pragma once

#include <cstdint>
#include <vector>

#include "policy.h"

namespace wt {

// floor(keep * n), or the constant budget; never below `floor_tokens`.
int32_t prune_budget(const wt_prune_params& p, int32_t n, int32_t floor_tokens);

// The observation window W for a prompt of n tokens: the parameter, but at most half the
// budget (at least 1), so that a short prompt's budget is not all window: at 150 tokens
// and keep 0.2, SnapKV's W 32 would keep the last 32 tokens and nothing the window chose.
int32_t prune_window(const wt_prune_params& p, int32_t n);

class ScoredPolicy : public PrunePolicy {
 public:
  ScoredPolicy(const wt_prune_params& p, const PruneShape& s);

  void begin(int32_t n_prompt, int pass) override {
    n_prompt_ = n_prompt;
    pass_ = pass;
    window_ = prune_window(p_, n_prompt);
    if (pass == 0) {
      report_ = PolicyReport{};
      report_.n_selected = n_prompt;
    }
  }

 protected:
  // Softmax window scores of the last w rows against the prefix [0, n_rows - w), pooled.
  ScoreRequest window_request(int32_t n_rows, int32_t w) const;
  // Pooled per-query-head scores [n_head][n_cols] -> per-KV-head sums kv_scores_ [n_kv][n_cols].
  void sum_groups(const Observation& obs);
  // kv_scores_ summed over KV heads -> token_scores_ [n_cols].
  void sum_kv_heads(int32_t n_cols);
  // The ranking tap (after sum_groups): kv_scores_ summed over KV heads into token_scores_,
  // recorded as the layer's ranking of its scored prefix. Nothing while not recording.
  void record_summed(const Observation& obs);
  // Per KV head: the top (c - w) prefix rows by kv_scores_ plus the w window rows.
  Status keep_kv_per_head(Selector& sel, int32_t n_rows, int32_t c, int32_t w, Decision* d);
  // Shared by all heads: the top (t - w) prefix rows by scores [n_rows - w] plus the window,
  // as the hidden rows that continue (or, for a restart, the tokens to re-prefill).
  Status keep_tokens(Selector& sel, const float* scores, int32_t n_rows, int32_t t, int32_t w, Decision* d);

  wt_prune_params p_;
  PruneShape shape_;
  int32_t n_prompt_ = 0;
  int pass_ = 0;
  int32_t window_ = 0;  // prune_window of this prompt
  std::vector<float> kv_scores_;    // [n_kv][n_ctx]
  std::vector<float> token_scores_; // [n_ctx]
  std::vector<int32_t> kv_rows_;    // [n_kv][n_ctx]
  std::vector<int32_t> keep_rows_;  // [n_ctx]
};

}  // namespace wt
