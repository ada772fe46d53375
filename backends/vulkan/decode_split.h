// How a GPU's attention_decode spreads one query over the device, flash-decoding style
// (kernels/vulkan/attention.comp ATTN_SPLIT, then attention_merge.comp): the keys are cut
// into splits of at least kDecodeMinKeys, one workgroup per (head, split), so a long
// context fills the GPU instead of running n_head workgroups. Vulkan has no portable SM
// count, so the split follows the key count alone. Host arithmetic only: the CPU unit tests
// check it (tests/unit/test_vulkan_decode_split.cpp). The lane kernels (CPU devices) do not
// split: their threads are few and a dispatch costs more than the keys.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wt::vk {

inline constexpr uint64_t kDecodeMinKeys = 128;  // keys per split at least
inline constexpr uint64_t kDecodeMaxSplits = 64;  // bounds the partials' workspace and the merge's loop

struct DecodeSplit {
  uint32_t n_splits = 0;   // < 2: one workgroup per head, no merge
  uint32_t per_split = 0;  // keys of every split but the last, which has 1..per_split
};

inline uint64_t decode_max_splits(uint64_t keys) {
  const uint64_t by_keys = keys / kDecodeMinKeys;  // rounded down: no split under kDecodeMinKeys
  return by_keys < kDecodeMaxSplits ? by_keys : kDecodeMaxSplits;
}

inline DecodeSplit decode_split(uint64_t n_keys) {
  DecodeSplit s;
  const uint64_t want = decode_max_splits(n_keys);
  if (want < 2) return s;
  const uint64_t per = (n_keys + want - 1) / want;
  s.per_split = static_cast<uint32_t>(per);
  s.n_splits = static_cast<uint32_t>((n_keys + per - 1) / per);  // <= want, none empty
  return s;
}

// The partials of n_splits splits: m, l and head_dim sums per head and split.
inline size_t split_partial_bytes(uint64_t n_splits, uint64_t n_head, uint64_t head_dim) {
  return sizeof(float) * static_cast<size_t>(n_splits * n_head * (head_dim + 2));
}

// Workspace of the partials for any call over at most `keys` keys: decode_max_splits is
// monotone, so a plan for the cache covers them all.
inline size_t decode_partial_bytes(uint64_t keys, uint64_t n_head, uint64_t head_dim) {
  const uint64_t splits = decode_max_splits(keys);
  return splits < 2 ? 0 : split_partial_bytes(splits, n_head, head_dim);
}

}  // namespace wt::vk
