// The pruning policy interface: one strategy object per method (one file each), consulted by
// the forward loop at every layer of a pruned prefill and at every decode step. A policy is
// a pure decision over small host-side vectors (pooled scores per head, block scores,
// similarities); every O(n·d) computation it asks for runs on the backend as an op
// (window_scores, pool1d, block_scores, kv_similarity, topk, gather_rows). A policy never
// knows which backend runs, and never allocates after construction: it reserves its
// buffers for n_ctx tokens up front.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "whittle.h"
#include "base/status.h"

namespace wt {

// The longest context Whittle makes (wt_context_params.n_ctx): no count of tokens exceeds
// it, so sums of a few such counts stay far from int32 overflow.
inline constexpr int32_t kMaxContextTokens = 1 << 20;

struct PruneShape {
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int32_t n_ctx = 0;
};

// What the engine computes at a layer, before the layer's attention, for the policy.
struct ScoreRequest {
  enum class Kind { none, window, blocks, kv_similarity, key_bounds };
  Kind kind = Kind::none;
  // window: window_scores of the last `window` query rows against all keys, then pool1d.
  int32_t window = 0;
  bool softmax = true;     // false: raw q.k (GemFilter)
  bool per_query = false;  // one score row per query instead of their sum
  int32_t n_cols = 0;      // scored key columns (0..n_cols)
  int32_t pool_kernel = 1; // 1: no pooling
  bool pool_max = false;
  // blocks: SlimInfer block scores of key rows 0..n_key_rows (0: every visible row).
  int32_t block = 0, unit = 0, query_rows = 0;
  int32_t n_key_rows = 0;
  // kv_similarity: anchors are the engine's, per layer, reset at every pruned prefill.
  float anchor_decay = 0.0f;
  // key_bounds (a decode step): per block of the policy's key_bounds_block() rows of key rows
  // 0..n_cols, the log of the query heads' summed softmax over Quest's upper bounds of the
  // blocks (KeyBoundsOp, BoundScoresOp). The engine keeps each layer's bounds from the first
  // step that asks until a pass that is not a decode step.
};

struct Observation {
  int32_t layer = 0;
  int32_t n_rows = 0;               // rows of this forward (hidden rows; 1 at decode)
  int32_t n_keys = 0;               // key rows the rows may see
  const int32_t* positions = nullptr;  // [n_rows] original positions
  const float* scores = nullptr;    // window: [n_out][n_head][n_cols]; blocks: [n_blocks];
                                    // key_bounds: [n_blocks];
                                    // kv_similarity: [n_rows][n_head_kv][2]
  int32_t n_cols = 0;               // window: n_cols; blocks: n_blocks
};

// A policy's answer for one layer. Row indices refer to this forward's rows (prefill: the
// current hidden rows, ascending original order) and are sorted ascending.
struct Decision {
  // none: this pass's rows are dropped, for a layer of a first pass the policy restarts
  // before it ends (GemFilter's layers before its filter layer); a pass that ends with such a
  // layer is an internal error.
  enum class Kv { all, shared, per_head, none };
  Kv kv = Kv::all;                    // which of this forward's KV rows the layer keeps
  const int32_t* kv_rows = nullptr;   // shared: [n_kv_rows]; per_head: [n_head_kv][n_kv_rows]
  int32_t n_kv_rows = 0;
  const int32_t* keep_rows = nullptr; // hidden rows that continue after this layer (null: all)
  int32_t n_keep_rows = 0;
  const int32_t* skip_rows = nullptr; // [n_rows] nonzero: skip that row's attention
  const int32_t* attend_rows = nullptr;  // decode: the cache rows attended (null: all)
  int32_t n_attend_rows = 0;
  bool restart = false;               // stop this pass; re-prefill the tokens of keep_rows
  bool reindex = false;               // ... at positions 0..K-1 instead of their own
};

// Selection ops the engine runs on its backend for a policy.
class Selector {
 public:
  virtual ~Selector() = default;
  // For each of `rows` rows of scores [rows][n]: the k best indices, ascending, into
  // out[rows][k] (ties: lower index first).
  virtual Status topk(const float* scores, int32_t rows, int32_t n, int32_t k, int32_t* out) = 0;
};

// What a policy reports about its last prefill (copied into wt_prune_stats).
struct PolicyReport {
  int32_t selection_layer = -1;
  bool triggered = false;
  int32_t n_selected = 0;
  int32_t n_block_swaps = 0;
  int64_t n_attention_skipped = 0;
  double asl_min_ratio = 0;       // ASL: the smallest V_l / V_init seen, and where
  int32_t asl_min_ratio_layer = -1;
  const double* asl_ratios = nullptr;  // ASL: [n_layer] V_l / V_init, NaN where not tested (the policy's own array)
};

// The evaluation tap behind wt_context_get_token_ranking: rows [n_layer + 1][n_ctx] in the
// context's arena, indexed by original prompt position; row n_layer is the final ranking.
// The engine fills the first n_prompt entries of every row with NaN before a pruned prefill,
// so a token a layer did not rank stays NaN.
struct RankingSink {
  float* rows = nullptr;
  int32_t n_layer = 0;
  int32_t n_ctx = 0;
  int32_t n_prompt = 0;

