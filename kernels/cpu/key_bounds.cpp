// Quest's page bounds (ops.h: KeyBoundsOp), built once per layer after the prompt; each
// decode step then reads 2 * hd halves per block and KV head instead of the block's keys
// (bound_scores.cpp). The min and max are exact in f32, then rounded outward to f16
// (kernels/f16_bound.h).
#include <bit>
#include <limits>

#include "kernels/f16_bound.h"
#include "ops_cpu.h"
#include "quant.h"

namespace wt::cpu {

size_t key_bounds_workspace_bytes(int64_t head_dim, int n_threads) {
  return sizeof(float) * static_cast<size_t>(3 * head_dim * n_threads);  // a key, the min, the max
}

// (block, KV head) pairs split over the workers, each owning its dst rows.
void key_bounds(const ThreadCtx& tc, const Tensor& dst, const Tensor& k, int32_t block, void* workspace,
                const int32_t* key_ids, int32_t n_keys) {
  const int64_t hd = k.ne[0], n_head_kv = k.ne[1], n = key_ids ? n_keys : k.ne[2];
  const int64_t n_blocks = (n + block - 1) / block;
  float* krow = static_cast<float*>(workspace) + tc.ith * 3 * hd;  // a key of an f16 or q8_0 cache as f32
  int64_t i0, i1;
  tc.split(n_blocks * n_head_kv, &i0, &i1);
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t b = i / n_head_kv, g = i % n_head_kv;
    float* lo = krow + hd;  // the block's exact min and max, then stored outward
    float* hi = lo + hd;
    for (int64_t d = 0; d < hd; ++d) {
      lo[d] = std::numeric_limits<float>::infinity();
      hi[d] = -std::numeric_limits<float>::infinity();
    }
    const int64_t end = (b + 1) * block < n ? (b + 1) * block : n;
    for (int64_t i = b * block; i < end; ++i) {
      const int64_t r = key_ids ? key_ids[i] : i;
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
    uint16_t* out = dst.row<uint16_t>(g, b);
    for (int64_t d = 0; d < hd; ++d) {
      out[d] = f16_bound_bits(std::bit_cast<uint32_t>(lo[d]), /*up=*/false);
      out[hd + d] = f16_bound_bits(std::bit_cast<uint32_t>(hi[d]), /*up=*/true);
    }
  }
}

}  // namespace wt::cpu
