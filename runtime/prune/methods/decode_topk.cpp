// Query-aware decode selection: the prompt is prefilled in full and every layer keeps its
// KV; at each decode step, in every layer, the step's own query scores the prompt's rows
// (softmax attention summed over all heads) and the layer's attention reads only the best
// blocks of B rows up to keep * L rows, plus every row generated since. This is the
// "oracle top-k" that Quest (Tang et al., ICML 2024) approximates with per-page key bounds:
// the selection is made again by every step's query instead of once by the prompt's last
// rows, which is what eviction at prefill (SnapKV, FastKV, ...) cannot do: on Qwen2.5-0.5B
// at 4096 tokens its top-1 agrees with full KV's on 97% of teacher-forced tokens where the
// best eviction at the same 20% agrees on 88% (docs/results/fidelity-qwen2.5-0.5b.md).
//
// What the exact scores save: the attention's reads of the unselected rows' values; the
// scores still read every key (with the pager, they bring every block to the device).
// decode_topk_bounds = 1 scores the blocks as Quest does instead: each block of B rows keeps
// the elementwise min and max of its keys per KV head (built once per layer at the first
// step), and a step's query gives every block the upper bound sum_d max(q_d lo_d, q_d hi_d)
// of its keys' q.k; per query head the softmax over those bounds, summed over the heads
// (in the log domain: in f32 a block's softmax is 0 once its bound is ~100 below the head's
// best, and such blocks would tie), ranks the blocks. A step then reads 2 rows per block
// instead of B keys (the pair stored as f16 rounded outward: kernels/f16_bound.h), and with
// the pager the steps move the chosen blocks (and what the prefetch guesses from the layer
// before): the bounds are built from the pager's host tier, where the prompt's keys are
// complete since the prefill (until 2026-12-03 the
// first step brought every block of the layer to build them; at 2048 tokens, a quarter
// pool, blocks of 64 and decode_topk_block=64, 32 tokens moved 1.1 MiB a token instead of
// 1.9, docs/results/pager.md). Quest selects per query head; Whittle's attention
// reads the same rows for every head, hence the sum (the exact scores sum the same way). A
// bound is looser the more rows its block has: on Qwen2.5-0.5B at 4096 tokens, keep 0.2,
// f32 bounds agreed with full KV on 89% of tokens at blocks of 16, 93% at 8 and 97% (the
// exact scores') at 4, and the f16 ones at 4 agree as often (docs/results/
// fidelity-qwen2.5-0.5b.md, with the CPU's step times).
//
// The defaults are the bounds at blocks of 4 (since 2026-12-01): the exact scores'
// agreement (97-98%) at a CPU decode step of 0.86-0.90x full KV's in the default f16 cache
// (default model, 4096-8128 tokens), where the exact scores cost 1.2-1.4x. On Qwen2.5-0.5B,
// whose step is mostly matmuls, the step costs 1.14x full KV's. decode_topk_bounds = 0
// gives the exact scores (blocks of 16 were their default).
#include <algorithm>
#include <string>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"

namespace wt {
namespace {

constexpr PruneParamSpec kParams[] = {
    {"decode_topk_block", PruneParamType::i32, kPruneExtra, 4, {1, 4096}, false,
     "rows per selected block (1: single rows); a block scores as its best row"},
    {"decode_topk_bounds", PruneParamType::i32, kPruneExtra, 1, {0, 1}, false,
     "1 (default): score blocks by Quest's key bounds (min/max per block); 0: by every key"},
    {"decode_topk_dense_layers", PruneParamType::i32, kPruneExtra, 0, {0, 1024}, false,
     "the first N layers attend every row at decode (Quest leaves its first two layers dense)"},
};

class DecodeTopk final : public ScoredPolicy {
 public:
  DecodeTopk(const wt_prune_params& p, const PruneShape& s)
      : ScoredPolicy(p, s),
        block_(static_cast<int32_t>(prune_param_value(p, kParams[0]))),
        bounds_(prune_param_value(p, kParams[1]) != 0),
        dense_layers_(static_cast<int32_t>(prune_param_value(p, kParams[2]))) {
    attend_.assign(static_cast<size_t>(s.n_ctx), 0);
    blocks_.assign(static_cast<size_t>(s.n_ctx), 0);
  }

  // The prefill keeps everything: no scores, every layer's KV.
  ScoreRequest request(int32_t, int32_t) override { return {}; }
  Status decide(int32_t, const Observation&, Selector&, Decision*) override { return Status::ok(); }
  int32_t kv_budget(int32_t, int32_t n_prompt) const override { return n_prompt; }
  int32_t key_bounds_block() const override { return bounds_ ? block_ : 0; }
  int32_t key_bounds_first_layer() const override { return dense_layers_; }

