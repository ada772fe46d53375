// How attention_decode (attention_decode.cu) spreads one query row over the GPU,
// flash-decoding style: the keys are cut into splits, one block per (split, KV head, tile of
// up to kDecodeHeads query heads of that KV head's group), each leaving a partial softmax
// (max, sum, weighted values) that a merge kernel combines. Host arithmetic only, so the CPU
// unit tests check it (tests/unit/test_cuda_decode_split.cpp) on machines without a GPU.
#pragma once

#include <cstdint>

namespace wt::cuda {

inline constexpr int kDecodeHeads = 8;            // query heads per block (registers: 2 x 8 x head dims / lane)
inline constexpr int64_t kDecodeMinKeys = 32;     // keys per split at least: below, launch cost dominates
inline constexpr int64_t kDecodeMaxSplits = 256;  // splits at most: bounds the partials' workspace
// Blocks wanted per SM: decode is latency-bound, so many short blocks whose loads are in
// flight together beat few long ones (an H200 at 2 per SM spent 18 us per layer on 960 keys,
// ncu); 4 keeps the merge's splits (and its loop) short enough too.
inline constexpr int64_t kDecodeBlocksPerSm = 4;

struct DecodeSplit {
  int64_t n_splits = 0;   // 0 when there are no keys (the merge then writes zeros)
  int64_t per_split = 0;  // keys of every split but the last, which has 1..per_split
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Head tiles per KV head: blocks along the group.
inline int64_t decode_head_tiles(int64_t group) { return ceil_div(group > 0 ? group : 1, kDecodeHeads); }

// The most splits any device uses for `keys` keys: monotone in keys, so a workspace sized for
// the cache's rows covers every call over that cache.
inline int64_t decode_max_splits(int64_t keys) {
  if (keys <= 0) return 0;
  const int64_t by_keys = ceil_div(keys, kDecodeMinKeys);
  return by_keys < kDecodeMaxSplits ? by_keys : kDecodeMaxSplits;
}

// Splits for n_keys keys on sm_count SMs: about enough that the grid (splits x n_head_kv x
// head tiles) covers kDecodeBlocksPerSm blocks per SM (equal splits, rounded up, may leave a
// few percent fewer), never more than decode_max_splits, none empty. A short context on a
// small GPU gets one split per KV head.
inline DecodeSplit decode_split(int64_t n_keys, int64_t n_head_kv, int64_t group, int sm_count) {
  DecodeSplit s;
  if (n_keys <= 0 || n_head_kv <= 0) return s;
  const int64_t per_split_blocks = n_head_kv * decode_head_tiles(group);
  const int64_t sms = sm_count > 0 ? sm_count : 16;
  int64_t want = ceil_div(sms * kDecodeBlocksPerSm, per_split_blocks);
  const int64_t most = decode_max_splits(n_keys);
  want = want < most ? want : most;
  want = want > 1 ? want : 1;
  s.per_split = ceil_div(n_keys, want);
  s.n_splits = ceil_div(n_keys, s.per_split);  // <= want; the last split is not empty
  return s;
}

}  // namespace wt::cuda
