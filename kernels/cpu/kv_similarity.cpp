#include <cmath>
#include <cstring>

#include "ops_cpu.h"

namespace wt::cpu {

// Each (kv head, k or v) anchor is an independent sequential stream over the rows, so the
// streams are what is split over workers; each owns its anchor and its dst column.
void kv_similarity(const ThreadCtx& tc, const Tensor& dst, const Tensor& k, const Tensor& v, const Tensor& anchors,
                   float decay) {
  const int64_t hd = k.ne[0], n_head_kv = k.ne[1], n = k.ne[2];
  const float keep = 1.0f - decay;
  for (int64_t s = tc.ith; s < 2 * n_head_kv; s += tc.nth) {
    const int64_t g = s / 2, which = s % 2;
    const Tensor& x = which == 0 ? k : v;
    float* a = anchors.row<float>(g, which);
    for (int64_t t = 0; t < n; ++t) {
      const float* xr = x.row<float>(g, t);
      float dot = 0.0f, aa = 0.0f, xx = 0.0f;
      for (int64_t d = 0; d < hd; ++d) {
        dot += a[d] * xr[d];
        aa += a[d] * a[d];
        xx += xr[d] * xr[d];
      }
      dst.row<float>(g, t)[which] = aa > 0.0f && xx > 0.0f ? dot / (std::sqrt(aa) * std::sqrt(xx)) : 0.0f;
      if (aa == 0.0f) {
        std::memcpy(a, xr, sizeof(float) * static_cast<size_t>(hd));
      } else {
        for (int64_t d = 0; d < hd; ++d) a[d] = decay * a[d] + keep * xr[d];
      }
    }
  }
}

}  // namespace wt::cpu
