#include <cstring>

#include "ops_cpu.h"

namespace wt::cpu {

// A 3-D tensor is [d, heads, rows]; a 2-D one [d, rows] with one head. Going by n_dims
// (not by ne[2] > 1) keeps a 3-D tensor of a single row 3-D.
void gather_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, const int32_t* ids, int32_t n_ids,
                 bool per_head) {
  const bool src3 = src.n_dims >= 3, dst3 = dst.n_dims >= 3;
  const int64_t heads = src3 ? src.ne[1] : 1;
  const int64_t n_sel = per_head ? n_ids / heads : n_ids;
  const size_t bytes = sizeof(float) * static_cast<size_t>(src.ne[0]);
  int64_t u0, u1;
  tc.split(n_sel * heads, &u0, &u1);
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t r = u / heads, h = u % heads;
    const int64_t s = per_head ? ids[h * n_sel + r] : ids[r];
    const float* from = src3 ? src.row<float>(h, s) : src.row<float>(s);
    float* to = dst3 ? dst.row<float>(h, r) : dst.row<float>(r);
    std::memcpy(to, from, bytes);
  }
}

}  // namespace wt::cpu
