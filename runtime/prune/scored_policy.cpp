#include "scored_policy.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace wt {

int32_t prune_budget(const wt_prune_params& p, int32_t n, int32_t floor_tokens) {
  const int32_t c = p.budget > 0 ? p.budget : static_cast<int32_t>(std::floor(static_cast<double>(p.keep) * n));
  return std::max(c, floor_tokens);
}

int32_t prune_window(const wt_prune_params& p, int32_t n) {
  return std::max(1, std::min(p.window, prune_budget(p, n, 0) / 2));
}

ScoredPolicy::ScoredPolicy(const wt_prune_params& p, const PruneShape& s) : p_(p), shape_(s) {
  const size_t n = static_cast<size_t>(s.n_ctx);
  kv_scores_.assign(n * static_cast<size_t>(s.n_head_kv), 0.0f);
  token_scores_.assign(n, 0.0f);
  kv_rows_.assign(n * static_cast<size_t>(s.n_head_kv), 0);
  keep_rows_.assign(n, 0);
}

ScoreRequest ScoredPolicy::window_request(int32_t n_rows, int32_t w) const {
  ScoreRequest r;
  r.kind = ScoreRequest::Kind::window;
  r.window = w;
  r.softmax = true;
  r.n_cols = n_rows - w;
  r.pool_kernel = p_.pool_kernel;
  r.pool_max = p_.pool == WT_POOL_MAX;
  return r;
}

void ScoredPolicy::sum_groups(const Observation& obs) {
  const int32_t n = obs.n_cols, g = shape_.n_head / shape_.n_head_kv;
  for (int32_t kv = 0; kv < shape_.n_head_kv; ++kv) {
    float* out = kv_scores_.data() + static_cast<size_t>(kv) * n;
    std::memcpy(out, obs.scores + static_cast<size_t>(kv * g) * n, sizeof(float) * static_cast<size_t>(n));
    for (int32_t h = 1; h < g; ++h) {
      const float* s = obs.scores + static_cast<size_t>(kv * g + h) * n;
      for (int32_t j = 0; j < n; ++j) out[j] += s[j];
    }
  }
}

void ScoredPolicy::sum_kv_heads(int32_t n) {
  std::memcpy(token_scores_.data(), kv_scores_.data(), sizeof(float) * static_cast<size_t>(n));
  for (int32_t kv = 1; kv < shape_.n_head_kv; ++kv) {
    const float* s = kv_scores_.data() + static_cast<size_t>(kv) * n;
    for (int32_t j = 0; j < n; ++j) token_scores_[static_cast<size_t>(j)] += s[j];
  }
}

void ScoredPolicy::record_summed(const Observation& obs) {
  if (!recording()) return;
  sum_kv_heads(obs.n_cols);
  record(obs.layer, obs.positions, token_scores_.data(), obs.n_cols);
}

Status ScoredPolicy::keep_kv_per_head(Selector& sel, int32_t n_rows, int32_t c, int32_t w, Decision* d) {
  if (c >= n_rows) return Status::ok();  // everything fits: keep all
  const int32_t n_prefix = n_rows - w, k = c - w, n_kv = shape_.n_head_kv;
  WT_TRY(sel.topk(kv_scores_.data(), n_kv, n_prefix, k, kv_rows_.data()));
  // Spread rows [kv][k] to [kv][c] (last row first) and append the window to each.
  for (int32_t kv = n_kv - 1; kv >= 0; --kv) {
    int32_t* row = kv_rows_.data() + static_cast<size_t>(kv) * c;
    std::memmove(row, kv_rows_.data() + static_cast<size_t>(kv) * k, sizeof(int32_t) * static_cast<size_t>(k));
    for (int32_t i = 0; i < w; ++i) row[k + i] = n_prefix + i;
  }
  d->kv = Decision::Kv::per_head;
  d->kv_rows = kv_rows_.data();
  d->n_kv_rows = c;
  return Status::ok();
}

Status ScoredPolicy::keep_tokens(Selector& sel, const float* scores, int32_t n_rows, int32_t t, int32_t w,
                                 Decision* d) {
  const int32_t n_prefix = n_rows - w;
  t = std::min(t, n_rows);
  WT_TRY(sel.topk(scores, 1, n_prefix, t - w, keep_rows_.data()));
  for (int32_t i = 0; i < w; ++i) keep_rows_[static_cast<size_t>(t - w + i)] = n_prefix + i;
  d->keep_rows = keep_rows_.data();
  d->n_keep_rows = t;
  return Status::ok();
}

}  // namespace wt
