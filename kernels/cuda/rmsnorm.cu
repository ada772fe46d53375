// rmsnorm on CUDA (rmsnorm.cuh): one block per row (grid-stride over rows); the sum of
// squares is reduced in f32 within the block before any thread writes, so dst may alias x.
#include "common.cuh"
#include "rmsnorm.cuh"

namespace wt::cuda {
namespace {

__global__ void rmsnorm_kernel(float* dst, size_t dst_nb1, const float* x, size_t x_nb1, const float* w, int64_t d,
                               int64_t n, float eps) {
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    const float* in = row_at<float>(x, r, x_nb1);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += in[i] * in[i];
    s = block_sum(s);
    const float scale = 1.0f / sqrtf(s / static_cast<float>(d) + eps);
    float* out = row_at<float>(dst, r, dst_nb1);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) out[i] = in[i] * scale * w[i];
  }
}

}  // namespace

Status rmsnorm(const OpCall& c, const Launch& l) {
  const RmsnormOp& a = c.get<RmsnormOp>();
  const int64_t d = a.x.ne[0], n = a.x.n_rows();
  if (d * n == 0) return Status::ok();
  const unsigned blocks = static_cast<unsigned>(n < 65535 * 8 ? n : 65535 * 8);
  rmsnorm_kernel<<<blocks, kBlock, 0, l.stream>>>(static_cast<float*>(a.dst.data), a.dst.nb[1],
                                                  static_cast<const float*>(a.x.data), a.x.nb[1],
                                                  static_cast<const float*>(a.weight.data), d, n, a.eps);
  return launch_status("rmsnorm");
}

size_t rmsnorm_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
