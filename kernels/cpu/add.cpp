#include "ops_cpu.h"

namespace wt::cpu {

void add(const ThreadCtx& tc, const Tensor& dst, const Tensor& a, const Tensor& b) {
  const int64_t d = a.ne[0];
  const bool broadcast = b.n_rows() == 1;
  int64_t begin, end;
  tc.split(a.n_rows(), &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    const float* x = a.row<float>(r);
    const float* y = b.row<float>(broadcast ? 0 : r);
    float* out = dst.row<float>(r);
    for (int64_t i = 0; i < d; ++i) out[i] = x[i] + y[i];
  }
}

}  // namespace wt::cpu
