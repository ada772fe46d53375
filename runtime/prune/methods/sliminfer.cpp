// SlimInfer (METHODS.md §8): block-wise progressive pruning of the hidden states. At each
// pruning layer the current rows, in blocks of B tokens made of units of U, are scored by
// max over units of the head-mean |qbar . unit key| (qbar: mean of the last 4 queries); the
// top blocks continue, the first block (attention sink) and the blocks holding the newest
// W tokens always among them. Stage i keeps min(1, keep * 2^(2-i)) of the prompt (1/2, 1/4,
// 1/8 at keep 1/8), rounded up to whole blocks. Every layer keeps the KV of the rows it
// computed, so layers after a pruning layer hold fewer rows.
//
// Decode (slim_decode_keep < 1): the layers between two pruning layers form a group with
// the same KV rows; at the group's first layer each step, the new token's query scores
// the group's prompt blocks and the top fraction (plus first and newest block) becomes the
// active set, which replaces the previous one only when their overlap falls below gamma.
// Attention of the group's layers reads the active blocks and every generated row. In this
// issue inactive blocks stay in memory (the pager moves them to host memory).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "runtime/prune/registry.h"
#include "runtime/prune/scored_policy.h"
#include "runtime/prune/selection_math.h"

namespace wt {
namespace {

constexpr int kStages = 3;
constexpr int kGroups = kStages + 1;

class SlimInfer final : public ScoredPolicy {
 public:
  SlimInfer(const wt_prune_params& p, const PruneShape& s) : ScoredPolicy(p, s) {
    const size_t n = static_cast<size_t>(s.n_ctx);
    for (int g = 0; g < kGroups; ++g) {
      active_[g].assign(n, 0);
      attend_[g].assign(n, 0);
    }
    fresh_.assign(n, 0);
    blocks_.assign(n, 0);
  }

  void begin(int32_t n_prompt, int pass) override {
    ScoredPolicy::begin(n_prompt, pass);
    for (int g = 0; g < kGroups; ++g) {
      prompt_rows_[g] = n_prompt;
      n_active_[g] = -1;
      n_attend_[g] = 0;
    }
  }

  ScoreRequest request(int32_t l, int32_t n) override {
    const int stage = stage_at(l);
    if (pass_ != 0 || stage < 0 || n_blocks(n) <= target_blocks(stage)) return {};
    return block_request(std::min(p_.slim_query, n), 0);
  }

  Status decide(int32_t l, const Observation& obs, Selector& sel, Decision* d) override {
    const int stage = stage_at(l);
    if (!obs.scores || stage < 0) return Status::ok();
    const int32_t n = obs.n_rows, nb = obs.n_cols;
    int32_t kept = 0;
    WT_TRY(top_blocks(sel, obs.scores, n, nb, target_blocks(stage), &kept));
    record_blocks(obs);
    int32_t rows = 0;
    for (int32_t i = 0; i < kept; ++i) {
      const int32_t b = blocks_[static_cast<size_t>(i)];
      for (int32_t r = b * p_.slim_block; r < std::min(n, (b + 1) * p_.slim_block); ++r)
        keep_rows_[static_cast<size_t>(rows++)] = r;
    }
    d->keep_rows = keep_rows_.data();
    d->n_keep_rows = rows;
    for (int g = stage + 1; g < kGroups; ++g) prompt_rows_[g] = rows;
    report_.selection_layer = l;
    report_.triggered = true;
    report_.n_selected = rows;
    return Status::ok();
  }

  ScoreRequest decode_request(int32_t l, int32_t) override {
    if (p_.slim_decode_keep >= 1.0f || l != group_start(group_of(l))) return {};
    const int g = group_of(l);
    return block_request(1, prompt_rows_[g]);
  }

  Status decode_decide(int32_t l, const Observation& obs, Selector& sel, Decision* d) override {
    if (p_.slim_decode_keep >= 1.0f) return Status::ok();
    const int g = group_of(l);
    const int32_t n_cache = obs.n_keys, prompt = prompt_rows_[g];
    if (obs.scores) {
      const int32_t nb = obs.n_cols;
      const int32_t want = std::max(2, static_cast<int32_t>(std::ceil(p_.slim_decode_keep * nb)));
      int32_t kept = 0;
      WT_TRY(top_blocks(sel, obs.scores, prompt, nb, want, &kept));
      std::copy(blocks_.begin(), blocks_.begin() + kept, fresh_.begin());
      const bool first = n_active_[g] < 0;
      if (first || overlap_fraction(fresh_.data(), kept, active_[g].data(), n_active_[g]) < p_.slim_gamma) {
        std::copy(fresh_.begin(), fresh_.begin() + kept, active_[g].begin());
        n_active_[g] = kept;
        if (!first) ++report_.n_block_swaps;
      }
      // Rows of the active blocks, then every generated row.
      int32_t m = 0;
      for (int32_t i = 0; i < n_active_[g]; ++i) {
        const int32_t b = active_[g][static_cast<size_t>(i)];
        for (int32_t r = b * p_.slim_block; r < std::min(prompt, (b + 1) * p_.slim_block); ++r)
          attend_[g][static_cast<size_t>(m++)] = r;
      }
      n_attend_[g] = m;
    }
    // Generated rows grow by one per step; append the ones after the prompt.
    int32_t m = n_attend_[g];
    for (int32_t r = prompt; r < n_cache; ++r) attend_[g][static_cast<size_t>(m++)] = r;
    d->attend_rows = attend_[g].data();
    d->n_attend_rows = m;
    return Status::ok();
  }

