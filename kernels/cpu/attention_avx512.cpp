// attention_impl.h compiled for avx512; attention.cpp calls it when the CPU has it.
#include "immintrin_quiet.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fast_math.h"
#include "ops_cpu.h"
#include "quant.h"

// The target is set after the includes so inline functions of the headers stay baseline
// code (the linker could otherwise pick a avx512 copy for the portable parts).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#endif

namespace wt::cpu::attn_avx512 {
#define WT_ATTN_AVX2 1  // the target has AVX2 and F16C: f16 and q8_0 KV convert eight values at a time
#define WT_ATTN_AVX512 1  // 32 vector registers: decode handles 4 query rows at a time
#include "attention_impl.h"
#undef WT_ATTN_AVX2
#undef WT_ATTN_AVX512

void prefill(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k, const Tensor& v,
             int32_t pos0, float scale, void* workspace, const int32_t* skip, int32_t window) {
  prefill_impl(tc, dst, q, k, v, pos0, scale, workspace, skip, window);
}

void decode(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k, const Tensor& v,
            int32_t pos0, float scale, void* workspace, const int32_t* ids, int32_t n_ids, int32_t window) {
  decode_impl(tc, dst, q, k, v, pos0, scale, workspace, ids, n_ids, window);
}

void one_row_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k, int64_t n_vis,
                    float scale, void* workspace) {
  one_row_scores_impl(tc, dst, q, k, n_vis, scale, workspace);
}

}  // namespace wt::cpu::attn_avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
