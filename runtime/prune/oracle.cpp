// The answer-informed oracle (CLAA paper; METHODS.md §6, an evaluation tool): generate the
// answer greedily with full KV; every answer token's attention to the prompt (softmax over
// all it sees, prompt columns kept) is maxed over layers x heads, then averaged over the
// answer tokens and avg-pooled (k 13). The top tokens (plus the last W, so the question
// stays) are then re-prefilled at their original positions.
#include <algorithm>
#include <cstring>

#include "scored_policy.h"

namespace wt {
namespace {

class Oracle final : public ScoredPolicy {
 public:
  Oracle(const wt_prune_params& p, const PruneShape& s) : ScoredPolicy(p, s) {
    const size_t n = static_cast<size_t>(s.n_ctx);
    step_max_.assign(n, 0.0f);
    sum_.assign(n, 0.0);
  }

  void begin(int32_t n_prompt, int pass) override {
    ScoredPolicy::begin(n_prompt, pass);
    if (pass == 0) {
      answering_ = true;
      n_steps_ = 0;
      std::fill(sum_.begin(), sum_.begin() + n_prompt, 0.0);
    }
  }

  ScoreRequest request(int32_t, int32_t) override { return {}; }
  Status decide(int32_t, const Observation&, Selector&, Decision*) override { return Status::ok(); }

  int32_t answer_tokens() const override { return n_prompt_ > budget(n_prompt_) ? p_.oracle_tokens : 0; }

  ScoreRequest decode_request(int32_t, int32_t) override {
    if (!answering_) return {};
    ScoreRequest r;
    r.kind = ScoreRequest::Kind::window;
    r.window = 1;
    r.softmax = true;
    r.per_query = true;
    r.n_cols = n_prompt_;
    return r;
  }

  Status decode_decide(int32_t l, const Observation& obs, Selector&, Decision*) override {
    if (!answering_ || !obs.scores) return Status::ok();
    const int32_t n = obs.n_cols;
    float* m = step_max_.data();
    if (l == 0) std::fill(m, m + n, 0.0f);
    for (int32_t h = 0; h < shape_.n_head; ++h) {
      const float* s = obs.scores + static_cast<size_t>(h) * n;
      for (int32_t j = 0; j < n; ++j) m[j] = std::max(m[j], s[j]);
    }
    if (l == shape_.n_layer - 1) {
      for (int32_t j = 0; j < n; ++j) sum_[static_cast<size_t>(j)] += m[j];
      ++n_steps_;
    }
    return Status::ok();
  }

  Status after_answer(Selector& sel, Decision* d) override {
    answering_ = false;
    const int32_t n = n_prompt_, k = p_.pool_kernel, half = k / 2;
    // Mean over answer tokens, then avg-pool (zero padding, divisor k).
    const double inv = n_steps_ > 0 ? 1.0 / n_steps_ : 0.0;
    for (int32_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int32_t t = j - half; t <= j + half; ++t)
        if (t >= 0 && t < n) acc += sum_[static_cast<size_t>(t)];
      token_scores_[static_cast<size_t>(j)] = static_cast<float>(acc * inv / k);
    }
    WT_TRY(keep_tokens(sel, token_scores_.data(), n, budget(n), p_.window, d));
    d->restart = true;
    d->reindex = false;
    report_.selection_layer = -1;
    report_.triggered = true;
    report_.n_selected = d->n_keep_rows;
    return Status::ok();
  }

  int32_t kv_budget(int32_t, int32_t n_prompt) const override { return std::min(n_prompt, budget(n_prompt)); }

 private:
  int32_t budget(int32_t n) const { return prune_budget(p_, n, p_.window); }

  std::vector<float> step_max_;
  std::vector<double> sum_;
  int32_t n_steps_ = 0;
  bool answering_ = false;
};

}  // namespace

std::unique_ptr<PrunePolicy> make_oracle(const wt_prune_params& p, const PruneShape& s) {
  return std::make_unique<Oracle>(p, s);
}

}  // namespace wt
