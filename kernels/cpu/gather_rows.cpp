#include <cstring>

#include "ops_cpu.h"
#include "kv_rows.h"

namespace wt::cpu {

// A 3-D tensor is [d, heads, rows]; a 2-D one [d, rows] with one head. Going by n_dims
// (not by ne[2] > 1) keeps a 3-D tensor of a single row 3-D.
void gather_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, const int32_t* ids, int32_t n_ids,
                 bool per_head) {
  const bool src3 = src.n_dims >= 3, dst3 = dst.n_dims >= 3;
  const int64_t heads = src3 ? src.ne[1] : 1;
  const int64_t n_sel = per_head ? n_ids / heads : n_ids;
  const int64_t d = src.ne[0];
  // Same types: bytes. f32 into f16 or q8_0 (a KV cache of that type keeping a pruned
  // prompt's rows): each row rounded as copy_rows does.
  const bool convert = dst.type != src.type;
  size_t bytes = 0;
  dtype_row_bytes(src.type, d, &bytes);
  int64_t u0, u1;
  tc.split(n_sel * heads, &u0, &u1);
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t r = u / heads, h = u % heads;
    const int64_t s = per_head ? ids[h * n_sel + r] : ids[r];
    const char* from = src3 ? src.row<char>(h, s) : src.row<char>(s);
    char* to = dst3 ? dst.row<char>(h, r) : dst.row<char>(r);
    if (convert) kv_store_row(dst.type, reinterpret_cast<const float*>(from), to, d);
    else std::memcpy(to, from, bytes);
  }
}

}  // namespace wt::cpu
