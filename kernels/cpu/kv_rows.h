// Rows of a KV cache (f32, f16 or q8_0: kernels/dtype.h is_kv_type) from f32, for the
// kernels that store into the cache (copy_rows, gather_rows). Reading one back as f32 is
// quant.h's dequantize (block and window scores); attention converts in its own
// ISA-specific loops to the same values (attention_impl.h).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace wt::cpu {

// n f32 values into one cache row of type t: f32 copied, f16 rounded to nearest even, q8_0
// quantized per block of 32 as ggml does (quantize_q8_0; n a multiple of 32).
void kv_store_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace wt::cpu
