// copy_rows on CUDA (copy_rows.cuh): one thread per element, grid-stride; a call's two
// copies (CopyRowsOp's dst2/src2) in one launch when their types agree.
#include <cuda_fp16.h>

#include "common.cuh"
#include "copy_rows.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

// One copy of n rows of d floats: src rows into dst rows row0.. (converted to T).
struct CopyPair {
  void* dst;
  size_t dst_nb1;
  const float* src;
  size_t src_nb1;
  int64_t d, n;
};

// Both copies of a call (a layer's keys and values) in one grid: the index space is the
// first pair's elements, then the second's.
template <typename T>
__global__ void copy_rows_kernel(CopyPair p0, CopyPair p1, int64_t row0) {
  kernel_prologue();
  const int64_t total0 = p0.d * p0.n, total = total0 + p1.d * p1.n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const bool second = idx >= total0;
    const CopyPair& p = second ? p1 : p0;
    const int64_t e = second ? idx - total0 : idx;
    const int64_t r = e / p.d, i = e % p.d;
    const float v = row_at<float>(p.src, r, p.src_nb1)[i];
    if constexpr (sizeof(T) == 2) {
      row_at<__half>(p.dst, row0 + r, p.dst_nb1)[i] = __float2half_rn(v);  // nearest even, as the CPU
    } else {
      row_at<float>(p.dst, row0 + r, p.dst_nb1)[i] = v;
    }
  }
}

CopyPair pair_of(const Tensor& dst, const Tensor& src) {
  return {dst.data, dst.nb[1], static_cast<const float*>(src.data), src.nb[1], src.ne[0], src.n_rows()};
}

// p1 empty (n 0): one pair.
Status launch_pairs(DType type, const CopyPair& p0, const CopyPair& p1, int32_t row0, const Launch& l) {
  const int64_t total = p0.d * p0.n + p1.d * p1.n;
  if (total == 0) return Status::ok();
  if (type == DType::f16)  // validate_op: f32 or f16
    return launch_kernel("copy_rows", l, copy_rows_kernel<__half>, grid_for(total, l), kBlock, 0, p0, p1,
                         static_cast<int64_t>(row0));
  return launch_kernel("copy_rows", l, copy_rows_kernel<float>, grid_for(total, l), kBlock, 0, p0, p1,
                       static_cast<int64_t>(row0));
}

}  // namespace

Status copy_rows(const OpCall& c, const Launch& l) {
  const CopyRowsOp& a = c.get<CopyRowsOp>();
  const CopyPair none{nullptr, 0, nullptr, 0, 1, 0};
  if (a.dst2.empty()) return launch_pairs(a.dst.type, pair_of(a.dst, a.src), none, a.row0, l);
  if (a.dst2.type == a.dst.type)
    return launch_pairs(a.dst.type, pair_of(a.dst, a.src), pair_of(a.dst2, a.src2), a.row0, l);
  WT_TRY(launch_pairs(a.dst.type, pair_of(a.dst, a.src), none, a.row0, l));
  return launch_pairs(a.dst2.type, pair_of(a.dst2, a.src2), none, a.row0, l);
}

size_t copy_rows_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
