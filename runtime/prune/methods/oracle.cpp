// The answer-informed oracle (CLAA paper; METHODS.md §6, an evaluation tool): generate the
// answer greedily with full KV; every answer token's attention to the prompt (softmax over
// all it sees, prompt columns kept) is maxed over layers x heads, then averaged over the
// answer tokens and avg-pooled (k 13). The top tokens (plus the last W, so the question
// stays) are then re-prefilled at their original positions.
#include <algorithm>
#include <cstring>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"

namespace wt {
namespace {

class Oracle final : public ScoredPolicy {
 public:
  Oracle(const wt_prune_params& p, const PruneShape& s) : ScoredPolicy(p, s) {
    const size_t n = static_cast<size_t>(s.n_ctx);
    step_max_.assign(n, 0.0f);
    sum_.assign(n, 0.0);
    // Per-layer sums for the ranking tap only: n_layer x n_ctx is more than the method needs.
    if (p.record_ranking) layer_sum_.assign(n * static_cast<size_t>(s.n_layer), 0.0);
  }

  void begin(int32_t n_prompt, int pass) override {
    ScoredPolicy::begin(n_prompt, pass);
    if (pass == 0) {
      answering_ = true;
      n_steps_ = 0;
      std::fill(sum_.begin(), sum_.begin() + n_prompt, 0.0);
      for (int32_t l = 0; l < shape_.n_layer && !layer_sum_.empty(); ++l)
        std::fill_n(layer_sum_.data() + static_cast<size_t>(l) * shape_.n_ctx, n_prompt, 0.0);
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
    // This layer's max over heads, which the ranking tap also sums per layer.
    double* layer_sum = recording() && !layer_sum_.empty() ? layer_sum_.data() + static_cast<size_t>(l) * shape_.n_ctx
                                                           : nullptr;
    for (int32_t j = 0; j < n; ++j) {
      float head_max = 0.0f;
      for (int32_t h = 0; h < shape_.n_head; ++h)
        head_max = std::max(head_max, obs.scores[static_cast<size_t>(h) * n + j]);
      m[j] = std::max(m[j], head_max);
      if (layer_sum) layer_sum[j] += head_max;
    }
    if (l == shape_.n_layer - 1) {
      for (int32_t j = 0; j < n; ++j) sum_[static_cast<size_t>(j)] += m[j];
      ++n_steps_;
    }
    return Status::ok();
  }

  Status after_answer(Selector& sel, Decision* d) override {
    answering_ = false;
    const int32_t n = n_prompt_;
    record_layers();
    pooled_mean(sum_.data(), token_scores_.data());
    record(-1, nullptr, token_scores_.data(), n);
    WT_TRY(keep_tokens(sel, token_scores_.data(), n, budget(n), p_.window, d));
    d->restart = true;
    d->reindex = false;
    report_.selection_layer = -1;
    report_.triggered = true;
    report_.n_selected = d->n_keep_rows;
    return Status::ok();
  }

  int32_t kv_budget(int32_t, int32_t n_prompt) const override { return std::min(n_prompt, budget(n_prompt)); }
  // The answer runs with the full prompt's KV first.
  int32_t kv_peak(int32_t, int32_t n_prompt) const override { return n_prompt + p_.oracle_tokens; }

 private:
  int32_t budget(int32_t n) const { return prune_budget(p_, n, p_.window); }

  // Sums over the answer tokens [n_prompt] -> their mean, avg-pooled (zero padding, divisor k).
  void pooled_mean(const double* sum, float* out) const {
    const int32_t n = n_prompt_, k = p_.pool_kernel, half = k / 2;
    const double inv = n_steps_ > 0 ? 1.0 / n_steps_ : 0.0;
    for (int32_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int32_t t = std::max(0, j - half); t <= std::min(n - 1, j + half); ++t) acc += sum[t];
      out[j] = static_cast<float>(acc * inv / k);
    }
  }

  // The ranking tap's layer rows: the oracle's own score computed from that layer alone.
  void record_layers() {
    if (!recording() || layer_sum_.empty()) return;
    for (int32_t l = 0; l < shape_.n_layer; ++l) {
      pooled_mean(layer_sum_.data() + static_cast<size_t>(l) * shape_.n_ctx, token_scores_.data());
      record(l, nullptr, token_scores_.data(), n_prompt_);
    }
  }

  std::vector<float> step_max_;
  std::vector<double> sum_;
  std::vector<double> layer_sum_;  // [n_layer][n_ctx], only with record_ranking
  int32_t n_steps_ = 0;
  bool answering_ = false;
};

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"oracle_tokens", PruneParamType::i32, offsetof(wt_prune_params, oracle_tokens), 32, {1, kUnbounded}, true,
     "answer tokens generated with full KV before selecting"},
};

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& oracle() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_ORACLE,
                                    .name = "oracle",
                                    .summary = "answer-informed oracle: ranks by the answer's attention (evaluation only)",
                                    .params = kParams,
                                    .window = 8,
                                    .pool_kernel = 13,
                                    .pool = WT_POOL_AVG,
                                    .resolve = nullptr,
                                    .check = nullptr,
                                    .make = make_policy_of<Oracle>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
