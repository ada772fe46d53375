// The layout of a context's arena, as a pure function: given the model's shape, the
// context's options and its backend (for op workspace sizes), it counts every byte the
// context will allocate, part by part, and — given base addresses — places the views.
// The arena is two allocations by who touches it: the device part (what only kernels read
// and write: activations, KV, anchors, key bounds, workspace) and the host part (what the
// host writes or reads: positions, token ids, rope divisors, row scratch, KV positions, the
// logits the sampler reads, the scores the policies read and rank, the transfer staging).
// The device part is MemoryKind::device_only: where the backend does not map it (CUDA's
// cudaMalloc on every GPU, Vulkan's VRAM on a discrete card) it has no host address, so the views use Buffer::device and the host
// moves a state's KV and the anchors through the staging (context_transfer.cpp). It was
// managed memory on CUDA once, and a host write to a page of it moved the page to the host,
// so the next kernel that touched anything on that page waited for it to come back (an H200
// lost 250-480 us per decode step so). The host part is pinned host memory the kernels reach
// directly (the backend's host_pinned).
// Context::allocate() calls it twice (measure, then place); the budget planner
// (platform/planner.cpp) calls it to measure only, so its arena figure is the context's
// arena_bytes by construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "backends/backend.h"
#include "whittle.h"
#include "runtime/model/model.h"
#include "runtime/prune/policy.h"

