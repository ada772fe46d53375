// The CPU kernels of kernels/ops.def other than matmul (matmul.h). Each is called by every
// worker of a launch with the same arguments and writes a disjoint part of dst. These are
// the readable references the Vulkan and CUDA kernels are tested against. Shapes are
// written outermost first (kernels/tensor.h): x[n, heads, hd] has ne = {hd, heads, n}.
#pragma once

#include <cstdint>

#include "kernels/ops.h"
#include "kernels/tensor.h"
#include "thread_ctx.h"

namespace wt::cpu {

// dst[n, d] f32 = rows ids[0..n) of table [n_vocab, d].
void embed(const ThreadCtx& tc, const Tensor& dst, const Tensor& table, const int32_t* ids, float scale = 1.0f);

// dst[n, d] = x[n, d] / sqrt(mean(x^2) + eps) * w[d]. dst may alias x.
// res non-empty: x += res first (RmsnormOp's residual; dst may alias res).
void rmsnorm(const ThreadCtx& tc, const Tensor& dst, const Tensor& x, const Tensor& w, float eps, const Tensor& res);

// dst[n, d] = a[n, d] + b; b is [n, d] or a single row [d] broadcast to every row.
void add(const ThreadCtx& tc, const Tensor& dst, const Tensor& a, const Tensor& b);

struct RopeParams {
  int32_t n_rot;                   // leading dims of each head that rotate
  bool neox;                       // pairs (i, i + n_rot/2) instead of (2i, 2i+1)
  const RopeOp* op;                // its angles' parameters (rope_angles)
  const double* freqs;             // [n_rot/2]: rope_freqs(*op), once per call
  const float* angles = nullptr;   // RopeOp::angles: row r's at angles + r * angles_stride
  int64_t angles_stride = 0;       // floats
};
// x[n, n_heads, hd] rotated in place; row r is at position positions[r]. x2 (optional:
// empty or [n, n_heads2, hd]) rotated with the same angles, made once per row (rope_angles)
// unless given.
void rope(const ThreadCtx& tc, const Tensor& x, const Tensor& x2, const int32_t* positions, const RopeParams& p);

// Causal GQA attention, flash-style (no n x n matrix). q/dst: [n, n_head, hd], k/v:
// [>= pos0 + n, n_head_kv, hd]. Query row r sits at position pos0 + r and attends keys
// 0..pos0 + r. workspace: attention_workspace_bytes().
// skip (optional, [n]): rows flagged nonzero get a zero output and cost nothing (Token
// Filtering); the other rows get exactly the bits they would get without skip.
// window > 0: row r sees only its last `window` keys, pos0 + r - window + 1 .. pos0 + r
// (a sliding-window layer's).
void attention_prefill(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                       const Tensor& v, int32_t pos0, float scale, void* workspace,
                       const int32_t* skip = nullptr, int32_t window = 0);
// One query row (n = 1) at position pos0; splits keys across workers and merges.
// key_ids (optional): attend only cache rows key_ids[0..n_key_ids) (ascending; SlimInfer's
// active blocks) instead of 0..pos0, which is then ignored. No keys at all gives 0.
// window > 0 (without key_ids): keys pos0 - window + 1 .. pos0 only.
void attention_decode(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                      const Tensor& v, int32_t pos0, float scale, void* workspace,
                      const int32_t* key_ids = nullptr, int32_t n_key_ids = 0, int32_t window = 0);
size_t attention_workspace_bytes(int64_t head_dim, int64_t n_head, int64_t n_head_kv, int n_threads);
// Tests: run attention on "base", "avx2" or "avx512" (false if unknown or not on this CPU);
// nullptr restores the run-time choice.
bool set_attention_isa_for_testing(const char* name);
// Tests: the base build's conversion of an f16 KV cache to f32 (attention_impl.h's
// kv_to_f32: integer steps on x86, fcvtl on aarch64), n values.
void attention_base_f16_to_f32_for_testing(const uint16_t* src, float* dst, int64_t n);

// dst[n, f] = silu(gate) * up (gelu: gelu(gate) * up, gelu's tanh form). dst may alias gate.
void swiglu(const ThreadCtx& tc, const Tensor& dst, const Tensor& gate, const Tensor& up, bool gelu = false);

// dst rows [row0, row0 + n) = src rows [0, n) (f32); dst f32 or f16 (rounded to nearest even).
void copy_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, int64_t row0);

// Index of the largest value of row 0 of x (the first on ties). Run by worker 0 only.
int32_t argmax(const Tensor& x);

// ---- KV-cache pruning (ops.def: window_scores .. kv_similarity).