  // Decode state: per group the prompt rows it keeps and its active blocks (the rows each
  // step attends are rebuilt from them at the group's first layer).
  uint64_t decode_state_bytes() const override {
    uint64_t n = 2 * sizeof(int32_t) * kGroups;
    for (int g = 0; g < kGroups; ++g) n += sizeof(int32_t) * static_cast<uint64_t>(std::max(0, n_active_[g]));
    return n;
  }
  Status save_decode_state(StateWriter& out) const override {
    for (int g = 0; g < kGroups; ++g) {
      WT_TRY(out.write(&prompt_rows_[g], sizeof(int32_t)));
      WT_TRY(out.write(&n_active_[g], sizeof(int32_t)));
      if (n_active_[g] > 0) WT_TRY(out.write(active_[g].data(), sizeof(int32_t) * static_cast<size_t>(n_active_[g])));
    }
    return Status::ok();
  }
  Status load_decode_state(StateReader& in, uint64_t, bool apply) override {
    for (int g = 0; g < kGroups; ++g) {
      int32_t rows = 0, n = 0;
      WT_TRY(in.read(&rows, sizeof rows));
      WT_TRY(in.read(&n, sizeof n));
      if (rows < 0 || rows > shape_.n_ctx || n < -1 || n > n_blocks(rows))
        return error(WT_ERR_FORMAT, "SlimInfer's decode state is malformed (group " + std::to_string(g) + ")");
      for (int32_t i = 0; i < n; ++i) {  // a block at a time: checking writes nothing of the policy
        int32_t b = 0;
        WT_TRY(in.read(&b, sizeof b));
        if (b < 0 || b >= n_blocks(rows)) return error(WT_ERR_FORMAT, "SlimInfer's decode state names a block past its prompt");
        if (apply) active_[g][static_cast<size_t>(i)] = b;
      }
      if (!apply) continue;
      prompt_rows_[g] = rows;
      n_active_[g] = n;
      n_attend_[g] = 0;
    }
    return Status::ok();
  }

  // At most 3 forced blocks: the first and the (up to two) holding the newest W rows.
  int32_t kv_budget(int32_t l, int32_t n_prompt) const override {
    int32_t rows = n_prompt;
    for (int s = 0; s < kStages; ++s)
      if (l > p_.slim_layers[s]) rows = std::min(rows, std::max(target_blocks(s, n_prompt), 3) * p_.slim_block);
    return rows;
  }

 private:
  int stage_at(int32_t l) const {
    for (int s = 0; s < kStages; ++s)
      if (p_.slim_layers[s] == l) return s;
    return -1;
  }
  // Groups: [0, p0], (p0, p1], (p1, p2], (p2, end).
  int group_of(int32_t l) const {
    int g = 0;
    while (g < kStages && l > p_.slim_layers[g]) ++g;
    return g;
  }
  int32_t group_start(int g) const { return g == 0 ? 0 : p_.slim_layers[g - 1] + 1; }
  int32_t n_blocks(int32_t n) const { return (n + p_.slim_block - 1) / p_.slim_block; }
  int32_t target_blocks(int stage) const { return target_blocks(stage, n_prompt_); }
  int32_t target_blocks(int stage, int32_t n_prompt) const {
    const double frac = std::min(1.0, static_cast<double>(p_.keep) * (1 << (kStages - 1 - stage)));
    return std::max(2, static_cast<int32_t>(std::ceil(frac * n_prompt / p_.slim_block)));
  }
  ScoreRequest block_request(int32_t query_rows, int32_t n_key_rows) const {
    ScoreRequest r;
    r.kind = ScoreRequest::Kind::blocks;
    r.block = p_.slim_block;
    r.unit = p_.slim_unit;
    r.query_rows = query_rows;
    r.n_key_rows = n_key_rows;
    return r;
  }
  // The first forced block at the end of n rows: the one holding the first of the newest W.
  int32_t newest_block(int32_t n) const { return std::max(0, n - p_.window) / p_.slim_block; }
  // The ranking tap (a stage of the first pass): each row gets its block's score. Forced
  // blocks get the best real block score, a finite stand-in for "always kept" that keeps
  // the scale of the others. The last stage's ranking is the final one.
  void record_blocks(const Observation& obs) {
    if (!recording()) return;
    const int32_t n = obs.n_rows, newest = newest_block(n);
    const float best = *std::max_element(obs.scores, obs.scores + obs.n_cols);
    float* s = token_scores_.data();
    for (int32_t r = 0; r < n; ++r) {
      const int32_t b = r / p_.slim_block;
      s[r] = b == 0 || b >= newest ? best : obs.scores[b];
    }
    record(obs.layer, obs.positions, s, n);
    record_final(obs.positions, s, n);
  }
  // The best `want` of the nb block scores of n rows, ascending in blocks_; forced: the first
  // block and every block holding one of the newest W rows.
  Status top_blocks(Selector& sel, const float* scores, int32_t n, int32_t nb, int32_t want, int32_t* kept) {
    float* s = token_scores_.data();
    std::copy(scores, scores + nb, s);
    const int32_t newest = newest_block(n);
    s[0] = std::numeric_limits<float>::max();
    for (int32_t b = newest; b < nb; ++b) s[b] = std::numeric_limits<float>::max();
    want = std::min(nb, std::max(want, 1 + nb - newest));
    WT_TRY(sel.topk(s, 1, nb, want, blocks_.data()));
    *kept = want;
    return Status::ok();
  }

