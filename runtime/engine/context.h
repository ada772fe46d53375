// A context: one conversation's state (KV cache, activations) over a shared Model, and the
// forward loop that runs prefill and decode. Everything is allocated in create(); prefill
// and decode only launch ops on views of the arena.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "runtime/model/model.h"
#include "runtime/prune/policy.h"
#include "base/status.h"
#include "context_budget.h"
#include "context_layout.h"
#include "paged_kv.h"
#include "state_io.h"

namespace wt {

struct ContextOptions {
  int32_t n_ctx = 0;        // 0 = model's training context
  int32_t n_threads = 0;    // 0 = all cores
  bool fixed_threads = false;  // every launch on all n_threads workers (BackendOptions)
  bool logits_all = false;  // keep logits for every row of a prefill
  bool f32_activations = false;  // matmuls without int8 activation quantization
  uint64_t memory_budget_bytes = 0;
  // > 0 with a pruning policy: each layer's KV is sized for the policy's peak at a prompt of
  // n_ctx - max_new_tokens plus max_new_tokens rows (kv_capacity), not n_ctx rows.
  int32_t max_new_tokens = 0;
  // The KV pager (paged_kv.h): > 0 bounds the device pool to this many blocks.
  int32_t kv_device_blocks = 0;
  int32_t kv_block_tokens = 64;
  bool kv_sync_swaps = false;  // wait for each swap on the host (the ablation)
  // Copy between a device pool and a host pool on unified memory too (WT_KV_PAGER_COPY);
  // otherwise a unified backend's pager works in place (paged_kv.h).
  bool kv_pager_copy = false;
  DType kv_type = DType::f32;  // the KV cache's element: f32, f16 or q8_0 (the backend's BackendCaps::kv_types)
  int32_t n_batch_rows = 0;    // prompt rows at once (pass_rows(), slice_rows(), ffn_rows()); 0: the default
  size_t transfer_bytes = 0;   // the transfer staging's largest chunk (ArenaInputs); 0: kTransferBytes
  bool (*progress)(float, void*) = nullptr;
  void* progress_user = nullptr;
  wt_prune_params prune = wt_prune_default_params();
};

// What the pruning policy did in the last pruned prefill (wt_prune_stats).
struct PruneStats {
  int32_t n_prompt = 0;
  PolicyReport report;
  std::vector<int32_t> kv_rows;      // [n_layer] prompt KV rows per layer
  std::vector<int32_t> hidden_rows;  // [n_layer] rows computed per layer (last pass)
  std::vector<uint64_t> kv_bytes;    // [n_layer]
  double score_ms = 0;
  double pass1_ms = 0;
  double prefill_ms = 0;
};

struct ContextStats {
  int32_t n_prefill_tokens = 0;
  double prefill_ms = 0;
  int32_t n_decode_tokens = 0;
  double decode_ms = 0;
  uint64_t arena_bytes = 0;
  uint64_t kv_bytes = 0;
  uint64_t pager_device_bytes = 0;  // the pager's pools (0 without it)
  uint64_t pager_host_bytes = 0;
  double threads_per_op = 0;  // CPU workers per launch since the last reset (0: none yet, or a device)
};

// What create() would allocate (wt_context_plan).
struct ContextPlan {
  int32_t n_ctx = 0;
  uint64_t weights_bytes = 0;
  ArenaBytes arena;  // the arena by part, and the pager's pools
  uint64_t driver_bytes = 0;  // the backend's BackendCaps::queued_work_bytes
  int32_t batch_rows = 0;     // rows of a prompt's pass or slice (slice_rows(); n_batch_rows resolved)
};

class Context {
 public:
  static Status create(const Model& model, const ContextOptions& options, std::unique_ptr<Context>* out);
  // The layout create() would allocate, checked the same way, allocating none of it.
  static Status plan(const Model& model, const ContextOptions& options, ContextPlan* out);
  ~Context();

  Status prefill(const int32_t* tokens, int32_t n_tokens);
  Status decode(int32_t token);
  // From any thread: the running (or next) prefill stops at its next layer boundary.
  void request_abort() { abort_.store(true, std::memory_order_relaxed); }
  // Logits row `row` of the last call (-1 = last row); nullptr if not kept.
  const float* logits(int32_t row) const;
  int32_t n_logit_rows() const { return n_logit_rows_; }
  // Rows the last prefill/decode ran (0: no logits since creation or the last reset).
  int32_t n_last_rows() const { return last_rows_; }

