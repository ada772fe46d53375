#include <cmath>

#include "ops_cpu.h"

namespace wt::cpu {

void rmsnorm(const ThreadCtx& tc, const Tensor& dst, const Tensor& x, const Tensor& w, float eps, const Tensor& res) {
  const int64_t d = x.ne[0];
  const float* weight = static_cast<const float*>(w.data);
  int64_t begin, end;
  tc.split(x.n_rows(), &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    float* in = x.row<float>(r);
    if (!res.empty()) {  // the whole row is summed before dst (which may be res) is written
      const float* add = res.row<float>(r);
      for (int64_t i = 0; i < d; ++i) in[i] += add[i];
    }
    float* out = dst.row<float>(r);
    // Sum in double: rows of a few thousand values, and the reference is float64.
    double sum = 0.0;
    for (int64_t i = 0; i < d; ++i) sum += static_cast<double>(in[i]) * in[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(d) + eps));
    for (int64_t i = 0; i < d; ++i) out[i] = in[i] * scale * weight[i];
  }
}

}  // namespace wt::cpu
