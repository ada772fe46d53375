// Helpers shared by the CUDA op kernels: host-side grid sizes and the weight types this
// backend decodes (validate_op, kernels/ops.h, has checked every call's arguments), warp
// and block reductions, and the weight decoders (block layouts of kernels/cpu/quant.h,
// the same as kernels/vulkan/dequant.glsl) that embed and matmul read.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/dtype.h"
#include "launch.cuh"
#include "warp.cuh"  // warp_sum, warp_max

namespace wt::cuda {

// ---- host side --------------------------------------------------------------------------

constexpr int kBlock = 256;  // threads of the 1-D kernels (a multiple of the warp size)

// Blocks for a grid-stride loop over n items: enough to fill the device, never more than
// the items need (the loops cover the rest).
inline unsigned grid_for(int64_t n, const Launch& l, int block = kBlock) {
  const int64_t want = (n + block - 1) / block;
  const int64_t cap = static_cast<int64_t>(l.sm_count > 0 ? l.sm_count : 16) * 32;
  return static_cast<unsigned>(want < cap ? want : cap);
}

// Whether embed and matmul decode weights of type t (backends/weight_types.cpp lists the same).
inline bool weight_type_ok(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::q8_0 || t == DType::q4_0 ||
         t == DType::q4_1 || t == DType::q5_0 || t == DType::q5_1 || t == DType::q4_k || t == DType::q5_k ||
         t == DType::q6_k;
}

// The refusal of a weight type no decoder below reads (the model loader and the planner
// refuse such a model first, by backends/weight_types.cpp; this is a direct op call).
inline Status unread_weight_type(const char* op, DType t) {
  return error(WT_ERR_UNSUPPORTED, std::string("cuda: ") + op + " cannot decode " + dtype_name(t) +
                                       " weights (backends/weight_types.cpp lists the types CUDA reads)");
}

// ---- device side ------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T* row_at(void* base, int64_t r, size_t nb) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + r * static_cast<int64_t>(nb));
}
template <typename T>
__device__ __forceinline__ const T* row_at(const void* base, int64_t r, size_t nb) {
  return reinterpret_cast<const T*>(static_cast<const char*>(base) + r * static_cast<int64_t>(nb));
}

// Sum (kMax: maximum) of v over the block (blockDim.x a multiple of 32, <= 1024); every
// thread gets it.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v) {
  __shared__ float part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // part may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int n_warps = static_cast<int>(blockDim.x >> 5);
    float s = lane < n_warps ? part[lane] : kMax ? -INFINITY : 0.0f;
    s = kMax ? warp_max(s) : warp_sum(s);
    if (lane == 0) part[0] = s;
  }
  __syncthreads();
  return part[0];
}
__device__ __forceinline__ float block_sum(float v) { return block_reduce<false>(v); }
__device__ __forceinline__ float block_max(float v) { return block_reduce<true>(v); }

__host__ __device__ __forceinline__ float f16_at(const uint8_t* p) {
  // Two bytes, any alignment (quantized rows need not start on an even address).
  const unsigned short h = static_cast<unsigned short>(p[0] | (p[1] << 8));
  return __half2float(__ushort_as_half(h));
}

// Weight decoders. load1(row, i): element i of a row. load8(row, u, a, b, ea, eb): the 8
// weights of unit u (k / 8 units per row) as a = elements ea..ea+3, b = eb..eb+3 — whole
// bytes of one block (Q4, Q5: a are the low nibbles of 4 bytes, b their high nibbles; Q5
// adds the 5th bits from qh).
struct WF32 {
  static constexpr size_t kBlockBytes = 4, kBlockElems = 1;
  __device__ static float load1(const uint8_t* row, int64_t i) { return reinterpret_cast<const float*>(row)[i]; }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const float* w = reinterpret_cast<const float*>(row) + 8 * u;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a[j] = w[j];
      b[j] = w[4 + j];
    }
    *ea = 8 * u;
    *eb = 8 * u + 4;
  }
};

