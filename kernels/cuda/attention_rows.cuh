// What the two attention_prefill kernels share (attention.cu: f32; attention_mma.cu: tensor
// cores): their arguments and the row numbering. A tile's rows are (position, head of the KV
// head's group) pairs numbered L = t * G + h, so every row of a tile reads the same keys; with
// skip flags t runs over the kept rows only (packed by attention.cu's first kernel), and each
// block zeroes the flagged rows of its stretch of all rows.
#pragma once

#include "warp.cuh"

namespace wt::cuda {

struct AttnArgs {
  RowView dst, q, k, v;
  int hd;
  int group;           // G = n_head / n_head_kv
  int64_t n;           // query rows
  int64_t pos0;        // position of row 0
  float scale;
  const int32_t* ids;  // skip flags [n] (or null)
  const int32_t* kept; // with flags: [0] = n_kept, [1 + r] = kept row r
  int64_t window;      // > 0: row t sees keys pos0 + t - window + 1 .. pos0 + t (attention.cu's kernel only)
};

// (position, head) rows of this KV head the kernels run: all, or the kept ones.
__device__ __forceinline__ int64_t prefill_rows(const AttnArgs& a) { return (a.kept ? a.kept[0] : a.n) * a.group; }

// Query row (index into q's third dimension) of row L.
__device__ __forceinline__ int64_t prefill_row_t(const AttnArgs& a, int64_t L) {
  return a.kept ? a.kept[1 + L / a.group] : L / a.group;
}

// Zeroes the flagged rows among all rows [row_base, row_base + rows) of KV head g: the
// threads of the block share the elements.
__device__ __forceinline__ void zero_skipped_rows(const AttnArgs& a, int64_t g, int64_t row_base, int rows) {
  if (!a.ids) return;
  const int hd = a.hd;
  for (int e = threadIdx.x; e < rows * hd; e += blockDim.x) {
    const int64_t L = row_base + e / hd;
    if (L >= a.n * a.group) break;
    const int64_t t = L / a.group;
    if (a.ids[t] != 0) row_at(a.dst.data, a.dst.nb1, a.dst.nb2, g * a.group + L % a.group, t)[e % hd] = 0.0f;
  }
}

}  // namespace wt::cuda