  ScoreRequest decode_request(int32_t layer, int32_t n_cache) override {
    if (layer < dense_layers_ || n_blocks_kept() >= n_blocks() || n_prompt_ > n_cache - 1) return {};
    ScoreRequest r;
    if (bounds_) {  // the rows a block has are key_bounds_block()'s
      r.kind = ScoreRequest::Kind::key_bounds;
      r.n_cols = n_prompt_;
      return r;
    }
    r.kind = ScoreRequest::Kind::window;
    r.window = 1;  // the step's own row
    r.softmax = true;
    r.n_cols = n_prompt_;
    r.pool_kernel = p_.pool_kernel;
    r.pool_max = p_.pool == WT_POOL_MAX;
    return r;
  }

  Status decode_decide(int32_t, const Observation& obs, Selector& sel, Decision* d) override {
    if (!obs.scores) return Status::ok();
    const int32_t nb = n_blocks(), kb = n_blocks_kept(), n = n_prompt_;
    if (bounds_ && obs.n_cols != nb)
      return error(WT_ERR_INTERNAL, "decode_topk: " + std::to_string(obs.n_cols) + " block scores for " +
                                        std::to_string(nb) + " blocks");
    const float* block_scores = obs.scores;  // bounds: already one (log) score per block
    if (!bounds_) {
      sum_groups(obs);
      sum_kv_heads(n);
      // A block's score is its best row's: one strong row (a needle's digit) keeps its block.
      float* best = kv_scores_.data();  // free after sum_kv_heads
      for (int32_t b = 0; b < nb; ++b) {
        const float* s = token_scores_.data() + static_cast<size_t>(b) * block_;
        best[b] = *std::max_element(s, s + std::min(block_, n - b * block_));
      }
      block_scores = best;
    }
    WT_TRY(sel.topk(block_scores, 1, nb, kb, blocks_.data()));
    int32_t m = 0;
    for (int32_t i = 0; i < kb; ++i) {
      const int32_t b = blocks_[static_cast<size_t>(i)];
      for (int32_t r = b * block_; r < std::min(n, (b + 1) * block_); ++r) attend_[static_cast<size_t>(m++)] = r;
    }
    for (int32_t r = n; r < obs.n_keys; ++r) attend_[static_cast<size_t>(m++)] = r;  // generated rows
    d->attend_rows = attend_.data();
    d->n_attend_rows = m;
    return Status::ok();
  }

  // Decode state: the prompt's length, which tells its rows from generated ones.
  uint64_t decode_state_bytes() const override { return sizeof(int32_t); }
  Status save_decode_state(StateWriter& out) const override { return out.write(&n_prompt_, sizeof n_prompt_); }
  Status load_decode_state(StateReader& in, uint64_t n_bytes, bool apply) override {
    int32_t n = 0;
    if (n_bytes != sizeof n) return error(WT_ERR_FORMAT, "the decode_topk decode state is not 4 bytes");
    WT_TRY(in.read(&n, sizeof n));
    if (n < 0 || n > shape_.n_ctx) return error(WT_ERR_FORMAT, "the decode_topk decode state's prompt length is out of range");
    if (apply) n_prompt_ = n;
    return Status::ok();
  }

 private:
  int32_t n_blocks() const { return (n_prompt_ + block_ - 1) / block_; }
  // keep * L rows (or the constant budget) in whole blocks, at least one; every block when
  // the budget covers the prompt.
  int32_t n_blocks_kept() const {
    const int32_t c = prune_budget(p_, n_prompt_, 0);
    return c >= n_prompt_ ? n_blocks() : std::max(1, c / block_);
  }

  int32_t block_;
  bool bounds_;                  // Quest's key bounds instead of every key's score
  int32_t dense_layers_;         // layers 0..dense_layers_-1 attend every row
  std::vector<int32_t> attend_;  // [n_ctx] the rows a step attends
  std::vector<int32_t> blocks_;  // [n_ctx] the chosen blocks
};

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& decode_topk() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_FIRST_EXTENSION,
                                    .name = "decode_topk",
                                    .summary = "query-aware decode: full prefill; each step, each layer attends the best "
                                               "blocks of the prompt by the step's own attention, keep * L rows",
                                    .params = kParams,
                                    .window = 1,
                                    .pool_kernel = 1,
                                    .pool = WT_POOL_MAX,
                                    .resolve = nullptr,
                                    .check = nullptr,
                                    .make = make_policy_of<DecodeTopk>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
