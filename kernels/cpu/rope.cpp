#include "ops_cpu.h"

namespace wt::cpu {

void rope(const ThreadCtx& tc, const Tensor& x, const Tensor& x2, const int32_t* positions, const RopeParams& p) {
  const int64_t n_heads = x.ne[1], n_heads2 = x2.empty() ? 0 : x2.ne[1];
  const int32_t half = p.n_rot / 2;
  // Rows share angles across heads: made once per row (n_rot <= 512 by contract), or given.
  float made[512];
  int64_t begin, end;
  tc.split(x.ne[2], &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    const float* cs = made;  // cos and sin of pair i at 2i, 2i + 1
    if (p.angles) {
      cs = p.angles + r * p.angles_stride;
    } else {
      rope_angles(*p.op, p.freqs, positions[r], made);
    }
    for (int64_t h = 0; h < n_heads + n_heads2; ++h) {
      float* v = h < n_heads ? x.row<float>(h, r) : x2.row<float>(h - n_heads, r);
      for (int32_t i = 0; i < half; ++i) {
        const int32_t a = p.neox ? i : 2 * i;
        const int32_t b = p.neox ? i + half : 2 * i + 1;
        const float x0 = v[a], x1 = v[b], c = cs[2 * i], s = cs[2 * i + 1];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
      }
    }
  }
}

}  // namespace wt::cpu
