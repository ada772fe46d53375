// copy_rows on CUDA (copy_rows.cuh): one thread per unit of a row (kv_store.cuh: an element,
// a q8_0 block, two bytes of a cache's own type), grid-stride; a call's two copies
// (CopyRowsOp's dst2/src2) in one launch when their types agree.
#include "common.cuh"
#include "copy_rows.cuh"
#include "kv_store.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

// One copy of n rows of `units` units: src rows into dst rows row0..
struct CopyPair {
  char* dst;
  size_t dst_nb1;
  const char* src;
  size_t src_nb1;
  int64_t units, n;
};

// Both copies of a call (a layer's keys and values) in one grid: the index space is the
// first pair's units, then the second's.
template <KvStore S>
__global__ void copy_rows_kernel(CopyPair p0, CopyPair p1, int64_t row0) {
  kernel_prologue();
  const int64_t total0 = p0.units * p0.n, total = total0 + p1.units * p1.n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const bool second = idx >= total0;
    const CopyPair& p = second ? p1 : p0;
    const int64_t e = second ? idx - total0 : idx;
    const int64_t r = e / p.units, u = e % p.units;
    kv_store_unit<S>(p.src + r * static_cast<int64_t>(p.src_nb1), p.dst + (row0 + r) * static_cast<int64_t>(p.dst_nb1), u);
  }
}

CopyPair pair_of(const Tensor& dst, const Tensor& src) {
  const int64_t units = kv_store_units(kv_store_of(dst.type, src.type), src.type, src.ne[0]);
  return {static_cast<char*>(dst.data), dst.nb[1], static_cast<const char*>(src.data), src.nb[1], units, src.n_rows()};
}

// p1 empty (n 0): one pair.
Status launch_pairs(KvStore s, const CopyPair& p0, const CopyPair& p1, int32_t row0, const Launch& l) {
  const int64_t total = p0.units * p0.n + p1.units * p1.n;
  if (total == 0) return Status::ok();
  const unsigned grid = grid_for(total, l);
  const int64_t r0 = row0;
  switch (s) {
    case KvStore::f16: return launch_kernel("copy_rows", l, copy_rows_kernel<KvStore::f16>, grid, kBlock, 0, p0, p1, r0);
    case KvStore::q8_0: return launch_kernel("copy_rows", l, copy_rows_kernel<KvStore::q8_0>, grid, kBlock, 0, p0, p1, r0);
    case KvStore::bytes: return launch_kernel("copy_rows", l, copy_rows_kernel<KvStore::bytes>, grid, kBlock, 0, p0, p1, r0);
    default: return launch_kernel("copy_rows", l, copy_rows_kernel<KvStore::f32>, grid, kBlock, 0, p0, p1, r0);
  }
}

}  // namespace

Status copy_rows(const OpCall& c, const Launch& l) {
  const CopyRowsOp& a = c.get<CopyRowsOp>();
  const CopyPair none{nullptr, 0, nullptr, 0, 1, 0};
  const KvStore s = kv_store_of(a.dst.type, a.src.type);
  if (a.dst2.empty()) return launch_pairs(s, pair_of(a.dst, a.src), none, a.row0, l);
  const KvStore s2 = kv_store_of(a.dst2.type, a.src2.type);
  if (s2 == s) return launch_pairs(s, pair_of(a.dst, a.src), pair_of(a.dst2, a.src2), a.row0, l);
  WT_TRY(launch_pairs(s, pair_of(a.dst, a.src), none, a.row0, l));
  return launch_pairs(s2, pair_of(a.dst2, a.src2), none, a.row0, l);
}

size_t copy_rows_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
