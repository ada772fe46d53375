// Device helpers shared by the CUDA op kernels: warp reductions and strided row access.
// Reductions use the xor butterfly, so every lane ends with the same bits (IEEE addition is
// commutative) and a branch on the result stays warp-uniform.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/tensor.h"

namespace wt::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(kFullMask, x, off);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, off));
  return x;
}

// Row (i1, i2) of a tensor given as base pointer and byte strides (ne0 is contiguous), as
// elements of T (float unless told: row_at<uint16_t> for the f16 key bounds).
template <typename T = float>
__device__ __forceinline__ const T* row_at(const char* base, size_t nb1, size_t nb2, int64_t i1, int64_t i2) {
  return reinterpret_cast<const T*>(base + static_cast<size_t>(i1) * nb1 + static_cast<size_t>(i2) * nb2);
}
template <typename T = float>
__device__ __forceinline__ T* row_at(char* base, size_t nb1, size_t nb2, int64_t i1, int64_t i2) {
  return reinterpret_cast<T*>(base + static_cast<size_t>(i1) * nb1 + static_cast<size_t>(i2) * nb2);
}

// A tensor's base and row strides, as kernels take them.
struct RowView {
  char* data;
  size_t nb1, nb2;
};
inline RowView view_of(const Tensor& t) { return RowView{static_cast<char*>(t.data), t.nb[1], t.nb[2]}; }

}  // namespace wt::cuda