struct WF16 {
  static constexpr size_t kBlockBytes = 2, kBlockElems = 1;
  __device__ static float load1(const uint8_t* row, int64_t i) {
    return __half2float(reinterpret_cast<const __half*>(row)[i]);
  }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const __half* w = reinterpret_cast<const __half*>(row) + 8 * u;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a[j] = __half2float(w[j]);
      b[j] = __half2float(w[4 + j]);
    }
    *ea = 8 * u;
    *eb = 8 * u + 4;
  }
};

// Q8_0, 34 bytes per 32: d f16 @0, qs[32] int8 @2; x = q d.
struct WQ8_0 {
  static constexpr size_t kBlockBytes = 34, kBlockElems = 32;
  __host__ __device__ static float load1(const uint8_t* row, int64_t i) {
    const uint8_t* blk = row + (i >> 5) * 34;
    return static_cast<float>(static_cast<int8_t>(blk[2 + (i & 31)])) * f16_at(blk);
  }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const uint8_t* blk = row + (u >> 2) * 34;
    const int q = static_cast<int>(u & 3);
    const float d = f16_at(blk);
    const uint8_t* qs = blk + 2 + 8 * q;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a[j] = static_cast<float>(static_cast<int8_t>(qs[j])) * d;
      b[j] = static_cast<float>(static_cast<int8_t>(qs[4 + j])) * d;
    }
    *ea = (u >> 2) * 32 + 8 * q;
    *eb = *ea + 4;
  }
};

// Q4_0, 18 bytes per 32: d @0, qs[16] @2; x[j] = (lo(qs[j]) - 8) d, x[j + 16] = (hi(qs[j]) - 8) d.
// Q4_1, 20 bytes per 32: d @0, m @2, qs[16] @4; x = nibble d + m.
template <bool kWithMin>
struct WQ4 {
  static constexpr size_t kBlockBytes = kWithMin ? 20 : 18, kBlockElems = 32;
  static constexpr int kQs = kWithMin ? 4 : 2;
  __device__ static float value(int nib, float d, float m) {
    return kWithMin ? static_cast<float>(nib) * d + m : static_cast<float>(nib - 8) * d;
  }
  __device__ static float load1(const uint8_t* row, int64_t i) {
    const uint8_t* blk = row + (i >> 5) * kBlockBytes;
    const int j = static_cast<int>(i & 31);
    const int byte = blk[kQs + (j & 15)];
    const float m = kWithMin ? f16_at(blk + 2) : 0.0f;
    return value(j < 16 ? (byte & 0xF) : (byte >> 4), f16_at(blk), m);
  }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const uint8_t* blk = row + (u >> 2) * kBlockBytes;
    const int q = static_cast<int>(u & 3);
    const float d = f16_at(blk);
    const float m = kWithMin ? f16_at(blk + 2) : 0.0f;
    const uint8_t* qs = blk + kQs + 4 * q;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a[j] = value(qs[j] & 0xF, d, m);
      b[j] = value(qs[j] >> 4, d, m);
    }
    *ea = (u >> 2) * 32 + 4 * q;
    *eb = *ea + 16;
  }
};
using WQ4_0 = WQ4<false>;
using WQ4_1 = WQ4<true>;

