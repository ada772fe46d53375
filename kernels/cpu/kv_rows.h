// Rows of a KV cache (f32, f16 or q8_0: kernels/dtype.h is_kv_type) to and from f32, for the
// kernels that store into the cache or read it off the hot path (copy_rows, gather_rows,
// block_scores, window_scores). Attention converts in its own ISA-specific loops to the
// same values (attention_impl.h).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace wt::cpu {

// n f32 values into one cache row of type t: f32 copied, f16 rounded to nearest even, q8_0
// quantized per block of 32 as ggml does (quantize_q8_0; n a multiple of 32).
void kv_store_row(DType t, const float* src, void* dst, int64_t n);

// One cache row of type t (n values) as f32: q8_0 as f16_to_f32(d) * q.
void kv_load_row(DType t, const void* src, float* dst, int64_t n);

}  // namespace wt::cpu
