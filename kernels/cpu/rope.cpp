#include <cmath>

#include "ops_cpu.h"

namespace wt::cpu {

void rope(const ThreadCtx& tc, const Tensor& x, const Tensor& x2, const int32_t* positions, const RopeParams& p) {
  const int64_t n_heads = x.ne[1], n_heads2 = x2.empty() ? 0 : x2.ne[1];
  const int32_t half = p.n_rot / 2;
  // Rows share angles across heads: compute them once per row (n_rot <= 512 by contract).
  float cos_v[256], sin_v[256];
  int64_t begin, end;
  tc.split(x.ne[2], &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    const double pos = static_cast<double>(positions[r]) * p.position_scale;
    for (int32_t i = 0; i < half; ++i) {
      double freq = std::pow(static_cast<double>(p.theta_base), -2.0 * i / p.n_rot);
      if (p.freq_divisors) freq /= p.freq_divisors[i];
      const double angle = pos * freq;
      cos_v[i] = static_cast<float>(std::cos(angle));
      sin_v[i] = static_cast<float>(std::sin(angle));
    }
    for (int64_t h = 0; h < n_heads + n_heads2; ++h) {
      float* v = h < n_heads ? x.row<float>(h, r) : x2.row<float>(h - n_heads, r);
      for (int32_t i = 0; i < half; ++i) {
        const int32_t a = p.neox ? i : 2 * i;
        const int32_t b = p.neox ? i + half : 2 * i + 1;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * cos_v[i] - x1 * sin_v[i];
        v[b] = x0 * sin_v[i] + x1 * cos_v[i];
      }
    }
  }
}

}  // namespace wt::cpu
