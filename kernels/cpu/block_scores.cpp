#include <cmath>

#include "ops_cpu.h"
#include "quant.h"

namespace wt::cpu {

namespace {

float dot(const float* a, const float* b, int64_t n) {
  // Eight partial sums: without -ffast-math the compiler may not reorder a float sum.
  float s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

size_t block_scores_workspace_bytes(int64_t head_dim, int64_t n_head, int n_threads) {
  return sizeof(float) * static_cast<size_t>(head_dim * (n_head + 2 * n_threads));
}

// Two phases: the mean query per head (split over heads, then a barrier), then blocks
// split over workers, each owning its dst entries. A unit key is averaged once per KV
// head and dotted with the G query heads that read it.
void block_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                  const BlockScoresParams& p, void* workspace) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n = q.ne[2], n_head_kv = k.ne[1];
  const int64_t group = n_head / n_head_kv;
  const int64_t n_keys = p.ids ? p.n_ids : k.ne[2];
  const int64_t n_last = p.n_last > 0 && p.n_last <= n ? p.n_last : n;
  const int64_t block = p.block > 0 ? p.block : 1, unit = p.unit > 0 ? p.unit : 1;
  float* qbar = static_cast<float*>(workspace);  // [n_head][hd]
  float* ukey = qbar + n_head * hd + tc.ith * 2 * hd;
  float* krow = ukey + hd;  // a key row of an f16 or q8_0 cache as f32

  int64_t h0, h1;
  tc.split(n_head, &h0, &h1);
  for (int64_t h = h0; h < h1; ++h) {
    float* qb = qbar + h * hd;
    for (int64_t d = 0; d < hd; ++d) qb[d] = 0.0f;
    for (int64_t r = n - n_last; r < n; ++r) {
      const float* qr = q.row<float>(h, r);
      for (int64_t d = 0; d < hd; ++d) qb[d] += qr[d];
    }
    const float inv = 1.0f / static_cast<float>(n_last);
    for (int64_t d = 0; d < hd; ++d) qb[d] *= inv;
  }
  tc.sync();

  const int64_t n_blocks = (n_keys + block - 1) / block;
  const float inv_heads = 1.0f / static_cast<float>(n_head);
  int64_t b0, b1;
  tc.split(n_blocks, &b0, &b1);
  float* out = static_cast<float*>(dst.data);
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t block_end = (b + 1) * block < n_keys ? (b + 1) * block : n_keys;
    float best = 0.0f;  // scores are >= 0 and every block has a unit
    for (int64_t us = b * block; us < block_end; us += unit) {
      const int64_t ue = us + unit < block_end ? us + unit : block_end;
      const float inv = 1.0f / static_cast<float>(ue - us);
      float score = 0.0f;
      for (int64_t g = 0; g < n_head_kv; ++g) {
        for (int64_t d = 0; d < hd; ++d) ukey[d] = 0.0f;
        for (int64_t r = us; r < ue; ++r) {
          const int64_t row = p.ids ? p.ids[r] : r;
          const float* kr = k.row<float>(g, row);
          if (k.type != DType::f32) {  // an f16 or q8_0 KV cache (decode-time re-selection)
            dequantize(k.type, k.row<char>(g, row), krow, hd);
            kr = krow;
          }
          for (int64_t d = 0; d < hd; ++d) ukey[d] += kr[d];
        }
        for (int64_t d = 0; d < hd; ++d) ukey[d] *= inv;
        for (int64_t h = 0; h < group; ++h) score += std::fabs(dot(qbar + (g * group + h) * hd, ukey, hd));
      }
      score *= inv_heads;
      best = score > best ? score : best;
    }
    out[b] = best;
  }
}

}  // namespace wt::cpu
