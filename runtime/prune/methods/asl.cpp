// ASL, the adaptive selection layer (METHODS.md §5). From layer 0 on, every layer's pooled
// window scores (summed over G, then over KV heads) become a rank vector. From L_min on,
// the ranks of the last L_obs layers are compared: over the union of their top-(K - W)
// sets, the mean population variance of each token's rank across those layers is V_l; the
// first evaluated layer gives V_init, and the first layer with V_l / V_init < tau selects
// its own top (K - W) plus the window (one-pass: later layers run on those rows; two-pass:
// a re-prefill of those tokens at their original positions). No fallback: if the ratio
// never drops, nothing is selected — unless asl_max_layer forces a selection there.
#include <algorithm>
#include <limits>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"
#include "runtime/prune/selection_math.h"

namespace wt {
namespace {

class Asl final : public ScoredPolicy {
 public:
  Asl(const wt_prune_params& p, const PruneShape& s) : ScoredPolicy(p, s) {
    const size_t n = static_cast<size_t>(s.n_ctx);
    ranks_.assign(n * static_cast<size_t>(p.asl_obs_layers), 0);
    order_.assign(n, 0);
    ratios_.assign(static_cast<size_t>(s.n_layer), std::numeric_limits<double>::quiet_NaN());
  }

  void begin(int32_t n_prompt, int pass) override {
    ScoredPolicy::begin(n_prompt, pass);
    if (pass == 0) {
      selected_ = false;
      n_ranked_ = 0;
      v_init_ = -1.0;
      std::fill(ratios_.begin(), ratios_.end(), std::numeric_limits<double>::quiet_NaN());
      report_.asl_ratios = ratios_.data();
    }
  }

  ScoreRequest request(int32_t, int32_t n) override {
    if (pass_ != 0 || n <= budget(n_prompt_)) return {};  // everything fits the budget
    if (selected_ && !p_.asl_kv_topk) return {};
    return window_request(n, window_);
  }

  Status decide(int32_t l, const Observation& obs, Selector& sel, Decision* d) override {
    if (!obs.scores) return Status::ok();
    const int32_t n = obs.n_rows, w = window_, c = budget(n_prompt_);
    sum_groups(obs);
    if (selected_) record_summed(obs);  // asl_kv_topk: the layers after it still score their KV
    if (!selected_) {
      sum_kv_heads(obs.n_cols);
      rank(obs.n_cols);
      record(l, obs.positions, token_scores_.data(), obs.n_cols);
      // Until a layer selects, the latest ranking is final (SnapKV's reading when ASL never
      // triggers); the selecting layer's is the last one written.
      record_final(obs.positions, token_scores_.data(), obs.n_cols);
      bool fire = false;
      if (l >= p_.asl_min_layer && n_ranked_ >= p_.asl_obs_layers) {
        const double v = rank_variance(ranks_.data(), p_.asl_obs_layers, obs.n_cols, c - w);
        if (v_init_ < 0) {
          v_init_ = v;  // ratio 1 at the first evaluated layer: it never fires
          ratios_[static_cast<size_t>(l)] = 1.0;
        } else if (v_init_ > 0) {
          const double ratio = v / v_init_;
          ratios_[static_cast<size_t>(l)] = ratio;
          if (report_.asl_min_ratio_layer < 0 || ratio < report_.asl_min_ratio) {
            report_.asl_min_ratio = ratio;
            report_.asl_min_ratio_layer = l;
          }
          fire = ratio < p_.asl_tau;
        }
      }
      const bool forced = !fire && l == p_.asl_max_layer;
      if (fire || forced) {
        WT_TRY(keep_tokens(sel, token_scores_.data(), n, c, w, d));
        selected_ = true;
        report_.selection_layer = l;
        report_.triggered = fire;
        report_.n_selected = d->n_keep_rows;
        if (p_.asl_two_pass) {
          d->restart = true;
          return Status::ok();
        }
      }
    }
    if (p_.asl_kv_topk) WT_TRY(keep_kv_per_head(sel, n, c, w, d));
    return Status::ok();
  }

