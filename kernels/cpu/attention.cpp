#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fast_math.h"
#include "one_row_scores.h"
#include "ops_cpu.h"
#include "quant.h"
#include "vector_isa.h"
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace wt::cpu {
namespace attn_base {
#if defined(__aarch64__)
#define WT_ATTN_NEON 1  // f16 KV converts four values at a time (fcvtl)
#endif
#include "attention_impl.h"
#undef WT_ATTN_NEON
}  // namespace attn_base

#if defined(__x86_64__)
namespace attn_avx2 {
void prefill(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int32_t, float, void*,
             const int32_t*, int32_t);
void decode(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int32_t, float, void*,
            const int32_t*, int32_t, int32_t);
void one_row_scores(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, int64_t, float, void*);
}  // namespace attn_avx2
namespace attn_avx512 {
void prefill(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int32_t, float, void*,
             const int32_t*, int32_t);
void decode(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int32_t, float, void*,
            const int32_t*, int32_t, int32_t);
void one_row_scores(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, int64_t, float, void*);
}  // namespace attn_avx512
#endif

namespace {
IsaChoice g_isa;  // a test's choice
}  // namespace

bool set_attention_isa_for_testing(const char* name) { return g_isa.set(name); }

void attention_base_f16_to_f32_for_testing(const uint16_t* src, float* dst, int64_t n) {
  attn_base::kv_to_f32(src, dst, n);
}

size_t attention_workspace_bytes(int64_t head_dim, int64_t n_head, int64_t n_head_kv, int n_threads) {
  const int64_t group = n_head / n_head_kv;
  const int64_t max_units = 4 * n_threads + n_head_kv;
  return sizeof(attn_base::TileScratch) * static_cast<size_t>(n_threads) +
         sizeof(float) * static_cast<size_t>(max_units * group * (head_dim + 2));
}

size_t one_row_scores_workspace_bytes(int64_t n_head, int n_threads) {
  // attn_base::one_row_chunks is at most 4 nth chunks per head.
  return sizeof(attn_base::TileScratch) * static_cast<size_t>(n_threads) +
         sizeof(float) * static_cast<size_t>(n_head * 4 * n_threads * 2);
}

void one_row_scores(VecIsa isa, const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                    int64_t n_visible, float scale, void* workspace) {
#if defined(__x86_64__)
  if (isa == VecIsa::avx512) return attn_avx512::one_row_scores(tc, dst, q, k, n_visible, scale, workspace);
  if (isa == VecIsa::avx2) return attn_avx2::one_row_scores(tc, dst, q, k, n_visible, scale, workspace);
#endif
  (void)isa;
  attn_base::one_row_scores_impl(tc, dst, q, k, n_visible, scale, workspace);
}

void attention_prefill(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                       const Tensor& v, int32_t pos0, float scale, void* workspace, const int32_t* skip,
                       int32_t window) {
#if defined(__x86_64__)
  const VecIsa isa = g_isa.get();
  if (isa == VecIsa::avx512) return attn_avx512::prefill(tc, dst, q, k, v, pos0, scale, workspace, skip, window);
  if (isa == VecIsa::avx2) return attn_avx2::prefill(tc, dst, q, k, v, pos0, scale, workspace, skip, window);
#endif
  attn_base::prefill_impl(tc, dst, q, k, v, pos0, scale, workspace, skip, window);
}

void attention_decode(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                      const Tensor& v, int32_t pos0, float scale, void* workspace, const int32_t* key_ids,
                      int32_t n_key_ids, int32_t window) {
#if defined(__x86_64__)
  const VecIsa isa = g_isa.get();
  if (isa == VecIsa::avx512)
    return attn_avx512::decode(tc, dst, q, k, v, pos0, scale, workspace, key_ids, n_key_ids, window);
  if (isa == VecIsa::avx2) return attn_avx2::decode(tc, dst, q, k, v, pos0, scale, workspace, key_ids, n_key_ids, window);
#endif
  attn_base::decode_impl(tc, dst, q, k, v, pos0, scale, workspace, key_ids, n_key_ids, window);
}

}  // namespace wt::cpu