struct WindowScoresParams {
  int32_t window;     // W: the last W rows of q are the observation window
  bool softmax;       // causal softmax probabilities (else raw q.k, no scale or mask)
  bool per_query;     // one output row per window query (else their sum)
  int32_t n_visible;  // ops.def i2: key rows the last query sees (its row + 1); <= 0: all of k
  float scale;        // softmax mode: z = q.k * scale
};
// dst[n_out, n_head, n_cols]: how much each of the last W queries of q[n, n_head, hd]
// attends to key columns 0..n_cols of k[n_keys, n_head_kv, hd] (SnapKV-style observation
// window). The softmax runs over every key the query sees, scored or not, so scores of a
// column prefix are the same numbers a full-width call would give.
// workspace: window_scores_workspace_bytes().
void window_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                   const WindowScoresParams& p, void* workspace);
size_t window_scores_workspace_bytes(int64_t head_dim, int64_t n_head, int32_t window, int n_threads);
// Tests: run window_scores on "base", "avx2" or "avx512" (false if unknown or not on this
// CPU); nullptr restores the run-time choice. The three builds differ in vector width.
bool set_window_scores_isa_for_testing(const char* name);

// dst[rows, n] = x pooled along the row with an odd kernel, stride 1 and kernel/2 padding (same
// length). Average pooling counts the padding as zeros (divisor always `kernel`, as
// PyTorch's avg_pool1d); max pooling ignores it. Smooths scores so that a kept key keeps
// its neighbours. dst must not alias x.
void pool1d(const ThreadCtx& tc, const Tensor& dst, const Tensor& x, int32_t kernel, bool max);

// For each row r of x[rows, n]: the indices of its k largest values (ties: lower index
// first), ascending, to out[r * k .. r * k + k). k > n fills the slots past n with -1.
// workspace: topk_workspace_bytes().
void topk(const ThreadCtx& tc, const Tensor& x, int32_t k, int32_t* out, void* workspace);
size_t topk_workspace_bytes(int64_t n, int n_threads);

// Selected rows of src[n_src, heads, d] (or a 2-D [n_src, d], heads = 1) into dst: shared
// (one list for every head, dst row r = src row ids[r]) or per head (dst[r, h] =
// src[ids[h * n_sel + r], h], n_sel = n_ids / heads) — compacting a pruned KV cache.
// dst must not alias src.
void gather_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, const int32_t* ids, int32_t n_ids,
                 bool per_head);

struct BlockScoresParams {
  int32_t block;         // key rows per block (the last block may be shorter)
  int32_t unit;          // key rows per unit; units never straddle a block edge
  int32_t n_last;        // qbar = mean of the last n_last rows of q (<= 0 or > n: all rows)
  const int32_t* ids;    // optional: key row r is row ids[r] of k
  int32_t n_ids;
};
// dst[n_blocks] SlimInfer block scores: max over the block's units of
// (1 / n_head) * sum_h |qbar_h . mean(unit keys of kv head h / G)|.
// workspace: block_scores_workspace_bytes().
void block_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                  const BlockScoresParams& p, void* workspace);
size_t block_scores_workspace_bytes(int64_t head_dim, int64_t n_head, int n_threads);

// dst[n_blocks, n_head_kv, 2 * hd] of f16: per block of `block` rows of k (any KV type) and
// KV head, the elementwise min (first hd) and max of its keys, rounded outward
// (kernels/f16_bound.h). workspace: key_bounds_workspace_bytes(). key_ids (optional): key row
// r is row key_ids[r] of k, for r < n_keys.
void key_bounds(const ThreadCtx& tc, const Tensor& dst, const Tensor& k, int32_t block, void* workspace,
                const int32_t* key_ids = nullptr, int32_t n_keys = 0);
size_t key_bounds_workspace_bytes(int64_t head_dim, int n_threads);

// dst[n_blocks]: log sum over heads of the softmax over blocks of the upper bound
// scale * sum_d max(q_d lo_d, q_d hi_d) of the last query row against bounds[b, h / G].
// Every ISA build gives the same bits. workspace: bound_scores_workspace_bytes().
void bound_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& bounds, float scale,
                  void* workspace);
size_t bound_scores_workspace_bytes(int64_t head_dim, int64_t n_head, int64_t n_head_kv, int64_t n_blocks,
                                    int n_threads);
// Tests: run bound_scores on "base", "avx2" or "avx512" (false if unknown or not on this CPU;
// nullptr: the run-time choice again).
bool set_bound_scores_isa_for_testing(const char* name);

// dst[n, n_head_kv, 2]: per row t of k and v [n, n_head_kv, hd], in order, the cosine of
// k_t and v_t with running anchors (anchors[2, n_head_kv, hd]: k then v), then
// A = decay * A + (1 - decay) * x. An all-zero anchor (the state before the first row)
// takes x as it is, so the EMA does not start biased toward 0; its cos, and a zero x's,
// is 0. The anchors are updated in place so the state carries over to the next call
// (chunked prefill, then decode).
void kv_similarity(const ThreadCtx& tc, const Tensor& dst, const Tensor& k, const Tensor& v, const Tensor& anchors,
                   float decay);

}  // namespace wt::cpu