  int32_t kv_budget(int32_t, int32_t n_prompt) const override {
    return p_.asl_kv_topk || p_.asl_two_pass ? std::min(n_prompt, budget(n_prompt)) : n_prompt;
  }
  // Two-pass: the first pass keeps every row until the selection layer, wherever it falls.
  int32_t kv_peak(int32_t l, int32_t n_prompt) const override {
    return p_.asl_two_pass ? n_prompt : kv_budget(l, n_prompt);
  }

 private:
  int32_t budget(int32_t n) const { return prune_budget(p_, n, prune_window(p_, n)); }

  void rank(int32_t n) {
    int32_t* slot = ranks_.data() + static_cast<size_t>(n_ranked_ % p_.asl_obs_layers) * n;
    ranks_descending(token_scores_.data(), n, order_.data(), slot);
    ++n_ranked_;
  }

  std::vector<int32_t> ranks_;  // [L_obs][n] ring of rank vectors
  std::vector<int32_t> order_;
  std::vector<double> ratios_;  // [n_layer] V_l / V_init of the last prompt (wt_prune_stats.asl_ratios)
  int32_t n_ranked_ = 0;
  double v_init_ = -1.0;
  bool selected_ = false;
};

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"asl_tau", PruneParamType::f32, offsetof(wt_prune_params, asl_tau), 0.3, {0, kUnbounded, true, false}, false,
     "select when the rank variance V_l / V_init falls below tau"},
    {"asl_min_layer", PruneParamType::i32, offsetof(wt_prune_params, asl_min_layer), -1, {-1, kUnbounded}, false,
     "L_min, the first layer that may select; -1 = n_layer / 3"},
    {"asl_obs_layers", PruneParamType::i32, offsetof(wt_prune_params, asl_obs_layers), 8, {}, false,
     "L_obs, the layers whose ranks the variance is taken over"},
    {"asl_max_layer", PruneParamType::i32, offsetof(wt_prune_params, asl_max_layer), -1, {-1, kUnbounded}, false,
     "select at this layer at the latest; -1 = never forced"},
    {"asl_two_pass", PruneParamType::boolean, offsetof(wt_prune_params, asl_two_pass), 0, {}, false,
     "re-prefill the selected tokens (GemFilter style)"},
    {"asl_kv_topk", PruneParamType::boolean, offsetof(wt_prune_params, asl_kv_topk), 1, {}, false,
     "also keep only the top budget KV rows per head in every layer"},
};

void resolve(wt_prune_params* p, const PruneShape& s) {
  if (p->asl_min_layer < 0) p->asl_min_layer = s.n_layer / 3;
  if (p->asl_max_layer < 0) p->asl_max_layer = s.n_layer;  // never forced
}

Status check(const wt_prune_params& p, const PruneShape& s) {
  const auto bad = [](const char* what) { return error(WT_ERR_INVALID_ARGUMENT, std::string("prune.") + what); };
  if (p.asl_obs_layers < 1 || p.asl_obs_layers > s.n_layer) return bad("asl_obs_layers must be in [1, n_layer]");
  if (p.asl_min_layer >= s.n_layer) return bad("asl_min_layer is beyond the model's layers");
  if (p.asl_max_layer > s.n_layer) return bad("asl_max_layer is beyond the model's layers");
  return Status::ok();
}

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& asl() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_ASL,
                                    .name = "asl",
                                    .summary = "ASL: adaptive selection layer, where the token ranks settle (rank-variance trigger)",
                                    .params = kParams,
                                    .window = 32,
                                    .pool_kernel = 31,
                                    .pool = WT_POOL_AVG,
                                    .resolve = resolve,
                                    .check = check,
                                    .make = make_policy_of<Asl>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
