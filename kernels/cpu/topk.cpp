#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>

#include "ops_cpu.h"

namespace wt::cpu {

size_t topk_workspace_bytes(int64_t n, int n_threads) {
  return sizeof(uint32_t) * static_cast<size_t>(n > 0 ? n : 0) * static_cast<size_t>(n_threads);  // rank keys
}

// A float's rank as an unsigned key: a larger float has a larger key, -0 and +0 (equal as
// floats) the same key, and every NaN key 0, below -inf.
static inline uint32_t rank_key(float f) {
  if (f != f) return 0;
  if (f == 0.0f) return 0x80000000u;
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Rows are split over workers; each selects in its own part of the workspace. The k wanted
// are the first k in the order (value desc, index asc), NaN below every number, returned
// in ascending index order: every index whose value ranks above the k-th largest value t,
// then, in index order, as many of those equal to t as k leaves room for. t is found by
// nth_element over the values' rank keys (plain integers: a comparator that orders
// floats, NaN and ties by index was 5x slower, and a decode step selects once per layer).
void topk(const ThreadCtx& tc, const Tensor& x, int32_t k, int32_t* out, void* workspace) {
  const int64_t n = x.ne[0], n_rows = x.n_rows();
  if (k <= 0) return;
  const int64_t kk = k < n ? k : n;
  uint32_t* keys = static_cast<uint32_t*>(workspace) + tc.ith * n;
  int64_t r0, r1;
  tc.split(n_rows, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const float* v = x.row<float>(r % x.ne[1], r / x.ne[1]);
    int32_t* o = out + r * k;
    if (kk == n) {
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(i);
    } else {
      for (int64_t i = 0; i < n; ++i) keys[i] = rank_key(v[i]);
      std::nth_element(keys, keys + (kk - 1), keys + n, std::greater<uint32_t>());
      const uint32_t t = keys[kk - 1];
      // Every key above t is among the first kk - 1 after nth_element.
      int64_t ties = kk;
      for (int64_t i = 0; i < kk - 1; ++i) ties -= keys[i] > t;
      int64_t m = 0;
      for (int64_t i = 0; i < n && m < kk; ++i) {
        const uint32_t key = rank_key(v[i]);
        if (key > t || (key == t && ties > 0)) {
          ties -= key == t;
          o[m++] = static_cast<int32_t>(i);
        }
      }
    }
    for (int64_t i = kk; i < k; ++i) o[i] = -1;
  }
}

}  // namespace wt::cpu
