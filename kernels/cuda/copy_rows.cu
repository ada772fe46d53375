// copy_rows on CUDA (copy_rows.cuh): one thread per element, grid-stride.
#include <cuda_fp16.h>

#include "common.cuh"
#include "copy_rows.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

template <typename T>
__global__ void copy_rows_kernel(void* dst, size_t dst_nb1, int64_t row0, const float* src, size_t src_nb1, int64_t d,
                                 int64_t n) {
  kernel_prologue();
  const int64_t total = d * n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / d, i = idx % d;
    const float v = row_at<float>(src, r, src_nb1)[i];
    if constexpr (sizeof(T) == 2) {
      row_at<__half>(dst, row0 + r, dst_nb1)[i] = __float2half_rn(v);  // nearest even, as the CPU
    } else {
      row_at<float>(dst, row0 + r, dst_nb1)[i] = v;
    }
  }
}

Status copy_one(const Tensor& dst, const Tensor& src_t, int32_t row0, const Launch& l) {
  const bool f16 = dst.type == DType::f16;  // validate_op: f32 or f16
  const int64_t d = src_t.ne[0], n = src_t.n_rows();
  if (d * n == 0) return Status::ok();
  const float* src = static_cast<const float*>(src_t.data);
  if (f16)
    return launch_kernel("copy_rows", l, copy_rows_kernel<__half>, grid_for(d * n, l), kBlock, 0, dst.data, dst.nb[1],
                         row0, src, src_t.nb[1], d, n);
  return launch_kernel("copy_rows", l, copy_rows_kernel<float>, grid_for(d * n, l), kBlock, 0, dst.data, dst.nb[1],
                       row0, src, src_t.nb[1], d, n);
}

}  // namespace

Status copy_rows(const OpCall& c, const Launch& l) {
  const CopyRowsOp& a = c.get<CopyRowsOp>();
  WT_TRY(copy_one(a.dst, a.src, a.row0, l));
  return a.dst2.empty() ? Status::ok() : copy_one(a.dst2, a.src2, a.row0, l);
}

size_t copy_rows_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
