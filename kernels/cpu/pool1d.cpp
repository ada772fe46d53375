#include <algorithm>
#include <cstring>

#include "ops_cpu.h"

namespace wt::cpu {

namespace {
// Columns per unit: a single long row (a summed score row) still spreads over the workers.
constexpr int64_t kChunk = 1024;
}  // namespace

void pool1d(const ThreadCtx& tc, const Tensor& dst, const Tensor& x, int32_t kernel, bool max) {
  const int64_t n = x.ne[0], n_rows = x.n_rows();
  const int64_t kk = kernel > 1 ? kernel : 1, half = kk / 2;
  const float inv_k = 1.0f / static_cast<float>(kk);
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  int64_t u0, u1;
  tc.split(n_rows * n_chunks, &u0, &u1);
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t r = u / n_chunks;
    const int64_t c0 = (u % n_chunks) * kChunk, c1 = std::min(c0 + kChunk, n);
    const float* in = x.row<float>(r % x.ne[1], r / x.ne[1]);
    float* out = dst.row<float>(r % dst.ne[1], r / dst.ne[1]);
    // Window of column j: [j - half, j - half + kk). Interior columns [a, b) have it all
    // inside the row and are done one kernel tap at a time over the whole range, a plain
    // stream the compiler vectorizes; the few edge columns clip their window.
    const int64_t a = std::min(std::max(c0, half), c1);
    const int64_t b = std::max(std::min(c1, n - kk + half + 1), a);
    auto edge = [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t lo = std::max<int64_t>(j - half, 0), hi = std::min(j - half + kk, n);
        float acc = in[lo];
        for (int64_t t = lo + 1; t < hi; ++t) acc = max ? std::max(acc, in[t]) : acc + in[t];
        out[j] = max ? acc : acc * inv_k;
      }
    };
    edge(c0, a);
    edge(b, c1);
    if (a == b) continue;
    const int64_t m = b - a;
    float* o = out + a;
    std::memcpy(o, in + a - half, sizeof(float) * static_cast<size_t>(m));
    for (int64_t t = 1; t < kk; ++t) {
      const float* s = in + a - half + t;
      if (max) {
        for (int64_t j = 0; j < m; ++j) o[j] = s[j] > o[j] ? s[j] : o[j];
      } else {
        for (int64_t j = 0; j < m; ++j) o[j] += s[j];
      }
    }
    if (!max)
      for (int64_t j = 0; j < m; ++j) o[j] *= inv_k;
  }
}

}  // namespace wt::cpu
