#include "matmul.h"
#include "ops_cpu.h"

namespace wt::cpu {

void embed(const ThreadCtx& tc, const Tensor& dst, const Tensor& table, const int32_t* ids) {
  int64_t begin, end;
  tc.split(dst.ne[1], &begin, &end);
  for (int64_t r = begin; r < end; ++r) dequantize_row(table, ids[r], dst.row<float>(r));
}

}  // namespace wt::cpu
