#include <algorithm>

#include "ops_cpu.h"

namespace wt::cpu {

size_t topk_workspace_bytes(int64_t n, int n_threads) {
  return sizeof(int32_t) * static_cast<size_t>(n > 0 ? n : 0) * static_cast<size_t>(n_threads);
}

// Rows are split over workers; each selects in its own index array from the workspace.
// (value desc, index asc) is a strict total order, so nth_element's first k are exactly
// the k wanted, ties included. NaN ranks below every number, so the order stays total.
void topk(const ThreadCtx& tc, const Tensor& x, int32_t k, int32_t* out, void* workspace) {
  const int64_t n = x.ne[0], n_rows = x.n_rows();
  if (k <= 0) return;
  const int64_t kk = k < n ? k : n;
  int32_t* idx = static_cast<int32_t*>(workspace) + tc.ith * n;
  int64_t r0, r1;
  tc.split(n_rows, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const float* v = x.row<float>(r % x.ne[1], r / x.ne[1]);
    int32_t* o = out + r * k;
    if (kk == n) {
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(i);
    } else {
      for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>(i);
      auto above = [v](int32_t a, int32_t b) {
        const float va = v[a], vb = v[b];
        const bool na = va != va, nb = vb != vb;
        if (na != nb) return nb;
        if (!na && va != vb) return va > vb;
        return a < b;
      };
      std::nth_element(idx, idx + kk, idx + n, above);
      std::sort(idx, idx + kk);
      std::copy(idx, idx + kk, o);
    }
    for (int64_t i = kk; i < k; ++i) o[i] = -1;
  }
}

}  // namespace wt::cpu
