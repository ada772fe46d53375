// Quest's page bounds and the upper-bound scores a decode step's query gives them (ops.h:
// KeyBoundsOp, BoundScoresOp). The bounds are built once per layer after the prompt; each
// decode step then reads 2 * hd floats per block and KV head instead of the block's keys.
#include <cmath>
#include <limits>

#include "ops_cpu.h"
#include "quant.h"

namespace wt::cpu {

size_t key_bounds_workspace_bytes(int64_t head_dim, int n_threads) {
  return sizeof(float) * static_cast<size_t>(head_dim * n_threads);
}

// (block, KV head) pairs split over the workers, each owning its dst rows.
void key_bounds(const ThreadCtx& tc, const Tensor& dst, const Tensor& k, int32_t block, void* workspace) {
  const int64_t hd = k.ne[0], n_head_kv = k.ne[1], n = k.ne[2];
  const int64_t n_blocks = (n + block - 1) / block;
  float* krow = static_cast<float*>(workspace) + tc.ith * hd;  // a key of an f16 or q8_0 cache as f32
  int64_t i0, i1;
  tc.split(n_blocks * n_head_kv, &i0, &i1);
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t b = i / n_head_kv, g = i % n_head_kv;
    float* lo = dst.row<float>(g, b);
    float* hi = lo + hd;
    for (int64_t d = 0; d < hd; ++d) {
      lo[d] = std::numeric_limits<float>::infinity();
      hi[d] = -std::numeric_limits<float>::infinity();
    }
    const int64_t end = (b + 1) * block < n ? (b + 1) * block : n;
    for (int64_t r = b * block; r < end; ++r) {
      const float* kr = k.row<float>(g, r);
      if (k.type != DType::f32) {
        dequantize(k.type, k.row<char>(g, r), krow, hd);
        kr = krow;
      }
      for (int64_t d = 0; d < hd; ++d) {
        lo[d] = kr[d] < lo[d] ? kr[d] : lo[d];
        hi[d] = kr[d] > hi[d] ? kr[d] : hi[d];
      }
    }
  }
}

size_t bound_scores_workspace_bytes(int64_t n_head, int64_t n_blocks) {
  return sizeof(float) * static_cast<size_t>(n_head * n_blocks);
}

// Two phases: heads split over the workers, each writing its head's log-softmax over the
// blocks into the workspace; then blocks split, each the log of the heads' summed softmax.
void bound_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& bounds, float scale,
                  void* workspace) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n_blocks = dst.ne[0];
  const int64_t group = n_head / bounds.ne[1];
  float* logp = static_cast<float*>(workspace);  // [n_head][n_blocks]
  int64_t h0, h1;
  tc.split(n_head, &h0, &h1);
  for (int64_t h = h0; h < h1; ++h) {
    const float* qh = q.row<float>(h, q.ne[2] - 1);
    float* u = logp + h * n_blocks;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float* lo = bounds.row<float>(h / group, b);
      const float* hi = lo + hd;
      // Four partial sums: without -ffast-math the compiler keeps a float sum in order.
      float s[4] = {};
      int64_t d = 0;
      for (; d + 4 <= hd; d += 4)
        for (int j = 0; j < 4; ++j) {
          const float a = qh[d + j] * lo[d + j], c = qh[d + j] * hi[d + j];
          s[j] += a > c ? a : c;
        }
      for (; d < hd; ++d) {
        const float a = qh[d] * lo[d], c = qh[d] * hi[d];
        s[0] += a > c ? a : c;
      }
      u[b] = scale * ((s[0] + s[1]) + (s[2] + s[3]));
      top = u[b] > top ? u[b] : top;
    }
    float sum = 0.0f;
    for (int64_t b = 0; b < n_blocks; ++b) sum += std::exp(u[b] - top);
    const float lse = top + std::log(sum);
    for (int64_t b = 0; b < n_blocks; ++b) u[b] -= lse;
  }
  tc.sync();
  int64_t b0, b1;
  tc.split(n_blocks, &b0, &b1);
  float* out = static_cast<float*>(dst.data);
  for (int64_t b = b0; b < b1; ++b) {
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t h = 0; h < n_head; ++h) top = logp[h * n_blocks + b] > top ? logp[h * n_blocks + b] : top;
    float sum = 0.0f;
    for (int64_t h = 0; h < n_head; ++h) sum += std::exp(logp[h * n_blocks + b] - top);
    out[b] = top + std::log(sum);
  }
}

}  // namespace wt::cpu
