// Token Filtering (METHODS.md §9): in the tail layers, a token whose key and value are
// nearly the anchor (a running summary of the layer's earlier keys/values) is redundant and
// its attention is skipped (its attention output is zero; its KV stays, so later tokens
// still see it). Per token and layer: s_h = a cos(k_h, Ak_h) + (1 - a) cos(v_h, Av_h) per KV
// head; redundancy = mean_h s - std_h s, so a high mean with high disagreement across heads
// keeps the token. Anchors: an EMA, A <- d A + (1 - d) x with d = 0.9 (the review's reading;
// the seed's "running mean" would be d = (n-1)/n — see runtime/prune/README.md). The skip
// threshold follows SkipController (warm-up quantile, then integral feedback to the target
// ratio), per layer, carried from prefill into decode. The newest W prompt rows are never
// skipped, so the last token's logits keep their full attention.
#include <algorithm>
#include <cmath>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"
#include "runtime/prune/selection_math.h"

namespace wt {
namespace {

constexpr float kThresholdStep = 0.05f;

class TokenFilter final : public ScoredPolicy {
 public:
  TokenFilter(const wt_prune_params& p, const PruneShape& s) : ScoredPolicy(p, s) {
    controllers_.resize(static_cast<size_t>(s.n_layer));
    first_layer_ = std::min(s.n_layer, static_cast<int32_t>(std::floor(p.tf_start * s.n_layer)));
  }

  void begin(int32_t n_prompt, int pass) override {
    ScoredPolicy::begin(n_prompt, pass);
    for (SkipController& c : controllers_) c.reset(p_.tf_target, p_.tf_warmup, kThresholdStep);
  }

  ScoreRequest request(int32_t l, int32_t) override { return similarity_request(l); }
  ScoreRequest decode_request(int32_t l, int32_t) override { return similarity_request(l); }

  Status decide(int32_t l, const Observation& obs, Selector&, Decision* d) override {
    return skip_rows(l, obs, obs.n_rows - p_.window, d);
  }
  Status decode_decide(int32_t l, const Observation& obs, Selector&, Decision* d) override {
    return skip_rows(l, obs, obs.n_rows, d);
  }

  int32_t kv_budget(int32_t, int32_t n_prompt) const override { return n_prompt; }

  // Decode state: each layer's skip threshold, carried from the prompt into decode.
  uint64_t decode_state_bytes() const override { return controllers_.size() * sizeof(SkipController::State); }
  Status save_decode_state(StateWriter& out) const override {
    for (const SkipController& c : controllers_) {
      const SkipController::State s = c.state();
      WT_TRY(out.write(&s, sizeof s));
    }
    return Status::ok();
  }
  Status load_decode_state(StateReader& in, uint64_t n_bytes, bool apply) override {
    if (n_bytes != decode_state_bytes()) return error(WT_ERR_FORMAT, "Token Filtering's decode state has another size");
    for (SkipController& c : controllers_) {
      SkipController::State s;
      WT_TRY(in.read(&s, sizeof s));
      if (!SkipController::valid(s)) return error(WT_ERR_FORMAT, "Token Filtering's decode state is malformed");
      if (apply) c.set_state(s);
    }
    return Status::ok();
  }

 private:
  ScoreRequest similarity_request(int32_t l) const {
    if (pass_ != 0 || l < first_layer_) return {};
    ScoreRequest r;
    r.kind = ScoreRequest::Kind::kv_similarity;
    r.anchor_decay = p_.tf_anchor_decay;
    return r;
  }

  // Decides rows [0, n_decided) in order; rows after it are never skipped.
  Status skip_rows(int32_t l, const Observation& obs, int32_t n_decided, Decision* d) {
    if (!obs.scores) return Status::ok();
    SkipController& c = controllers_[static_cast<size_t>(l)];
    const int32_t n_kv = shape_.n_head_kv;
    const float a = p_.tf_key_weight;
    int32_t* skip = keep_rows_.data();  // reused as [n_rows] flags
    bool any = false;
    for (int32_t t = 0; t < obs.n_rows; ++t) {
      skip[t] = 0;
      if (t >= n_decided) continue;
      const float* cs = obs.scores + static_cast<size_t>(t) * n_kv * 2;
      double mean = 0, sq = 0;
      for (int32_t h = 0; h < n_kv; ++h) {
        const double s = a * cs[2 * h] + (1.0f - a) * cs[2 * h + 1];
        mean += s;
        sq += s * s;
      }
      mean /= n_kv;
      const double sd = std::sqrt(std::max(0.0, sq / n_kv - mean * mean));
      // The ranking tap's importance: the redundancy negated, so that higher = keep.
      token_scores_[static_cast<size_t>(t)] = static_cast<float>(sd - mean);
      if (c.decide(static_cast<float>(mean - sd))) {
        skip[t] = 1;
        any = true;
        ++report_.n_attention_skipped;
      }
    }
    const int32_t n_scored = std::clamp(n_decided, 0, obs.n_rows);
    record(l, obs.positions, token_scores_.data(), n_scored);
    record_final(obs.positions, token_scores_.data(), n_scored);
    // Without a skipped row the layer runs the plain attention kernels.
    if (any) d->skip_rows = skip;
    return Status::ok();
  }

  std::vector<SkipController> controllers_;
  int32_t first_layer_ = 0;
};

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"tf_target", PruneParamType::f32, offsetof(wt_prune_params, tf_target), 0.5, {0, 1, true, true}, false,
     "fraction of the tail layers' tokens whose attention is skipped"},
    {"tf_start", PruneParamType::f32, offsetof(wt_prune_params, tf_start), 0.5, {0, 1, false, true}, false,
     "the first pruned layer, a fraction of the depth"},
    {"tf_anchor_decay", PruneParamType::f32, offsetof(wt_prune_params, tf_anchor_decay), 0.9, {0, 1, false, true}, false,
     "the anchors' EMA factor"},
    {"tf_key_weight", PruneParamType::f32, offsetof(wt_prune_params, tf_key_weight), 0.5, {0, 1}, false,
     "weight of the key against the value similarity"},
    {"tf_warmup", PruneParamType::i32, offsetof(wt_prune_params, tf_warmup), 16, {0, SkipController::kMaxWarmup}, false,
     "tokens per layer before any skip (they set the threshold)"},
};

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& tokenfilter() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_TOKENFILTER,
                                    .name = "tokenfilter",
                                    .summary = "Token Filtering: skip the attention of tokens redundant with the layer's anchors",
                                    .params = kParams,
                                    .window = 8,
                                    .pool_kernel = 7,
                                    .pool = WT_POOL_AVG,
                                    .resolve = nullptr,
                                    .check = nullptr,
                                    .make = make_policy_of<TokenFilter>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
