// add on CUDA (add.cuh): one thread per element, grid-stride.
#include "add.cuh"
#include "common.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

__global__ void add_kernel(float* dst, size_t dst_nb1, const float* a, size_t a_nb1, const float* b, size_t b_nb1,
                           int64_t d, int64_t n, bool broadcast) {
  kernel_prologue();
  const int64_t total = d * n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / d, i = idx % d;
    row_at<float>(dst, r, dst_nb1)[i] = row_at<float>(a, r, a_nb1)[i] + row_at<float>(b, broadcast ? 0 : r, b_nb1)[i];
  }
}

}  // namespace

Status add(const OpCall& c, const Launch& l) {
  const AddOp& a = c.get<AddOp>();
  const int64_t d = a.a.ne[0], n = a.a.n_rows();
  const bool broadcast = a.b.n_rows() == 1;
  if (d * n == 0) return Status::ok();
  return launch_kernel("add", l, add_kernel, grid_for(d * n, l), kBlock, 0, static_cast<float*>(a.dst.data),
                       a.dst.nb[1], static_cast<const float*>(a.a.data), a.a.nb[1], static_cast<const float*>(a.b.data),
                       a.b.nb[1], d, n, broadcast);
}

size_t add_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
