// gather_rows on CUDA (gather_rows.cuh): one thread per unit of a head's row (kv_store.cuh:
// an element, a q8_0 block, two bytes of a cache's own type), grid-stride. A 3-D tensor is
// [d, heads, rows], a 2-D one [d, rows] with one head (by n_dims, as on the CPU). A row id
// outside src gives a row of zeros.
#include "common.cuh"
#include "gather_rows.cuh"
#include "kv_store.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

struct GatherArgs {
  char* dst;
  size_t dst_nb1, dst_nb2;
  const char* src;
  size_t src_nb1, src_nb2;
  const int32_t* ids;
  int64_t units, heads, n_sel, n_src;
  bool src3, dst3, per_head;
};

template <KvStore S>
__global__ void gather_rows_kernel(GatherArgs a) {
  kernel_prologue();
  const int64_t total = a.units * a.heads * a.n_sel;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t u = idx % a.units, rh = idx / a.units;
    const int64_t r = rh / a.heads, h = rh % a.heads;
    const int64_t s = a.per_head ? a.ids[h * a.n_sel + r] : a.ids[r];
    char* to = a.dst3 ? a.dst + r * static_cast<int64_t>(a.dst_nb2) + h * static_cast<int64_t>(a.dst_nb1)
                      : a.dst + r * static_cast<int64_t>(a.dst_nb1);
    const char* from = nullptr;
    if (s >= 0 && s < a.n_src)
      from = a.src3 ? a.src + s * static_cast<int64_t>(a.src_nb2) + h * static_cast<int64_t>(a.src_nb1)
                    : a.src + s * static_cast<int64_t>(a.src_nb1);
    kv_store_unit<S>(from, to, u);
  }
}

}  // namespace

Status gather_rows(const OpCall& c, const Launch& l) {
  const GatherRowsOp& g = c.get<GatherRowsOp>();
  if (g.n_ids == 0) return Status::ok();
  const KvStore s = kv_store_of(g.dst.type, g.src.type);
  GatherArgs a;
  a.src3 = g.src.n_dims >= 3;
  a.dst3 = g.dst.n_dims >= 3;
  a.per_head = g.per_head;
  a.heads = a.src3 ? g.src.ne[1] : 1;
  a.n_sel = a.per_head ? g.n_ids / a.heads : g.n_ids;
  a.n_src = a.src3 ? g.src.ne[2] : g.src.ne[1];
  a.units = kv_store_units(s, g.src.type, g.src.ne[0]);
  a.dst = static_cast<char*>(g.dst.data);
  a.dst_nb1 = g.dst.nb[1];
  a.dst_nb2 = g.dst.nb[2];
  a.src = static_cast<const char*>(g.src.data);
  a.src_nb1 = g.src.nb[1];
  a.src_nb2 = g.src.nb[2];
  a.ids = g.ids;
  const int64_t total = a.units * a.heads * a.n_sel;
  if (total == 0) return Status::ok();
  const unsigned grid = grid_for(total, l);
  switch (s) {
    case KvStore::f16: return launch_kernel("gather_rows", l, gather_rows_kernel<KvStore::f16>, grid, kBlock, 0, a);
    case KvStore::q8_0: return launch_kernel("gather_rows", l, gather_rows_kernel<KvStore::q8_0>, grid, kBlock, 0, a);
    case KvStore::bytes: return launch_kernel("gather_rows", l, gather_rows_kernel<KvStore::bytes>, grid, kBlock, 0, a);
    default: return launch_kernel("gather_rows", l, gather_rows_kernel<KvStore::f32>, grid, kBlock, 0, a);
  }
}

size_t gather_rows_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