// Q5_0, 22 bytes per 32: d @0, qh u32 @2, qs[16] @6; q[j] = lo(qs[j]) | (bit j of qh) << 4,
//   q[j + 16] = hi(qs[j]) | (bit j + 16 of qh) << 4; x = (q - 16) d.
// Q5_1, 24 bytes per 32: d @0, m @2, qh u32 @4, qs[16] @8; x = q d + m.
// Blocks are read byte by byte (Q5_0 blocks start on any even byte; qh is little-endian).
template <bool kWithMin>
struct WQ5 {
  static constexpr size_t kBlockBytes = kWithMin ? 24 : 22, kBlockElems = 32;
  static constexpr int kQh = kWithMin ? 4 : 2, kQs = kWithMin ? 8 : 6;
  __device__ static float value(int q, float d, float m) {
    return kWithMin ? static_cast<float>(q) * d + m : static_cast<float>(q - 16) * d;
  }
  __device__ static float load1(const uint8_t* row, int64_t i) {
    const uint8_t* blk = row + (i >> 5) * kBlockBytes;
    const int j = static_cast<int>(i & 31);
    const int byte = blk[kQs + (j & 15)];
    const int hi = (blk[kQh + (j >> 3)] >> (j & 7)) & 1;
    const float m = kWithMin ? f16_at(blk + 2) : 0.0f;
    return value((j < 16 ? (byte & 0xF) : (byte >> 4)) | (hi << 4), f16_at(blk), m);
  }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const uint8_t* blk = row + (u >> 2) * kBlockBytes;
    const int q = static_cast<int>(u & 3);
    const float d = f16_at(blk);
    const float m = kWithMin ? f16_at(blk + 2) : 0.0f;
    const uint8_t* qs = blk + kQs + 4 * q;
    // Bits 4q..4q+3 of qh (byte q / 2) belong to a, bits 16+4q.. (byte 2 + q / 2) to b.
    const int sh = 4 * (q & 1);
    const int ha = blk[kQh + (q >> 1)] >> sh, hb = blk[kQh + 2 + (q >> 1)] >> sh;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a[j] = value((qs[j] & 0xF) | (((ha >> j) & 1) << 4), d, m);
      b[j] = value((qs[j] >> 4) | (((hb >> j) & 1) << 4), d, m);
    }
    *ea = (u >> 2) * 32 + 4 * q;
    *eb = *ea + 16;
  }
};
using WQ5_0 = WQ5<false>;
using WQ5_1 = WQ5<true>;

// BF16: the high half of an f32.
struct WBF16 {
  static constexpr size_t kBlockBytes = 2, kBlockElems = 1;
  __device__ static float bf16(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }
  __device__ static float load1(const uint8_t* row, int64_t i) { return bf16(reinterpret_cast<const uint16_t*>(row)[i]); }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const uint16_t* w = reinterpret_cast<const uint16_t*>(row) + 8 * u;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a[j] = bf16(w[j]);
      b[j] = bf16(w[4 + j]);
    }
    *ea = 8 * u;
    *eb = 8 * u + 4;
  }
};

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K block (kernels/cpu/quant.h).
__device__ __forceinline__ void k_scale_min(const uint8_t* scales, int s, int* sc, int* mn) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *mn = scales[s + 4] & 63;
  } else {
    *sc = (scales[s + 4] & 0xF) | ((scales[s - 4] >> 6) << 4);
    *mn = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

// Q4_K, 144 bytes per 256: d @0, dmin @2, scales[12] @4, qs[128] @16. Chunk j (64 elements)
// holds sub-blocks 2j (the low nibbles of qs[32j .. 32j+31]) and 2j+1 (their high nibbles);
// x = d sc q - dmin mn. Q5_K, 176 bytes: qh[32] @16 adds bit s of qh[i] as bit 4 of element
// i of sub-block s, and qs moves to @48. A unit is 4 bytes of a chunk: a = 4 elements of
// sub-block 2j, b = the 4 of sub-block 2j+1 at the same places.
template <bool kHigh>
struct WQK {
  static constexpr size_t kBlockBytes = kHigh ? 176 : 144, kBlockElems = 256;
  static constexpr int kQs = kHigh ? 48 : 16;
  __device__ static float load1(const uint8_t* row, int64_t i) {
    const uint8_t* blk = row + (i >> 8) * kBlockBytes;
    const int e = static_cast<int>(i & 255), j = e >> 6, hi = (e >> 5) & 1, l = e & 31, s = 2 * j + hi;
    const int byte = blk[kQs + 32 * j + l];
    int q = hi ? byte >> 4 : byte & 0xF;
    if (kHigh) q |= ((blk[16 + l] >> s) & 1) << 4;
    int sc, mn;
    k_scale_min(blk + 4, s, &sc, &mn);
    return f16_at(blk) * static_cast<float>(sc) * static_cast<float>(q) - f16_at(blk + 2) * static_cast<float>(mn);
  }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const uint8_t* blk = row + (u >> 5) * kBlockBytes;
    const int ub = static_cast<int>(u & 31), j = ub >> 3, l0 = (ub & 7) * 4;
    const float d = f16_at(blk), dmin = f16_at(blk + 2);
    int sa, ma, sb, mb;
    k_scale_min(blk + 4, 2 * j, &sa, &ma);
    k_scale_min(blk + 4, 2 * j + 1, &sb, &mb);
    const float da = d * static_cast<float>(sa), oa = dmin * static_cast<float>(ma);
    const float db = d * static_cast<float>(sb), ob = dmin * static_cast<float>(mb);
    const uint8_t* qs = blk + kQs + 32 * j + l0;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      int qa = qs[t] & 0xF, qb = qs[t] >> 4;
      if (kHigh) {
        const int h = blk[16 + l0 + t];
        qa |= ((h >> (2 * j)) & 1) << 4;
        qb |= ((h >> (2 * j + 1)) & 1) << 4;
      }
      a[t] = da * static_cast<float>(qa) - oa;
      b[t] = db * static_cast<float>(qb) - ob;
    }
    *ea = (u >> 5) * 256 + 64 * j + l0;
    *eb = *ea + 32;
  }
};
using WQ4_K = WQK<false>;
using WQ5_K = WQK<true>;

