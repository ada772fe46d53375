#include "matmul.h"
#include "ops_cpu.h"

namespace wt::cpu {

void embed(const ThreadCtx& tc, const Tensor& dst, const Tensor& table, const int32_t* ids, float scale) {
  int64_t begin, end;
  tc.split(dst.ne[1], &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    float* row = dst.row<float>(r);
    dequantize_row(table, ids[r], row);
    if (scale != 1.0f)
      for (int64_t i = 0; i < dst.ne[0]; ++i) row[i] *= scale;
  }
}

}  // namespace wt::cpu
