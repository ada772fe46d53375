#include "fast_math.h"
#include "ops_cpu.h"

namespace wt::cpu {

void swiglu(const ThreadCtx& tc, const Tensor& dst, const Tensor& gate, const Tensor& up) {
  const int64_t f = gate.ne[0];
  int64_t begin, end;
  tc.split(gate.n_rows(), &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    const float* g = gate.row<float>(r);
    const float* u = up.row<float>(r);
    float* out = dst.row<float>(r);
    for (int64_t i = 0; i < f; ++i) out[i] = silu(g[i]) * u[i];
  }
}

}  // namespace wt::cpu