// Q6_K, 210 bytes per 256: ql[128] @0, qh[64] @128, scales[16] int8 @192, d @208. Element
// p = 128 h + r: low 4 bits from ql[64 h + r % 64] >> 4 (r / 64), high 2 bits from
// qh[32 h + r % 32] >> 2 (r / 32); x = d scales[p / 16] (q - 32). A unit: 4 bytes of ql,
// a = their low nibbles (r = r0 .. r0+3), b = their high nibbles (r + 64).
struct WQ6_K {
  static constexpr size_t kBlockBytes = 210, kBlockElems = 256;
  __device__ static float load1(const uint8_t* row, int64_t i) {
    const uint8_t* blk = row + (i >> 8) * kBlockBytes;
    const int p = static_cast<int>(i & 255), h = p >> 7, r = p & 127;
    const int lo = (blk[64 * h + (r & 63)] >> (4 * (r >> 6))) & 0xF;
    const int hi = (blk[128 + 32 * h + (r & 31)] >> (2 * (r >> 5))) & 3;
    return f16_at(blk + 208) * static_cast<float>(static_cast<int8_t>(blk[192 + (p >> 4)])) *
           static_cast<float>((lo | (hi << 4)) - 32);
  }
  __device__ static void load8(const uint8_t* row, int64_t u, float* a, float* b, int64_t* ea, int64_t* eb) {
    const uint8_t* blk = row + (u >> 5) * kBlockBytes;
    const int ub = static_cast<int>(u & 31), h = ub >> 4, v = ub & 15, c = v >> 3;
    const int r0 = (v & 7) * 4 + 32 * c;  // a: r0..r0+3 (r / 32 == c), b: r0+64.. (r / 32 == c + 2)
    const float d = f16_at(blk + 208);
    const float da = d * static_cast<float>(static_cast<int8_t>(blk[192 + ((128 * h + r0) >> 4)]));
    const float db = d * static_cast<float>(static_cast<int8_t>(blk[192 + ((128 * h + r0 + 64) >> 4)]));
    const uint8_t* ql = blk + 64 * h + r0;
    const uint8_t* qh = blk + 128 + 32 * h + (r0 & 31);
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int qa = (ql[t] & 0xF) | (((qh[t] >> (2 * c)) & 3) << 4);
      const int qb = (ql[t] >> 4) | (((qh[t] >> (2 * c + 4)) & 3) << 4);
      a[t] = da * static_cast<float>(qa - 32);
      b[t] = db * static_cast<float>(qb - 32);
    }
    *ea = (u >> 5) * 256 + 128 * h + r0;
    *eb = *ea + 64;
  }
};

}  // namespace wt::cuda
