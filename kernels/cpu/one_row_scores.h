// One query row's softmax scores over the keys it sees: window_scores with a window of one
// row (a decode step scoring its own keys, decode_topk), computed by the attention kernel's
// decode machinery (attention_impl.h), which reads the cache in place and once. Internal to
// kernels/cpu: window_scores.cpp calls it; attention.cpp defines it per ISA build.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/tensor.h"
#include "thread_ctx.h"
#include "vector_isa.h"

namespace wt::cpu {

// dst[n_head][n_cols]: exp(z - m) / l of z = scale * q.k for keys 0..n_visible of k
// [n_keys, n_head_kv, hd] (f32, f16 or q8_0), 0 from n_visible on; q's last row is the query.
void one_row_scores(VecIsa isa, const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                    int64_t n_visible, float scale, void* workspace);
size_t one_row_scores_workspace_bytes(int64_t n_head, int n_threads);

}  // namespace wt::cpu
