// rope on CUDA (rope.cuh): one block per row (grid-stride over rows). The block first
// takes the row's n_rot/2 angles from RopeOp::angles, or computes them in double exactly as
// the CPU does (pow, the divisor, cos and sin, times mscale), then rotates every head's pairs with them,
// x's and then x2's.
#include "common.cuh"
#include "rope.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

struct RopeArgs {
  float* x;
  size_t nb1, nb2;  // head, row strides in bytes
  float* x2;        // the second tensor's heads follow x's (n_heads2 of them, 0 without)
  size_t nb1_2, nb2_2;
  int64_t n_heads2;
  const int32_t* positions;
  const float* divisors;  // [n_rot/2] or null
  const float* angles;    // RopeOp::angles (row r at r * angles_nb1 bytes) or null
  size_t angles_nb1;
  int64_t n_heads, n;
  int32_t n_rot;
  bool neox;
  float theta_base, position_scale, mscale;
};

__global__ void rope_kernel(RopeArgs a) {
  kernel_prologue();
  __shared__ float cos_v[256], sin_v[256];
  const int32_t half = a.n_rot / 2;
  for (int64_t r = blockIdx.x; r < a.n; r += gridDim.x) {
    __syncthreads();  // the previous row's angles are no longer read
    const double pos = static_cast<double>(a.positions[r]) * a.position_scale;
    for (int32_t i = threadIdx.x; i < half; i += blockDim.x) {
      if (a.angles) {
        const float* t = row_at<float>(a.angles, r, a.angles_nb1);
        cos_v[i] = t[2 * i];
        sin_v[i] = t[2 * i + 1];
        continue;
      }
      double freq = pow(static_cast<double>(a.theta_base), -2.0 * i / a.n_rot);
      if (a.divisors) freq /= a.divisors[i];
      const double angle = pos * freq;
      cos_v[i] = static_cast<float>(cos(angle)) * a.mscale;
      sin_v[i] = static_cast<float>(sin(angle)) * a.mscale;
    }
    __syncthreads();
    for (int64_t idx = threadIdx.x; idx < (a.n_heads + a.n_heads2) * half; idx += blockDim.x) {
      const int64_t h = idx / half;
      const int32_t i = static_cast<int32_t>(idx % half);
      float* v = h < a.n_heads
                     ? row_at<float>(a.x, r, a.nb2) + h * static_cast<int64_t>(a.nb1 / sizeof(float))
                     : row_at<float>(a.x2, r, a.nb2_2) + (h - a.n_heads) * static_cast<int64_t>(a.nb1_2 / sizeof(float));
      const int32_t p = a.neox ? i : 2 * i;
      const int32_t q = a.neox ? i + half : 2 * i + 1;
      const float x0 = v[p], x1 = v[q];
      v[p] = x0 * cos_v[i] - x1 * sin_v[i];
      v[q] = x0 * sin_v[i] + x1 * cos_v[i];
    }
  }
}

}  // namespace

Status rope(const OpCall& c, const Launch& l) {
  const RopeOp& r = c.get<RopeOp>();
  const Tensor& x = r.x;
  RopeArgs a;
  a.x = static_cast<float*>(x.data);
  a.nb1 = x.nb[1];
  a.nb2 = x.nb[2];
  a.positions = r.positions;
  a.divisors = r.freq_divisors.empty() ? nullptr : static_cast<const float*>(r.freq_divisors.data);
  a.angles = r.angles.empty() ? nullptr : static_cast<const float*>(r.angles.data);
  a.angles_nb1 = r.angles.nb[1];
  a.n_heads = x.ne[1];
  a.x2 = static_cast<float*>(r.x2.data);
  a.nb1_2 = r.x2.nb[1];
  a.nb2_2 = r.x2.nb[2];
  a.n_heads2 = r.x2.empty() ? 0 : r.x2.ne[1];
  a.n = x.ne[2];
  a.n_rot = r.n_rot;
  a.neox = r.neox;
  a.theta_base = r.theta_base;
  a.position_scale = r.position_scale;
  a.mscale = r.mscale;
  if (a.n * (a.n_heads + a.n_heads2) == 0) return Status::ok();
  const unsigned blocks = static_cast<unsigned>(a.n < 65535 * 8 ? a.n : 65535 * 8);
  return launch_kernel("rope", l, rope_kernel, blocks, kBlock, 0, a);
}

size_t rope_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
