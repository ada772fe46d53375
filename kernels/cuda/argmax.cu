// argmax on CUDA (argmax.cuh): one block scans row 0 (strided per thread), then a shared
// memory tree keeps the larger value, the lower index on ties — the CPU's first maximum.
#include <climits>
#include <cmath>

#include "argmax.cuh"
#include "common.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kArgmaxBlock = 1024;

__device__ __forceinline__ bool better(float v, int32_t i, float bv, int32_t bi) {
  return v > bv || (v == bv && i < bi);
}

__global__ void argmax_kernel(const float* x, int64_t n, int32_t* out) {
  kernel_prologue();
  __shared__ float sv[kArgmaxBlock];
  __shared__ int32_t si[kArgmaxBlock];
  float bv = -INFINITY;
  int32_t bi = INT_MAX;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = x[i];
    // The first number a thread sees is its start (so an all -inf row still answers an
    // index); later ones only when strictly larger, as on the CPU. NaN is never kept: the
    // CPU's scan never moves to one (v > best is false), and a NaN start would hide every
    // later value of this thread. A NaN at index 0 (the CPU's answer 0) is handled below.
    if (v == v && (bi == INT_MAX || v > bv)) {
      bv = v;
      bi = static_cast<int32_t>(i);
    }
  }
  sv[threadIdx.x] = bv;
  si[threadIdx.x] = bi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) {
      const float v = sv[threadIdx.x + s];
      const int32_t i = si[threadIdx.x + s];
      if (i != INT_MAX && (si[threadIdx.x] == INT_MAX || better(v, i, sv[threadIdx.x], si[threadIdx.x]))) {
        sv[threadIdx.x] = v;
        si[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = si[0] == INT_MAX || x[0] != x[0] ? 0 : si[0];
}

}  // namespace

Status argmax(const OpCall& c, const Launch& l) {
  const ArgmaxOp& a = c.get<ArgmaxOp>();
  const int64_t n = a.x.ne[0];
  const int block = l.max_threads_per_block >= kArgmaxBlock ? kArgmaxBlock : 256;
  return launch_kernel("argmax", l, argmax_kernel, 1, block, 0, static_cast<const float*>(a.x.data), n, a.out);
}

size_t argmax_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