namespace wt {

// Activations of the forward pass, each a view of the arena sized for the rows of one pass,
// n = pass_rows(), or of one slice of it, s = slice_rows() (gate and up: ffn_rows()).
struct ContextActivations {
  Tensor x;         // [n, n_embd]          residual stream
  Tensor xn;        // [s, n_embd]          normed input of a block / block output
  Tensor q;         // [s, n_head, head_dim]
  Tensor k;         // [n, n_head_kv, head_dim]
  Tensor v;         // [n, n_head_kv, head_dim]
  Tensor attn;      // [s, n_head, head_dim] attention output
  Tensor gate;      // [ffn_rows, n_ff]      the feed-forward block runs its rows in
  Tensor up;        // [ffn_rows, n_ff]      slices of this many (ffn_rows())
  Tensor logits;    // [n_logit_rows, n_vocab]
};

// What the layout reads. Weight tensors need only type and shape (data may be null): the
// matmul workspace depends on them.
struct ArenaInputs {
  const Hparams* hp = nullptr;
  const std::vector<LayerWeights>* layers = nullptr;  // [n_layer]
  const Tensor* output = nullptr;                     // [n_vocab, n_embd]
  int32_t n_ctx = 0;            // resolved (> 0)
  int32_t n_logit_rows = 1;     // n_ctx with logits_all, else 1
  bool f32_activations = false;
  const wt_prune_params* prune = nullptr;  // resolved params of the policy; null: full KV
  int32_t key_bounds_block = 0;  // the policy's PrunePolicy::key_bounds_block(): > 0 plans the bounds
  int32_t key_bounds_first_layer = 0;  // PrunePolicy::key_bounds_first_layer(): the layers planned start there
  const Backend* backend = nullptr;        // workspace_bytes() and caps()
  int32_t kv_device_blocks = 0;  // > 0: the KV pager (paged_kv.h) with this device pool;
                                 // the arena then keeps one layer of KV as staging
  int32_t kv_block_tokens = 64;
  // The pager in place (unified memory, paged_kv.h): one pool of every block, no host pool.
  bool kv_pager_in_place = false;
  // The device part has no host address (the context: BackendCaps::device_only_unmapped; the
  // planner: CUDA, or Vulkan on a discrete board), so the host part holds the transfer
  // staging (ArenaViews::transfer).
  bool device_part_unmapped = false;
  size_t transfer_bytes = 0;  // the staging's largest chunk; 0: kTransferBytes (tests: smaller,
                              // so that a state moves in many chunks)
  // [n_layer] KV rows each layer is sized for (kv_capacity: the plan's figure); null: n_ctx.
  const std::vector<int32_t>* kv_rows = nullptr;
  DType kv_type = DType::f32;  // the KV cache's element: f32, f16 or q8_0
  int32_t n_batch_rows = 0;    // wt_context_params.n_batch_rows as asked (0: the default); pass_rows(),
                               // slice_rows() and ffn_rows() resolve it
};

// Rows one forward pass runs, which x, k and v are planned for. n_ctx where a pruning policy
// reads a whole prompt at once (in.prune) or the pager keeps the KV (it would fetch every
// layer's earlier rows back for each pass); otherwise slice_rows(): a longer prompt runs in
// passes of that many rows, each appending to the KV (Context::prefill), as a prompt given in
// parts would, so the result is the same for a fraction of the memory (Qwen2.5-7B at 32k
// tokens: [n, n_embd] x, xn, q and attn are 1792 MiB).
int32_t pass_rows(const ArenaInputs& in);

// Rows of a slice, which xn, q and attn are planned for: a pass of more rows runs each layer
// in slices of at most this many (forward_llama.cpp: first every slice's keys and values,
// then per slice its queries, attention, output projection and feed-forward block), so a
// pruned prompt's pass of n_ctx rows keeps only x, k and v whole (Qwen2.5-7B at 32k tokens:
// 1344 of its 2216 MiB of activations were xn, q and attn). n_batch_rows (0:
// WT_BATCH_ROWS_DEFAULT) but at least 3, at most n_ctx, and at most what one binding of the
// backend holds of a row of x, q or (logits_all, where a binding holds at least 3 rows of
// them) the logits; with a policy at least twice its window and local query rows (its
// observation reads the last slice's queries).
int32_t slice_rows(const ArenaInputs& in);

// Rows the output head runs at once with logits_all: slice_rows(), but no more rows of logits
// than one binding of the backend holds (a policy's slices may be longer), at least 1.
int32_t output_rows(const ArenaInputs& in);

// Rows the feed-forward block runs at once, which its gate and up activations are planned
// for: n_batch_rows (0: WT_BATCH_ROWS_DEFAULT), at most slice_rows(), and at most what one
// binding of the backend holds of them (a device with a small maxStorageBufferRange); at
// least 1. A long prompt's [n, n_ff] gate and up are most of its activations (Qwen2.5-0.5B at
// 32k tokens: 1216 of 1696 MiB), and every op of the block works row by row, so slices of
// them give the same result for a fraction of the memory (a pruned prompt's pass too).
int32_t ffn_rows(const ArenaInputs& in);

// The steps in which a context lowers the default n_batch_rows where its arena would not fit
// (fit_batch_rows, context_budget.h) and the planner does the same (platform/planner.cpp).
// Under 64 rows a GPU runs the kernels of few rows (CUDA: not the tensor cores).
inline constexpr int32_t kBatchRowsStep = 64;

// The largest multiple of kBatchRowsStep below `below` (at least one step) for which
// fits(rows) holds, by bisection: fits must hold for every smaller multiple where it holds
// for one (an arena grows with its rows). 0 when none does, or below <= one step.
int32_t largest_batch_rows(int32_t below, const std::function<bool(int32_t rows)>& fits);

// The arena's bytes by part (each part the sum of its 64-byte aligned slices).
struct ArenaBytes {
  uint64_t activations_bytes = 0;  // x, k, v for pass_rows(); xn, q, attn for slice_rows(); gate, up for ffn_rows()
  uint64_t logits_bytes = 0;       // [n_logit_rows, n_vocab]
  uint64_t kv_bytes = 0;           // K and V of kv_type, kv_rows[l] rows in every layer (paged: one
                                   // layer of n_ctx rows, the staging of multi-row passes)
  uint64_t index_bytes = 0;        // positions, token ids, rope divisors and angles, row scratch, KV positions,
                                   // the transfer staging
  uint64_t prune_bytes = 0;        // scores, pooled, top-k staging, anchors, key bounds, ranking rows
  uint64_t prune_host_bytes = 0;   // of prune_bytes, the host part's: all but the anchors and key bounds
  uint64_t workspace_bytes = 0;    // the largest op workspace of a full-context prefill
  uint64_t total_bytes = 0;        // what the context allocates (stats.arena_bytes): both parts
  uint64_t host_bytes = 0;         // of total_bytes, the host part: logits_bytes, index_bytes,
                                   // and the scores, top-k staging and ranking rows of prune_bytes
  // Outside the arena: the pager's pools (0 without the pager).
  uint64_t pager_device_bytes = 0; // device pool: kv_device_blocks blocks (in place: every block)
  uint64_t pager_host_bytes = 0;   // pinned host pool: every block of every layer (in place: 0)
  uint64_t all_bytes() const { return total_bytes + pager_device_bytes + pager_host_bytes; }
};

// The placed views (only with a base address).
struct ArenaViews {
  ContextActivations act;
  std::vector<Tensor> k_cache, v_cache;  // per layer [kv_rows[l], n_head_kv, head_dim] (paged: one
                                         // of n_ctx rows, the staging)
  int32_t* positions = nullptr;   // [n_ctx]
  int32_t* token_ids = nullptr;   // [n_ctx]
  float* rope_divisors = nullptr; // [n_rot/2 + 1]
  double* rope_freqs = nullptr;   // [n_rot/2] rope_freqs(): made once, read by the host
  float* rope_angles = nullptr;   // [n_rot] a one-row pass's RopeOp::angles, made once per pass
  double* rope_freqs_swa = nullptr;  // the same two for sliding-window layers' rope (gemma3), else null
  float* rope_angles_swa = nullptr;
  int32_t* row_tmp = nullptr;     // [n_ctx]
  int32_t* tok_tmp = nullptr;     // [n_ctx]
  int32_t* kv_pos = nullptr;      // [n_layer][n_head_kv][the layer's kv_rows (n_ctx without)]
  std::vector<size_t> kv_pos_at;  // [n_layer] where each layer's rows begin in kv_pos
  int32_t* origin = nullptr;      // [n_ctx] a re-indexed prompt's original positions
  // Where the backend's device part has no host address (BackendCaps::device_only_unmapped):
  // pinned staging for what the host moves to or from it, a chunk of at most kTransferBytes
  // at a time (a layer's KV, the anchors, if smaller). Else null: the host reaches the device
  // part directly.
  char* transfer = nullptr;
  size_t transfer_bytes = 0;
  float* scores = nullptr;        // [score_capacity]
  float* pooled = nullptr;        // [score_capacity]
  float* topk_in = nullptr;       // [score_capacity] or null (backend reads host pointers)
  size_t score_capacity = 0;
  float* anchors = nullptr;       // [n_layer][2][n_head_kv][head_dim]
  uint16_t* key_bounds = nullptr;  // f16 [n_layer - first layer][ceil(n_ctx / key_bounds_block)][n_head_kv][2 * head_dim]
  float* ranking = nullptr;       // [n_layer + 1][n_ctx] with record_ranking
  int32_t* attended = nullptr;    // [n_layer][n_ctx] with record_ranking: a decode step's key rows
  size_t workspace_offset = 0;    // from the base
};

// The largest chunk of the transfer staging (ArenaViews::transfer).
inline constexpr size_t kTransferBytes = size_t{4} << 20;
// Token Filtering's anchors: [n_layer][2][n_head_kv][head_dim] f32.
size_t anchor_bytes(const Hparams& hp);

struct PagedKvParams;
// The pager's shape for these inputs (sync_swaps left false).
PagedKvParams paged_kv_params(const ArenaInputs& in);
// Whether a pager works in place (paged_kv.h): asked for, not told to copy, on unified memory
// (the context asks its backend; the planner, the board).
inline bool pager_in_place(int32_t kv_device_blocks, bool copy, bool unified_memory) {
  return kv_device_blocks > 0 && !copy && unified_memory;
}

// Where the two parts of a context's arena begin (both null: count only).
struct ArenaBases {
  char* device = nullptr;  // total_bytes - host_bytes, MemoryKind::device_only (Buffer::device)
  char* host = nullptr;    // host_bytes, MemoryKind::host_pinned
};

// Counts the arena (null bases, views ignored) or places it at the bases into *views.
// The same code for both, so the two passes cannot disagree.
ArenaBytes lay_out_arena(const ArenaInputs& in, ArenaBases bases, ArenaViews* views);

// wt_context_params.kv_type as the cache's element type (a value the API accepted).
inline DType kv_dtype(wt_kv_type t) {
  return t == WT_KV_F16 ? DType::f16 : t == WT_KV_Q8_0 ? DType::q8_0 : DType::f32;
}

// The name the API's users give the type (f32, f16, q8_0: the tools' --kv-type).
inline const char* kv_type_name(DType t) {
  return t == DType::f16 ? "f16" : t == DType::q8_0 ? "q8_0" : t == DType::f32 ? "f32" : dtype_name(t);
}

// Bytes of one token's K and V in one layer (all KV heads) in a cache of kv_type.
uint64_t kv_row_bytes(const Hparams& hp, DType kv_type);

// f16 elements of one layer's key bounds (KeyBoundsOp) over n_ctx rows in blocks of `block`.
size_t key_bounds_halves(const Hparams& hp, int64_t n_ctx, int32_t block);
// The key bounds of planned layer `layer` (the model's layer less the policy's
// key_bounds_first_layer()) over n_rows rows: [ceil(n_rows / block), n_head_kv, 2 * head_dim]
// at `base` (ArenaViews::key_bounds, or null for sizing) with n_ctx rows planned per layer.
Tensor key_bounds_tensor(const Hparams& hp, uint16_t* base, int32_t layer, int64_t n_rows, int64_t n_ctx,
                         int32_t block);

// Whether a context can keep its KV cache as kv_type: a KV type (is_kv_type), rows that
// q8_0's blocks of 32 divide, and a type the backend's kernels read (`kv_types`, bits of
// BackendCaps::kv_types, of the backend named `backend`; the pager moves blocks of any type
// as bytes). The one check of wt_context_create and the planner.
Status check_kv_type(const Hparams& hp, DType kv_type, uint64_t kv_types, const char* backend);

// The KV rows a layer of a full-KV context keeps: n_ctx, or for a sliding-window layer
// (gemma3) the window less one (the keys a new row sees before its own) twice over and the
// rows of one pass (n_batch_rows resolved, at least 3: slice_rows), so that the cache slides
// its last window - 1 rows to its start without the copy overlapping (Context::slide_kv).
int32_t sliding_kv_rows(const Hparams& hp, int32_t layer, int32_t n_ctx, int32_t n_batch_rows);

// Whether a context of a model with sliding-window layers (gemma3) can be made: they keep
// their last rows in order and read them by position, so no pruning method and no pager, and
// only a backend with the kernels they need (`gemma_kernels`: all three today). The one check of
// wt_context_create and the planner; WT_ERR_UNSUPPORTED naming what is refused.
Status check_sliding_window(const Hparams& hp, bool pruned, bool paged, bool gemma_kernels, const char* backend);

}  // namespace wt
