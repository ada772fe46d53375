// rope on CUDA (rope.cuh): one block per row (grid-stride over rows). The block first
// computes the row's n_rot/2 angles in double exactly as the CPU does (pow, the divisor,
// cos and sin), then rotates every head's pairs with them.
#include "common.cuh"
#include "rope.cuh"

namespace wt::cuda {
namespace {

struct RopeArgs {
  float* x;
  size_t nb1, nb2;  // head, row strides in bytes
  const int32_t* positions;
  const float* divisors;  // [n_rot/2] or null
  int64_t n_heads, n;
  int32_t n_rot;
  bool neox;
  float theta_base, position_scale;
};

__global__ void rope_kernel(RopeArgs a) {
  __shared__ float cos_v[256], sin_v[256];
  const int32_t half = a.n_rot / 2;
  for (int64_t r = blockIdx.x; r < a.n; r += gridDim.x) {
    __syncthreads();  // the previous row's angles are no longer read
    const double pos = static_cast<double>(a.positions[r]) * a.position_scale;
    for (int32_t i = threadIdx.x; i < half; i += blockDim.x) {
      double freq = pow(static_cast<double>(a.theta_base), -2.0 * i / a.n_rot);
      if (a.divisors) freq /= a.divisors[i];
      const double angle = pos * freq;
      cos_v[i] = static_cast<float>(cos(angle));
      sin_v[i] = static_cast<float>(sin(angle));
    }
    __syncthreads();
    for (int64_t idx = threadIdx.x; idx < a.n_heads * half; idx += blockDim.x) {
      const int64_t h = idx / half;
      const int32_t i = static_cast<int32_t>(idx % half);
      float* v = row_at<float>(a.x, r, a.nb2) + h * static_cast<int64_t>(a.nb1 / sizeof(float));
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
  const Tensor& x = c.src[0];
  WT_TRY(check_f32(x, "rope", "x"));
  const int32_t n_rot = c.i[0];
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > x.ne[0] || n_rot > 512)
    return bad_arg("rope", "n_rot must be even, > 0, <= head_dim and <= 512");
  if (!c.src[1].empty()) WT_TRY(check_f32(c.src[1], "rope", "frequency divisors"));
  RopeArgs a;
  a.x = static_cast<float*>(x.data);
  a.nb1 = x.nb[1];
  a.nb2 = x.nb[2];
  a.positions = c.ids;
  a.divisors = c.src[1].empty() ? nullptr : static_cast<const float*>(c.src[1].data);
  a.n_heads = x.ne[1];
  a.n = x.ne[2];
  a.n_rot = n_rot;
  a.neox = c.i[1] != 0;
  a.theta_base = c.f[0];
  a.position_scale = c.f[1];
  if (a.n * a.n_heads == 0) return Status::ok();
  if (!c.ids) return bad_arg("rope", "needs positions (ids)");
  const unsigned blocks = static_cast<unsigned>(a.n < 65535 * 8 ? a.n : 65535 * 8);
  rope_kernel<<<blocks, kBlock, 0, l.stream>>>(a);
  return launch_status("rope");
}

size_t rope_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
