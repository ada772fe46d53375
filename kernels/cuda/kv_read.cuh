// The KV cache's element types as the CUDA kernels that read a cache see them (attention,
// window_scores, block_scores, key_bounds): f32, f16 or q8_0 (kernels/dtype.h is_kv_type; the layouts of
// kernels/cpu/quant.h: q8_0 is 34-byte blocks of an f16 scale d and 32 int8 q, x = q * d).
// A kernel templated on a reader gets element d of a row as the f32 value the CPU reads
// (kernels/cpu/attention_impl.h converts to the same values), so the arithmetic after the
// load is the f32 kernel's. Rows are addressed by bytes (RowView's strides), so a q8_0 row
// may start on any even byte.
#pragma once

#include <cuda_fp16.h>

#include <string>

#include "common.cuh"
#include "warp.cuh"

namespace wt::cuda {

// at(row, d): element d of a row. kVec4: load4(row, d) reads elements d..d+3 (d a multiple
// of 4) in one load, where kv_rows_vec4 says the rows allow it. Host and device code: the
// readers and kv_store.cuh's stores are checked on the CPU too (tests/cuda_host).
struct KvF32 {
  static constexpr bool kVec4 = true;
  __host__ __device__ static float at(const char* row, int d) { return reinterpret_cast<const float*>(row)[d]; }
  __host__ __device__ static float4 load4(const char* row, int d) {
    return *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(row) + d);
  }
};

struct KvF16 {
  static constexpr bool kVec4 = true;
  __host__ __device__ static float at(const char* row, int d) {
    return __half2float(reinterpret_cast<const __half*>(row)[d]);
  }
  __host__ __device__ static float4 load4(const char* row, int d) {
    const uint2 w = *reinterpret_cast<const uint2*>(reinterpret_cast<const __half*>(row) + d);
    // The words' bits as halves through __half_raw, not a pointer cast (strict aliasing in
    // host builds).
    auto half_at = [](unsigned int word, int shift) {
      __half_raw r;
      r.x = static_cast<unsigned short>(word >> shift);
      return __half2float(__half(r));
    };
    return make_float4(half_at(w.x, 0), half_at(w.x, 16), half_at(w.y, 0), half_at(w.y, 16));
  }
};

struct KvQ8 {  // the weight decoder's layout (common.cuh WQ8_0); a value at a time
  static constexpr bool kVec4 = false;
  __host__ __device__ static float at(const char* row, int d) { return WQ8_0::load1(reinterpret_cast<const uint8_t*>(row), d); }
  __host__ __device__ static float4 load4(const char* row, int d) {
    return make_float4(at(row, d), at(row, d + 1), at(row, d + 2), at(row, d + 3));
  }
};

// Whether rows of a cache of type t with head_dim hd can be read by load4: whole groups of 4
// per row, each group one aligned load (16 bytes of f32, 8 of f16).
inline bool kv_rows_vec4(DType t, int64_t hd, const RowView& v) {
  const size_t align = t == DType::f32 ? 16 : t == DType::f16 ? 8 : 0;
  return align != 0 && hd % 4 == 0 && reinterpret_cast<uintptr_t>(v.data) % align == 0 && v.nb1 % align == 0 &&
         v.nb2 % align == 0;
}

// Row (i1, i2) of a KV tensor, as bytes.
__host__ __device__ __forceinline__ const char* kv_row(const RowView& v, int64_t i1, int64_t i2) {
  return v.data + static_cast<size_t>(i1) * v.nb1 + static_cast<size_t>(i2) * v.nb2;
}

// Calls f(reader) with the reader of the cache's type; validate_op admits only KV types, so
// anything else is a direct call that names the op.
template <typename F>
Status with_kv_reader(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f(KvF32{});
    case DType::f16: return f(KvF16{});
    case DType::q8_0: return f(KvQ8{});
    default:
      return error(WT_ERR_UNSUPPORTED, std::string("cuda: ") + op + ": a KV cache of " + dtype_name(t) +
                                           " (the cache is f32, f16 or q8_0)");
  }
}

}  // namespace wt::cuda
