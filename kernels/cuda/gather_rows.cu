// gather_rows on CUDA (gather_rows.cuh): one thread per element, grid-stride. A 3-D tensor
// is [d, heads, rows], a 2-D one [d, rows] with one head (by n_dims, as on the CPU).
#include "common.cuh"
#include "gather_rows.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

struct GatherArgs {
  float* dst;
  size_t dst_nb1, dst_nb2;
  const float* src;
  size_t src_nb1, src_nb2;
  const int32_t* ids;
  int64_t d, heads, n_sel, n_src;
  bool src3, dst3, per_head;
};

__global__ void gather_rows_kernel(GatherArgs a) {
  kernel_prologue();
  const int64_t total = a.d * a.heads * a.n_sel;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx % a.d, u = idx / a.d;
    const int64_t r = u / a.heads, h = u % a.heads;
    const int64_t s = a.per_head ? a.ids[h * a.n_sel + r] : a.ids[r];
    float* to = a.dst3 ? row_at<float>(a.dst, r, a.dst_nb2) + h * static_cast<int64_t>(a.dst_nb1 / sizeof(float))
                       : row_at<float>(a.dst, r, a.dst_nb1);
    float v = 0.0f;
    if (s >= 0 && s < a.n_src) {
      const float* from = a.src3 ? row_at<float>(a.src, s, a.src_nb2) + h * static_cast<int64_t>(a.src_nb1 / sizeof(float))
                                 : row_at<float>(a.src, s, a.src_nb1);
      v = from[i];
    }
    to[i] = v;
  }
}

}  // namespace

Status gather_rows(const OpCall& c, const Launch& l) {
  const GatherRowsOp& g = c.get<GatherRowsOp>();
  if (g.n_ids == 0) return Status::ok();
  GatherArgs a;
  a.src3 = g.src.n_dims >= 3;
  a.dst3 = g.dst.n_dims >= 3;
  a.per_head = g.per_head;
  a.heads = a.src3 ? g.src.ne[1] : 1;
  a.n_sel = a.per_head ? g.n_ids / a.heads : g.n_ids;
  a.n_src = a.src3 ? g.src.ne[2] : g.src.ne[1];
  a.d = g.src.ne[0];
  a.dst = static_cast<float*>(g.dst.data);
  a.dst_nb1 = g.dst.nb[1];
  a.dst_nb2 = g.dst.nb[2];
  a.src = static_cast<const float*>(g.src.data);
  a.src_nb1 = g.src.nb[1];
  a.src_nb2 = g.src.nb[2];
  a.ids = g.ids;
  const int64_t total = a.d * a.heads * a.n_sel;
  if (total == 0) return Status::ok();
  return launch_kernel("gather_rows", l, gather_rows_kernel, grid_for(total, l), kBlock, 0, a);
}

size_t gather_rows_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
