#include <cstring>

#include "ops_cpu.h"
#include "kv_rows.h"

namespace wt::cpu {

// Rows of one type are copied as bytes; f32 rows into a KV cache of f16 or q8_0 are rounded
// to its type (kv_rows.h), as ops.def's "f32 -> dst type" says.
void copy_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, int64_t row0) {
  const int64_t d = src.ne[0];
  size_t row_bytes = 0;
  dtype_row_bytes(src.type, d, &row_bytes);
  int64_t begin, end;
  tc.split(src.n_rows(), &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    if (src.type == dst.type) std::memcpy(dst.row<char>(row0 + r), src.row<char>(r), row_bytes);
    else kv_store_row(dst.type, src.row<float>(r), dst.row<char>(row0 + r), d);
  }
}

}  // namespace wt::cpu
