// CLAA, cross-layer attention aggregation (METHODS.md §6): FastKV whose TSP score is the
// max, over the last n buffered layers and their KV heads, of each (layer, head) score
// vector z-scored over tokens (sample std + 1e-8), as the authors' code does. The first m
// layers keep their full KV; the keep rate sets both the KV budget and T, as fractions of
// the original L.
#include <algorithm>
#include <cstring>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"
#include "runtime/prune/selection_math.h"

namespace wt {
namespace {

class Claa final : public ScoredPolicy {
 public:
  Claa(const wt_prune_params& p, const PruneShape& s) : ScoredPolicy(p, s) {
    buffer_.assign(static_cast<size_t>(p.claa_n_layers) * s.n_head_kv * s.n_ctx, 0.0f);
  }

  void begin(int32_t n_prompt, int pass) override {
    ScoredPolicy::begin(n_prompt, pass);
    n_buffered_ = 0;
  }

  ScoreRequest request(int32_t l, int32_t n) override {
    if (pass_ != 0) return {};
    const int32_t c = budget(n_prompt_);
    const bool compress = l >= p_.claa_min_layer && n > c;
    const bool aggregate = l <= p_.layer && l > p_.layer - p_.claa_n_layers && n > c;
    return compress || aggregate ? window_request(n, window_) : ScoreRequest{};
  }

  Status decide(int32_t l, const Observation& obs, Selector& sel, Decision* d) override {
    if (!obs.scores) return Status::ok();
    const int32_t n = obs.n_rows, w = window_, c = budget(n_prompt_), n_cols = obs.n_cols;
    const int32_t n_kv = shape_.n_head_kv;
    sum_groups(obs);
    const bool buffered = l <= p_.layer && l > p_.layer - p_.claa_n_layers;
    if (buffered) {
      const size_t per = static_cast<size_t>(n_kv) * n_cols;
      std::memcpy(buffer_.data() + static_cast<size_t>(n_buffered_) * per, kv_scores_.data(), sizeof(float) * per);
      ++n_buffered_;
    }
    record_layer(obs, buffered);
    if (l >= p_.claa_min_layer) WT_TRY(keep_kv_per_head(sel, n, c, w, d));
    if (l == p_.layer && n > c) {
      zscore_max(buffer_.data(), n_buffered_ * n_kv, n_cols, token_scores_.data());
      record(-1, obs.positions, token_scores_.data(), n_cols);
      WT_TRY(keep_tokens(sel, token_scores_.data(), n, c, w, d));
      report_.selection_layer = l;
      report_.triggered = true;
      report_.n_selected = d->n_keep_rows;
    }
    return Status::ok();
  }

  int32_t kv_budget(int32_t l, int32_t n_prompt) const override {
    return l < p_.claa_min_layer ? n_prompt : std::min(n_prompt, budget(n_prompt));
  }

 private:
  int32_t budget(int32_t n) const { return prune_budget(p_, n, prune_window(p_, n)); }

  // The ranking tap: in the aggregation range, the aggregate the layer would select by were
  // it the pruning layer; elsewhere the layer's own score.
  void record_layer(const Observation& obs, bool buffered) {
    if (!recording()) return;
    if (!buffered) {
      record_summed(obs);
      return;
    }
    zscore_max(buffer_.data(), n_buffered_ * shape_.n_head_kv, obs.n_cols, token_scores_.data());
    record(obs.layer, obs.positions, token_scores_.data(), obs.n_cols);
  }

  std::vector<float> buffer_;  // [n_layers][n_kv][n] the last layers' per-KV-head scores
  int32_t n_buffered_ = 0;
};

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"claa_n_layers", PruneParamType::i32, offsetof(wt_prune_params, claa_n_layers), 4, {}, false,
     "n, the layers whose scores are aggregated (ending at the pruning layer)"},
    {"claa_min_layer", PruneParamType::i32, offsetof(wt_prune_params, claa_min_layer), 4, {}, false,
     "m: the first m layers keep full KV"},
};

Status check(const wt_prune_params& p, const PruneShape& s) {
  if (p.claa_n_layers < 1 || p.claa_n_layers > p.layer + 1)
    return error(WT_ERR_INVALID_ARGUMENT, "prune.claa_n_layers must be in [1, layer + 1]");
  if (p.claa_min_layer < 0 || p.claa_min_layer >= s.n_layer)
    return error(WT_ERR_INVALID_ARGUMENT, "prune.claa_min_layer must be in [0, n_layer)");
  return Status::ok();
}

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& claa() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_CLAA,
                                    .name = "claa",
                                    .summary = "CLAA: FastKV with cross-layer aggregated scores (z-score, then max)",
                                    .params = kParams,
                                    .window = 8,
                                    .pool_kernel = 31,
                                    .pool = WT_POOL_AVG,
                                    .resolve = nullptr,
                                    .check = check,
                                    .make = make_policy_of<Claa>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