  // layer -1: the final row.
  float* row(int32_t layer) const {
    return rows + static_cast<size_t>(layer < 0 ? n_layer : layer) * static_cast<size_t>(n_ctx);
  }
  void clear(int32_t layer) const {
    float* r = row(layer);
    std::fill(r, r + n_prompt, std::numeric_limits<float>::quiet_NaN());
  }
};

// Where a policy writes its decode state when a context is saved (wt_context_state_save),
// and reads it back when one is loaded: byte streams the engine provides (its state file or
// buffer, runtime/engine/state_io.h).
class StateWriter {
 public:
  virtual ~StateWriter() = default;
  virtual Status write(const void* data, size_t n) = 0;
};
class StateReader {
 public:
  virtual ~StateReader() = default;
  // WT_ERR_FORMAT where fewer than n bytes are left.
  virtual Status read(void* dst, size_t n) = 0;
};

class PrunePolicy {
 public:
  virtual ~PrunePolicy() = default;
  // Before layer 0 of a pruned prefill of n_prompt tokens; pass 1 is the re-prefill of a
  // two-pass method (which runs plain, so most policies ask nothing then).
  virtual void begin(int32_t n_prompt, int pass) = 0;
  virtual ScoreRequest request(int32_t layer, int32_t n_rows) = 0;
  virtual Status decide(int32_t layer, const Observation& obs, Selector& sel, Decision* out) = 0;

  // Decode steps after the pruned prefill (SlimInfer's re-selection, Token Filtering, the
  // oracle's answer). n_cache_rows: this layer's KV rows including the new token.
  virtual ScoreRequest decode_request(int32_t /*layer*/, int32_t /*n_cache_rows*/) { return {}; }
  virtual Status decode_decide(int32_t /*layer*/, const Observation&, Selector&, Decision* out) {
    *out = Decision{};
    return Status::ok();
  }

  // Answer-informed methods: tokens to generate greedily with full KV before selecting.
  virtual int32_t answer_tokens() const { return 0; }
  // After the answer: the prompt rows to re-prefill (a restart decision).
  virtual Status after_answer(Selector&, Decision* out) {
    *out = Decision{};
    return Status::ok();
  }

  // The most prompt KV rows layer `layer` keeps for a prompt of n_prompt tokens: what the
  // planner budgets, and an invariant the engine's result must meet.
  virtual int32_t kv_budget(int32_t layer, int32_t n_prompt) const = 0;
  // The most rows layer `layer` holds at any point of the pruned prefill: the budget, or
  // more for methods whose first pass writes KV it later replaces (two-pass ASL, the
  // oracle's answer with full KV; GemFilter's first pass writes none: Decision::Kv::none).
  virtual int32_t kv_peak(int32_t layer, int32_t n_prompt) const { return kv_budget(layer, n_prompt); }
  // Rows per block of the key bounds its decode requests ask for (ScoreRequest::key_bounds),
  // which the engine plans for every layer from key_bounds_first_layer() on; 0: it asks for
  // none. The layers before that one never ask (decode_topk_dense_layers).
  virtual int32_t key_bounds_block() const { return 0; }
  virtual int32_t key_bounds_first_layer() const { return 0; }

  // A saved context after a pruned prefill: what this policy's later decode steps need
  // (decode_request / decode_decide), written as exactly decode_state_bytes() bytes, and read
  // back into a policy made with the same parameters and shape that has seen no prompt
  // (the engine checks the parameters; the policy checks what it reads, WT_ERR_FORMAT).
  // A load reads it twice: apply false only checks (the policy unchanged, so a refused state
  // leaves the context as it was), then apply true takes it.
  // Policies whose decode steps need nothing of the prefill keep these defaults.
  virtual uint64_t decode_state_bytes() const { return 0; }
  virtual Status save_decode_state(StateWriter&) const { return Status::ok(); }
  virtual Status load_decode_state(StateReader&, uint64_t n_bytes, bool /*apply*/) {
    if (n_bytes == 0) return Status::ok();
    return error(WT_ERR_FORMAT, "the state has decode state for a policy that keeps none");
  }

  const PolicyReport& report() const { return report_; }

  // The engine sets a sink for the phases whose scores rank the prompt (the first pass, an
  // answer-informed method's answer and choice) and clears it otherwise, so the re-prefill
  // of a two-pass method and later decodes never overwrite what the first pass ranked.
  void set_ranking_sink(const RankingSink* sink) { sink_ = sink; }

 protected:
  // Policies compute what only the tap needs (per-token vectors, sums) only while recording.
  bool recording() const { return sink_ != nullptr; }
  // scores[i] is the importance of row i at `layer` (-1: the final ranking); positions[i] its
  // original prompt position (null: i itself). Rows at or past n_prompt (decode rows) are
  // not prompt tokens and are left out.
  void record(int32_t layer, const int32_t* positions, const float* scores, int32_t n) const {
    if (!sink_) return;
    float* row = sink_->row(layer);
    for (int32_t i = 0; i < n; ++i) {
      const int32_t j = positions ? positions[i] : i;
      if (j >= 0 && j < sink_->n_prompt) row[j] = scores[i];
    }
  }
  // For methods whose final ranking is the last of several (SnapKV, ASL until it selects,
  // SlimInfer's stages, Token Filtering): a later layer's ranking replaces the earlier one
  // whole, so tokens an earlier stage scored but a later one no longer sees keep no stale
  // scores.
  void record_final(const int32_t* positions, const float* scores, int32_t n) const {
    if (!sink_) return;
    sink_->clear(-1);
    record(-1, positions, scores, n);
  }

  PolicyReport report_;

 private:
  const RankingSink* sink_ = nullptr;
};

}  // namespace wt
