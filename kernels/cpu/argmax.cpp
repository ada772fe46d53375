#include "ops_cpu.h"

namespace wt::cpu {

int32_t argmax(const Tensor& x) {
  const float* v = x.row<float>(0);
  int32_t best = 0;
  for (int64_t i = 1; i < x.ne[0]; ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace wt::cpu
