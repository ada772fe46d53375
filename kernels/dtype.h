// Element types of tensors. Values are the GGUF/ggml type ids so that a file's type field
// maps straight onto DType. Quantized types store blocks of block_elems elements.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wt {

enum class DType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  bf16 = 30,
};

struct DTypeTraits {
  DType type;
  const char* name;    // "Q4_1"
  int64_t block_elems; // elements per block (1 for plain types)
  size_t block_bytes;  // bytes per block
};

// Traits for a raw ggml type id, or nullptr if Whittle does not support that type.
const DTypeTraits* dtype_traits(uint32_t ggml_type);
inline const DTypeTraits& traits(DType t) { return *dtype_traits(static_cast<uint32_t>(t)); }
const char* dtype_name(DType t);

// Bytes of a row of n elements; false if n is not a multiple of the block size or the
// result overflows.
bool dtype_row_bytes(DType t, int64_t n, size_t* out_bytes);

// The element types a KV cache holds (wt_context_params.kv_type): f32, f16, and q8_0 (blocks
// of 32 int8 values with an f16 scale: rows of a multiple of 32 values).
inline bool is_kv_type(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::q8_0; }

}  // namespace wt
