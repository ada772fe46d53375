#include <cstring>

#include "ops_cpu.h"

namespace wt::cpu {

void copy_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, int64_t row0) {
  const size_t row_bytes = static_cast<size_t>(src.ne[0]) * sizeof(float);
  int64_t begin, end;
  tc.split(src.n_rows(), &begin, &end);
  for (int64_t r = begin; r < end; ++r) std::memcpy(dst.row<float>(row0 + r), src.row<float>(r), row_bytes);
}

}  // namespace wt::cpu
