// How a GPU's Vulkan attention_decode spreads its keys (backends/vulkan/decode_split.h):
// plain host arithmetic, checked here on every machine. Invariants: every key is in exactly
// one split (none empty), splits of kDecodeMinKeys keys or more (the last may be shorter), at most
// kDecodeMaxSplits, and the workspace planned for a cache covers every call over it.
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>

#include "backends/vulkan/decode_split.h"

using namespace wt::vk;

TEST_CASE("vulkan decode split: splits cover every key once and the plan for a cache covers each call") {
  for (uint64_t n_keys : {0ull, 1ull, 127ull, 128ull, 129ull, 256ull, 257ull, 937ull, 4096ull, 8191ull, 8192ull,
                          8193ull, 32768ull, 1ull << 20}) {
    CAPTURE(n_keys);
    const DecodeSplit s = decode_split(n_keys);
    if (n_keys < 2 * kDecodeMinKeys) {
      CHECK(s.n_splits < 2);  // one workgroup per head: nothing to merge
      CHECK(decode_partial_bytes(n_keys, 9, 64) == 0);
      continue;
    }
    REQUIRE(s.n_splits >= 2);
    CHECK(s.n_splits <= kDecodeMaxSplits);
    CHECK(s.per_split >= kDecodeMinKeys);
    // Splits [i * per, min(n, (i + 1) * per)): all keys, the last split not empty.
    CHECK(uint64_t{s.n_splits - 1} * s.per_split < n_keys);
    CHECK(uint64_t{s.n_splits} * s.per_split >= n_keys);
    // The partials of this call fit the workspace planned for a cache of n_keys rows or more.
    const size_t used = split_partial_bytes(s.n_splits, 9, 64);
    CHECK(used <= decode_partial_bytes(n_keys, 9, 64));
    CHECK(decode_partial_bytes(n_keys, 9, 64) <= decode_partial_bytes(n_keys + 1000, 9, 64));
  }
  CHECK(decode_split(8192).n_splits == kDecodeMaxSplits);  // long contexts: 64 x n_head workgroups
  CHECK(decode_split(300).n_splits == 2);
}
