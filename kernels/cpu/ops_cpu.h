// The CPU kernels of kernels/ops.def other than matmul (matmul.h). Each is called by every
// worker of a launch with the same arguments and writes a disjoint part of dst. These are
// the readable references the Vulkan and CUDA kernels are tested against.
#pragma once

#include <cstdint>

#include "../tensor.h"
#include "thread_ctx.h"

namespace wt::cpu {

// dst[n, d] f32 = rows ids[0..n) of table [d, n_vocab].
void embed(const ThreadCtx& tc, const Tensor& dst, const Tensor& table, const int32_t* ids);

// dst[n, d] = x[n, d] / sqrt(mean(x^2) + eps) * w[d]. dst may alias x.
void rmsnorm(const ThreadCtx& tc, const Tensor& dst, const Tensor& x, const Tensor& w, float eps);

// dst[n, d] = a[n, d] + b; b is [n, d] or a single row [d] broadcast to every row.
void add(const ThreadCtx& tc, const Tensor& dst, const Tensor& a, const Tensor& b);

struct RopeParams {
  int32_t n_rot;                   // leading dims of each head that rotate
  bool neox;                       // pairs (i, i + n_rot/2) instead of (2i, 2i+1)
  float theta_base;
  float position_scale;            // linear scaling: 1 / factor (1 otherwise)
  const float* freq_divisors;      // [n_rot/2] or nullptr (llama3 scaling)
};
// x[hd, n_heads, n] rotated in place; row r is at position positions[r].
void rope(const ThreadCtx& tc, const Tensor& x, const int32_t* positions, const RopeParams& p);

// Causal GQA attention, flash-style (no n x n matrix). q/dst: [hd, n_head, n], k/v:
// [hd, n_head_kv, >= pos0 + n]. Query row r sits at position pos0 + r and attends keys
// 0..pos0 + r. workspace: attention_workspace_bytes().
void attention_prefill(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                       const Tensor& v, int32_t pos0, float scale, void* workspace);
// One query row (n = 1) at position pos0; splits keys across workers and merges.
void attention_decode(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                      const Tensor& v, int32_t pos0, float scale, void* workspace);
size_t attention_workspace_bytes(int64_t head_dim, int64_t n_head, int64_t n_head_kv, int n_threads);

// dst[n, f] = silu(gate) * up. dst may alias gate.
void swiglu(const ThreadCtx& tc, const Tensor& dst, const Tensor& gate, const Tensor& up);

// dst rows [row0, row0 + n) = src rows [0, n).
void copy_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, int64_t row0);

// Index of the largest value of row 0 of x (the first on ties). Run by worker 0 only.
int32_t argmax(const Tensor& x);

}  // namespace wt::cpu