  void reset();
  // Keeps the first n tokens (wt_context_truncate): every layer drops the KV rows of the
  // later ones, and there are no logits until the next call. WT_ERR_INVALID_ARGUMENT: n
  // outside [0, n_past]; WT_ERR_UNSUPPORTED: n inside a pruned prompt, or before the window
  // a sliding-window layer still holds. A refusal changes nothing.
  Status truncate(int32_t n);
  // The saved state (context_state.cpp, wt_context_state_*): its bytes now; the state into
  // a sink; a state from a source, checked whole before anything changes (a refusal leaves
  // the context as it was; a read that fails on the second pass resets it).
  uint64_t state_bytes() const;
  Status save_state(StateSink& out);
  Status load_state(StateSource& in);
  int32_t n_past() const { return n_past_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t batch_rows() const { return batch_rows_; }  // rows of a prompt's pass or slice
  bool batch_rows_lowered() const { return batch_rows_lowered_; }  // the default did not fit
  ContextStats stats() const;
  const Model& model() const { return model_; }
  const Backend& backend() const { return *backend_; }
  bool on_device() const { return device_ != nullptr; }
  const wt_prune_params& prune_params() const { return prune_; }
  DType kv_type() const { return options_.kv_type; }
  const PruneStats& prune_stats() const { return prune_stats_; }
  const PrunePolicy* policy() const { return policy_.get(); }
  // KV rows layer l holds, and the original position of each row of KV head h (a prompt
  // token's index in the prompt, L + t for the t-th token after a prompt of L; also after a
  // re-indexed re-prefill).
  int32_t kv_len(int32_t l) const { return kv_len_[static_cast<size_t>(l)]; }
  // Bytes of one token's K and V in one layer (all KV heads), in the cache's type.
  uint64_t kv_row_bytes() const { return wt::kv_row_bytes(model_.hp, options_.kv_type); }
  const int32_t* kv_positions(int32_t l, int32_t h) const;
  // Without the pager: layer l's KV cache. With it, the pager holds the KV.
  const Tensor& k_cache(int32_t l) const { return k_cache_[static_cast<size_t>(l)]; }
  const PagedKv* paged_kv() const { return kv_.get(); }
  // The ranking tap (prune.record_ranking with a policy): row `layer` (-1: the final one)
  // of the last pruned prefill's token ranking, *n_prompt entries; nullptr when nothing was
  // ranked since the last reset.
  bool records_ranking() const { return ranking_.rows != nullptr; }
  const float* token_ranking(int32_t layer, int32_t* n_prompt) const;
  // The attended-rows tap (with record_ranking): the KV rows (indices into layer l's rows, as
  // kv_positions lists them) that layer l's attention read in the last pass, *n of them;
  // nullptr unless that pass was a decode step the policy was asked about.
  const int32_t* attended_rows(int32_t l, int32_t* n) const;

 private:
  Context(const Model& model, const ContextOptions& options) : model_(model), options_(options) {}
  // Everything but the arena and pools: checks, n_ctx, the policy, the backend.
  static Status setup(const Model& model, const ContextOptions& options, std::unique_ptr<Context>* out);
  Status arena_inputs(ArenaInputs* out) const;
  // The default n_batch_rows lowered where the arena would not fit `limit` (fit_batch_rows
  // in context_budget.h): options_ and *in take the rows chosen.
  void fit_batch_rows(const MemoryLimit& limit, ArenaInputs* in);
  Status allocate();
  // One pass of the model over n rows at positions pos[0..n) (copied in first). With a
  // policy, the rows are a fresh prompt (every layer's KV starts empty), the policy is asked
  // at every layer and may shrink the rows; if it asks to restart, *restart says with what.
  // Without one, the rows append to the KV of every layer (prefill passes, decode), and
  // policy_ (if any) is asked its decode questions; with logits_all their logits go to rows
  // [out_row0, out_row0 + n) (a prompt's passes after its first).
  Status forward(const int32_t* tokens, const int32_t* pos, int32_t n, PrunePolicy* policy, Decision* restart,
                 int32_t out_row0 = 0);
  Status prefill_pruned(const int32_t* tokens, int32_t n_tokens);
  // One pass over a saved state: every check (apply false), or the writes too.
  Status read_state(StateSource& in, bool apply);
  // The host's access to bytes of the arena's device part, in place or through the transfer
  // staging where that part has no host address (context_transfer.cpp); zeros are the
  // backend's zero_async on the compute stream.
  Status save_device_bytes(StateSink& out, const void* src, size_t bytes);
  Status load_device_bytes(StateSource& in, void* dst, size_t bytes);
  Status zero_device_bytes(void* dst, size_t bytes);
  Buffer device_view(const void* p, size_t bytes) const;
  Buffer staging_view(size_t bytes) const;

  // One forward pass, as the layers see it (forward_llama.cpp).
  struct Pass {
    PrunePolicy* policy = nullptr;   // a pruned prompt's pass: asked at every layer
    PrunePolicy* decoder = nullptr;  // a step after a pruned prefill: asked its decode questions
    bool fresh = false;              // a pruned prompt: every layer's KV starts empty
    PagedKv* paged = nullptr;        // the pager, or null (the KV in the arena's cache)
  };
  // What one layer's attention reads.
  struct LayerKeys {
    int32_t kv0 = 0;          // KV rows before this pass (0 for a pruned prompt)
    size_t cache = 0;         // the k_cache_ / v_cache_ slot (the layer; paged: 0, the staging)
    bool paged_step = false;  // a paged decode step: attention reads the pager's device pool
    Tensor k, v;              // [keys, n_head_kv, head_dim]: the layer's KV with this pass's rows
  };
  // The steps of a layer around its attention (forward_kv.cpp): positions and token ids in,
  // the KV this pass appends, the policy's observation and decision, attention over the
  // keys it keeps, the KV rows a pruned prompt keeps, and the hidden rows that go on.
  Pass begin_pass(const int32_t* tokens, const int32_t* pos, int32_t n, PrunePolicy* policy);
  Status append_kv(OpRunner& run, const Pass& pass, int32_t l, const Tensor& k, const Tensor& v, LayerKeys* out);
  // q: the queries of the pass's last rows (its last slice); k, v: this pass's rows.
  Status ask_policy(OpRunner& run, const Pass& pass, int32_t l, const Tensor& q, const Tensor& k, const Tensor& v,
                    LayerKeys* keys, Decision* out);
  // q's rows are the pass's rows [row0, row0 + q rows) (a slice).
  Status attend(OpRunner& run, const Pass& pass, int32_t l, const Tensor& attn, const Tensor& q,
                const LayerKeys& keys, const Decision& d, int32_t row0);
  Status keep_kv(OpRunner& run, const Pass& pass, int32_t l, const Tensor& k, const Tensor& v, const Decision& d);
  // The attended-rows tap: layer l's key rows of this decode step (all n_keys without a choice).
  void record_attended(int32_t l, const Decision& d, int32_t n_keys);
  // Token-selective propagation: the kept rows of x, in place (at their original positions),
  // a slice of xn's rows at a time through xn.
  Status keep_rows(OpRunner& run, const Decision& d, const Tensor& xn, Tensor* x, int32_t* rows);
  // The feed-forward block of rows x [rows, n_embd] whose attention output is in xn [rows,
  // n_embd] (added into x first), in slices of gate's rows; its output goes into x (add_out,
  // or a one-row fused step) or stays in xn for the next norm to add.
  Status feed_forward(OpRunner& run, const LayerWeights& w, const Tensor& x, const Tensor& xn, bool fuse,
                      bool add_out);
  // Between layers of a prefill of two tokens or more (every pass of it: a pruned prefill's
  // second pass and answer steps may run one row): WT_ERR_ABORTED when wt_context_abort or
  // the progress callback asks to stop. Decode steps and one-token prefills never stop.
  // Progress: (layer + 1) / n_layer of this pass, or of the prompt's rows when it runs in
  // passes (pass_row0_).
  Status check_continue(int32_t layer, int32_t n_rows);
  // Layer l's KV head h in kv_pos_: kv_cap_[l] rows.
  int32_t* kv_pos_of(int32_t l, int32_t h) {
    return const_cast<int32_t*>(static_cast<const Context*>(this)->kv_pos_of(l, h));
  }
  const int32_t* kv_pos_of(int32_t l, int32_t h) const {
    const size_t layer = static_cast<size_t>(l);
    return kv_pos_ + kv_pos_at_[layer] + static_cast<size_t>(h) * static_cast<size_t>(kv_cap_[layer]);
  }
  // KV rows [row0, row0 + n) of layer l sit at positions[i], or positions[sel[h * head_stride
  // + i]] for KV head h when sel is given.
  void set_kv_positions(int32_t l, int32_t row0, const int32_t* positions, const int32_t* sel, int32_t n,
                        int32_t head_stride);
  // key_ids (blocks and key_bounds requests): key row r of k is row key_ids[r] (the paged
  // host tier).
  Status observe(const ScoreRequest& req, int32_t layer, int32_t n, int32_t n_keys, const Tensor& q,
                 const Tensor& k, const Tensor& v, const int32_t* key_ids, Observation* obs);
  // The first layer whose decode steps rank blocks by key bounds built from the pager's host
  // tier (the pager predicts none of such a layer's blocks for the first step), n_layer when
  // the policy builds none or the host tier is too large for one kernel argument.
  int32_t bounded_from_layer() const {
    return policy_ && policy_->key_bounds_block() > 0 && (!kv_ || host_tier_bindable())
               ? policy_->key_bounds_first_layer()
               : static_cast<int32_t>(model_.hp.n_layer);
  }
  // Whether one kernel argument may bind the pager's whole host tier (Vulkan's bindings
  // reach maxStorageBufferRange: lavapipe 128 MiB); if not, observations read the layer's
  // blocks on the device instead.
  bool host_tier_bindable() const;
  // A paged decode step's keys for the policy's observation: the pool rows, the host tier,
  // or the layer gathered into the staging, as the request needs.
  Status paged_observe_keys(OpRunner& run, int32_t l, const ScoreRequest& req, const Tensor& k, const Tensor& v,
                            Tensor* kc, Tensor* vc, const int32_t** key_ids);
  Status check_tokens(const int32_t* tokens, int32_t n_tokens) const;
  // Takes the backend for one call: the model's device lock (with this context's workspace
  // installed) when the model lives on a device, nothing for a context's own CPU backend.
  std::unique_lock<std::mutex> claim_backend();
  void begin_ranking(int32_t n_prompt);

  std::atomic<bool> abort_{false};  // wt_context_abort; consumed by each prefill
  int32_t prefill_tokens_ = 0;      // tokens of the wt_context_prefill running (0 outside one)
  int32_t pass_row0_ = -1;          // its pass's first row when it runs in passes (-1: one pass)

  using Activations = ContextActivations;  // context_layout.h

  const Model& model_;
  ContextOptions options_;
  // The backend the context runs on: its own CPU backend (own_backend_, its worker
  // threads), or the device backend of the model (device_), shared with the model's other
  // contexts through ModelDevice::lock().
  std::unique_ptr<Backend> own_backend_;
  ModelDevice* device_ = nullptr;
  Backend* backend_ = nullptr;
  Buffer arena_;       // the arena's device part (context_layout.h): device_only memory, so
                       // Buffer::host is null where the backend has no mapping (CUDA; Vulkan on a
                       // discrete GPU) and the views use Buffer::device
  Buffer host_arena_;  // its host part: logits, positions, token ids, rope divisors, row
                       // scratch, KV positions, the policies' scores, the transfer staging
  Buffer workspace_;   // a view of the device part, installed on the backend before each call
  // The host part's staging for the device part (ArenaViews::transfer): null where the host
  // addresses the device part itself.
  char* transfer_ = nullptr;
  size_t transfer_bytes_ = 0;
  float* topk_in_ = nullptr;  // [score_capacity_] staging for topk over host-side scores
  Activations act_;
  std::vector<Tensor> k_cache_;  // per layer [n_ctx, n_head_kv, head_dim]; with the pager one:
                                 // the staging of multi-row passes
  std::vector<Tensor> v_cache_;
  int32_t* positions_ = nullptr; // [n_ctx] in the arena
  int32_t* token_ids_ = nullptr; // [n_ctx] in the arena
  int32_t* row_tmp_ = nullptr;   // [n_ctx] scratch for gathered positions / tokens
  int32_t* tok_tmp_ = nullptr;   // [n_ctx]
  int32_t* kv_pos_ = nullptr;    // [n_layer][n_head_kv][kv_cap_[l]] original position of each KV row
  std::vector<size_t> kv_pos_at_;  // [n_layer] where each layer's rows begin in kv_pos_ (lay_out_arena's)
  // A re-indexed re-prefill (GemFilter) rotates its K kept tokens at 0..K-1 and decodes at K..:
  // origin_[p] is the prompt position of rotary position p < K, and p >= K is the token that
  // came (p - K) after the prompt of n: n + (p - K). reindexed_ = K (0: positions are
  // original), reindexed_from_ = n.
  int32_t* origin_ = nullptr;    // [n_ctx]
  int32_t reindexed_ = 0;
  int32_t reindexed_from_ = 0;
  float* scores_ = nullptr;      // [n_head][n_ctx] window / block scores, before pooling
  float* pooled_ = nullptr;      // [n_head][n_ctx] after pooling; kv similarities
  size_t score_capacity_ = 0;    // floats in scores_ and in pooled_
  float* anchors_ = nullptr;     // [n_layer][2][n_head_kv][head_dim] Token Filtering anchors
  // [n_layer][...] (context_layout.h) the key bounds of decode steps that ask for them, and the
  // prompt rows each layer's bounds cover now (0: none; cleared by every pass that is not a
  // decode step, since such a pass may change the rows).
  uint16_t* key_bounds_ = nullptr;  // f16, ArenaViews::key_bounds
  std::vector<int32_t> key_bounds_rows_;
  RankingSink ranking_;          // rows [n_layer + 1][n_ctx] in the arena with record_ranking;
                                 // n_prompt 0: nothing ranked since the last reset
  int32_t* attended_ = nullptr;  // [n_layer][n_ctx] in the arena with record_ranking
  std::vector<int32_t> attended_n_;  // [n_layer] rows recorded by the last pass; -1: none
  std::unique_ptr<PagedKv> kv_;  // the pager (kv_device_blocks > 0), else null
  std::vector<int32_t> kv_len_;  // [n_layer] KV rows each layer holds
  std::vector<int32_t> kv_cap_;  // [n_layer] KV rows each layer is sized for (the plan's)
  // WT_ERR_CONTEXT_FULL when layer l cannot take `rows` more KV rows.
  Status check_kv_room(int32_t l, int32_t rows_after) const;
  // A sliding-window layer of a full-KV context, whose cache holds fewer rows than n_ctx: it
  // keeps only its last window - 1 rows once full (gemma3).
  bool slides(int32_t l) const {
    return layer_is_swa(model_.hp, l) && kv_cap_[static_cast<size_t>(l)] < n_ctx_;
  }
  // Before a pass of `rows` appends to layer l: where they would not fit, moves the layer's
  // last window - 1 rows (and their positions) to the cache's start.
  Status slide_kv(OpRunner& run, int32_t l, int32_t rows);
  wt_prune_params prune_;        // resolved (model-specific defaults filled in)
  std::unique_ptr<PrunePolicy> policy_;
  bool policy_decoding_ = false; // the last prefill was pruned: decode asks the policy
  // The tokens truncate() may not go below: the pruned prompt's (n_past right after it), or
  // a loaded state's n_past where that state is one (its prompt's end is not saved).
  int32_t pruned_end_ = 0;
  PruneStats prune_stats_;
  float* rope_divisors_ = nullptr;
  double* rope_freqs_ = nullptr;  // [n_rot/2] rope_freqs() of the model's rope, made at allocation
  float attn_scale_ = 0;          // attention_scale(): q.k's softmax scale, YaRN's factor in it
  float* rope_angles_ = nullptr;  // [n_rot] a one-row pass's angles (RopeOp::angles)
  // Sliding-window layers' rope (gemma3): the model's hparams with their base and no
  // scaling, and the same two tables for it (null without such layers).
  Hparams hp_swa_;
  double* rope_freqs_swa_ = nullptr;
  float* rope_angles_swa_ = nullptr;
  int32_t n_ctx_ = 0;
  int32_t n_past_ = 0;
  int32_t n_logit_rows_ = 0;  // rows the logits buffer holds
  int32_t output_rows_ = 1;   // rows the output head runs at once (output_rows())
  int32_t batch_rows_ = 0;    // rows of a prompt's pass or slice (slice_rows())
  bool batch_rows_lowered_ = false;  // the default n_batch_rows did not fit (fit_batch_rows)
  int32_t last_rows_ = 0;     // rows of the last prefill/decode (0: no logits yet)
  bool last_row_only_ = false;  // the last prefill was pruned: only its last row has logits
  ContextStats stats_;
  WorkerCounts workers0_;  // the backend's worker counts at the last reset
};

}  // namespace wt
