// rmsnorm on CUDA (rmsnorm.cuh): one block per row (grid-stride over rows); the sum of
// squares is reduced in f32 within the block before any thread writes, so dst may alias x.
// With a residual each thread first adds its own elements of it into x (and writes them
// back), the same elements it later writes of dst, so dst may alias the residual too.
#include "common.cuh"
#include "rmsnorm.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

__global__ void rmsnorm_kernel(float* dst, size_t dst_nb1, float* x, size_t x_nb1, const float* w, int64_t d,
                               int64_t n, float eps, const float* res, size_t res_nb1) {
  kernel_prologue();
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    float* in = row_at<float>(x, r, x_nb1);
    float s = 0.0f;
    if (res) {
      const float* add = row_at<float>(res, r, res_nb1);
      for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float v = in[i] + add[i];
        in[i] = v;
        s += v * v;
      }
    } else {
      for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += in[i] * in[i];
    }
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
  return launch_kernel("rmsnorm", l, rmsnorm_kernel, blocks, kBlock, 0, static_cast<float*>(a.dst.data), a.dst.nb[1],
                       static_cast<float*>(a.x.data), a.x.nb[1], static_cast<const float*>(a.weight.data), d, n, a.eps,
                       static_cast<const float*>(a.residual.data), a.residual.nb[1]);
}

size_t rmsnorm_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
