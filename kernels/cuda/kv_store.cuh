// Storing rows into a KV cache of f32, f16 or q8_0 (copy_rows, gather_rows), as the CPU's
// kv_store_row does (kernels/cpu/kv_rows.h): f32 rows copied, rounded to f16 (nearest even)
// or quantized to q8_0 per block of 32 (kernels/cpu/quant.cpp quantize_q8_0: d = max|x| /
// 127 stored as f16, q = round(x / d) half away from zero, through the f32 reciprocal of d);
// a cache's rows into a cache of its own type as bytes. A thread stores one unit of a row at
// a time: an element (f32, f16), a block of 32 (q8_0), or two bytes (every row of a cache
// type spans an even number of bytes from an even address: 4 d, 2 d, 34 d / 32).
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "common.cuh"

namespace wt::cuda {

enum class KvStore { f32, f16, q8_0, bytes };

// The store from src rows of type src into dst rows of type dst (validate_op has admitted
// only these pairs: the same type, or f32 into any cache type).
inline KvStore kv_store_of(DType dst, DType src) {
  if (dst == src && dst != DType::f32) return KvStore::bytes;
  if (dst == DType::f16) return KvStore::f16;
  if (dst == DType::q8_0) return KvStore::q8_0;
  return KvStore::f32;
}

// Units of a row of d elements of type t.
inline int64_t kv_store_units(KvStore s, DType t, int64_t d) {
  switch (s) {
    case KvStore::q8_0: return d / 32;
    case KvStore::bytes: {
      size_t bytes = 0;
      dtype_row_bytes(t, d, &bytes);
      return static_cast<int64_t>(bytes / 2);
    }
    default: return d;
  }
}

// Unit u of a row: from src (null: zeros) into dst.
template <KvStore S>
__host__ __device__ __forceinline__ void kv_store_unit(const char* src, char* dst, int64_t u) {
  if constexpr (S == KvStore::f32) {
    reinterpret_cast<float*>(dst)[u] = src ? reinterpret_cast<const float*>(src)[u] : 0.0f;
  } else if constexpr (S == KvStore::f16) {
    reinterpret_cast<__half*>(dst)[u] = __float2half_rn(src ? reinterpret_cast<const float*>(src)[u] : 0.0f);
  } else if constexpr (S == KvStore::bytes) {
    reinterpret_cast<uint16_t*>(dst)[u] = src ? reinterpret_cast<const uint16_t*>(src)[u] : uint16_t{0};
  } else {
    uint8_t* blk = reinterpret_cast<uint8_t*>(dst) + u * 34;
    const float* x = src ? reinterpret_cast<const float*>(src) + u * 32 : nullptr;
    float amax = 0.0f;
    if (x)
      for (int j = 0; j < 32; ++j) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __half dh = __float2half_rn(d);
    const uint16_t bits = __half_as_ushort(dh);
    blk[0] = static_cast<uint8_t>(bits & 0xFF);
    blk[1] = static_cast<uint8_t>(bits >> 8);
    for (int j = 0; j < 32; ++j) {
      // |q| <= 127: x / d within [-127, 127]. A NaN value (or an inf one, times id = 0) stores
      // 0, as the device's conversion and the CPU's lround give; converting NaN to int is
      // undefined in the host build (tests/cuda_host).
      const float r = x ? roundf(x[j] * id) : 0.0f;
      const int q = r == r ? static_cast<int>(r) : 0;
      blk[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

}  // namespace wt::cuda
