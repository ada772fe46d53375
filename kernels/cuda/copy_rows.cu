// copy_rows on CUDA (copy_rows.cuh): one thread per element, grid-stride.
#include <cuda_fp16.h>

#include "common.cuh"
#include "copy_rows.cuh"

namespace wt::cuda {
namespace {

template <typename T>
__global__ void copy_rows_kernel(void* dst, size_t dst_nb1, int64_t row0, const float* src, size_t src_nb1, int64_t d,
                                 int64_t n) {
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

}  // namespace

Status copy_rows(const OpCall& c, const Launch& l) {
  WT_TRY(check_f32(c.src[0], "copy_rows", "src"));
  const bool f16 = c.dst.type == DType::f16;
  if (c.dst.empty()) return bad_arg("copy_rows", "dst is missing");
  if (!f16 && c.dst.type != DType::f32) return error(WT_ERR_UNSUPPORTED, "cuda: copy_rows writes f32 or f16 rows only");
  if (c.dst.nb[1] % (f16 ? 2 : 4) != 0) return bad_arg("copy_rows", "dst has a stride that is not a whole element");
  const int64_t d = c.src[0].ne[0], n = c.src[0].n_rows();
  if (c.i[0] < 0 || c.i[0] + n > c.dst.n_rows()) return bad_arg("copy_rows", "rows past the end of dst");
  if (d > c.dst.ne[0]) return bad_arg("copy_rows", "src rows are longer than dst rows");
  if (d * n == 0) return Status::ok();
  const float* src = static_cast<const float*>(c.src[0].data);
  if (f16) {
    copy_rows_kernel<__half><<<grid_for(d * n, l), kBlock, 0, l.stream>>>(c.dst.data, c.dst.nb[1], c.i[0], src,
                                                                          c.src[0].nb[1], d, n);
  } else {
    copy_rows_kernel<float><<<grid_for(d * n, l), kBlock, 0, l.stream>>>(c.dst.data, c.dst.nb[1], c.i[0], src,
                                                                         c.src[0].nb[1], d, n);
  }
  return launch_status("copy_rows");
}

size_t copy_rows_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