  std::vector<int32_t> active_[kGroups], attend_[kGroups];
  std::vector<int32_t> fresh_, blocks_;
  int32_t n_active_[kGroups] = {-1, -1, -1, -1};
  int32_t n_attend_[kGroups] = {};
  int32_t prompt_rows_[kGroups] = {};
};

// name, type, where, default, range when run, a token count, help
constexpr PruneParamSpec kParams[] = {
    {"slim_block", PruneParamType::i32, offsetof(wt_prune_params, slim_block), 64, {}, true, "tokens per block"},
    {"slim_unit", PruneParamType::i32, offsetof(wt_prune_params, slim_unit), 8, {}, true, "tokens per unit"},
    {"slim_query", PruneParamType::i32, offsetof(wt_prune_params, slim_query), 4, {}, true,
     "rows of the local query window"},
    {"slim_layer0", PruneParamType::i32, offsetof(wt_prune_params, slim_layers), -1, {-1, kUnbounded}, false,
     "the first pruning layer; -1 = n_layer / 3"},
    {"slim_layer1", PruneParamType::i32, offsetof(wt_prune_params, slim_layers) + sizeof(int32_t), -1, {-1, kUnbounded}, false,
     "the second pruning layer; -1 = 2 n_layer / 3"},
    {"slim_layer2", PruneParamType::i32, offsetof(wt_prune_params, slim_layers) + 2 * sizeof(int32_t), -1, {-1, kUnbounded}, false,
     "the last pruning layer; -1 = 14 n_layer / 15"},
    {"slim_gamma", PruneParamType::f32, offsetof(wt_prune_params, slim_gamma), 0.9, {0, 1}, false,
     "decode: keep the active set while its overlap with the new choice is >= gamma"},
    {"slim_decode_keep", PruneParamType::f32, offsetof(wt_prune_params, slim_decode_keep), 1, {0, 1, true, false}, false,
     "decode: the fraction of a group's blocks attended; 1 = all"},
};

void resolve(wt_prune_params* p, const PruneShape& s) {
  const int32_t nl = s.n_layer;
  const int32_t defaults[3] = {nl / 3, 2 * nl / 3, nl * 14 / 15};
  for (int i = 0; i < 3; ++i)
    if (p->slim_layers[i] < 0) p->slim_layers[i] = defaults[i];
}

Status check(const wt_prune_params& p, const PruneShape& s) {
  const auto bad = [](const std::string& what) { return error(WT_ERR_INVALID_ARGUMENT, "prune." + what); };
  if (p.slim_block < 1 || p.slim_unit < 1 || p.slim_block % p.slim_unit != 0)
    return bad("slim_block must be a positive multiple of slim_unit");
  if (p.slim_query < 1) return bad("slim_query must be >= 1");
  for (int i = 0; i < 3; ++i) {
    if (p.slim_layers[i] >= s.n_layer) return bad("slim_layers[" + std::to_string(i) + "] is beyond the model's layers");
    if (i > 0 && p.slim_layers[i] <= p.slim_layers[i - 1]) return bad("slim_layers must increase");
  }
  return Status::ok();
}

}  // namespace

namespace prune_methods_registry {

const PruneMethodSpec& sliminfer() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_SLIMINFER,
                                    .name = "sliminfer",
                                    .summary = "SlimInfer: block-wise progressive hidden-state pruning, decode re-selection",
                                    .params = kParams,
                                    .window = 8,
                                    .pool_kernel = 7,
                                    .pool = WT_POOL_AVG,
                                    .resolve = resolve,
                                    .check = check,
                                    .make = make_policy_of<SlimInfer>};
  return spec;
}

}  // namespace prune_methods_registry

}  // namespace wt
