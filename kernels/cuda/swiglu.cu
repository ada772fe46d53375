// swiglu on CUDA (swiglu.cuh): one thread per element, grid-stride. gelu (Gemma 3): gelu's
// tanh form, written as the CPU writes it, g / (1 + exp(-2y)), y = sqrt(2/pi) (g + 0.044715 g^3).
#include "common.cuh"
#include "swiglu.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

__global__ void swiglu_kernel(float* dst, size_t dst_nb1, const float* gate, size_t g_nb1, const float* up,
                              size_t u_nb1, int64_t f, int64_t n, bool gelu) {
  kernel_prologue();
  const int64_t total = f * n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / f, i = idx % f;
    const float g = row_at<float>(gate, r, g_nb1)[i];
    const float z = gelu ? 1.5957691216057308f * (g + 0.044715f * g * g * g) : g;
    // exp(-z) clamped as the CPU's fast_exp is: a very negative g gives -0 * up, not NaN.
    const float e = expf(fminf(fmaxf(-z, -87.0f), 88.0f));
    row_at<float>(dst, r, dst_nb1)[i] = g / (1.0f + e) * row_at<float>(up, r, u_nb1)[i];
  }
}

}  // namespace

Status swiglu(const OpCall& c, const Launch& l) {
  const SwigluOp& a = c.get<SwigluOp>();
  const int64_t f = a.gate.ne[0], n = a.gate.n_rows();
  if (f * n == 0) return Status::ok();
  return launch_kernel("swiglu", l, swiglu_kernel, grid_for(f * n, l), kBlock, 0, static_cast<float*>(a.dst.data),
                       a.dst.nb[1], static_cast<const float*>(a.gate.data), a.gate.nb[1],
                       static_cast<const float*>(a.up.data), a.up.nb[1], f, n, a.gelu);
}

size_t swiglu_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
