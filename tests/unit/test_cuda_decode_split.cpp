// How the CUDA attention_decode spreads its keys (kernels/cuda/decode_split.h): plain host
// arithmetic, checked here on every machine. Invariants: every key is in exactly one split
// (none empty), the grid covers the SMs when the keys allow, at most one split per
// kDecodeMinKeys keys, and a workspace sized for a cache covers every
// call over it on any GPU.
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/decode_split.h"

using namespace wt::cuda;

namespace {

void check_cover(int64_t n_keys, const DecodeSplit& s) {
  if (n_keys <= 0) {
    CHECK(s.n_splits == 0);
    return;
  }
  REQUIRE(s.n_splits >= 1);
  REQUIRE(s.per_split >= 1);
  // Splits [i * per, min(n, (i + 1) * per)): all keys, the last split not empty.
  CHECK((s.n_splits - 1) * s.per_split < n_keys);
  CHECK(s.n_splits * s.per_split >= n_keys);
  CHECK(s.n_splits <= decode_max_splits(n_keys));
}

}  // namespace

TEST_CASE("cuda decode split: every key in one non-empty split, for any length and GPU") {
  for (int sms : {0, 1, 8, 16, 132, 144}) {
    for (int64_t kv : {1, 2, 3, 8}) {
      for (int64_t group : {1, 3, 7, 8, 9, 20}) {
        for (int64_t n : {0, 1, 31, 32, 33, 100, 937, 4096, 8192, 8300, 32768, 131072}) {
          CAPTURE(sms);
          CAPTURE(kv);
          CAPTURE(group);
          CAPTURE(n);
          const DecodeSplit s = decode_split(n, kv, group, sms);
          check_cover(n, s);
          if (s.n_splits > 1) CHECK(s.per_split >= kDecodeMinKeys / 2);  // n / ceil(n / 32) >= 16
        }
      }
    }
  }
}

TEST_CASE("cuda decode split: the grid fills an H100 at 8k keys and a Jetson Orin at 1k") {
  // SmolLM2 (9 heads / 3 KV heads) on 132 SMs: the old split made 8 x 3 = 24 blocks at 937 keys.
  const DecodeSplit h100 = decode_split(8192, 3, 3, 132);
  // kDecodeBlocksPerSm per SM, less the few percent that equal splits may round away.
  CHECK(h100.n_splits * 3 * decode_head_tiles(3) * 100 >= 95 * kDecodeBlocksPerSm * 132);
  const DecodeSplit h100_short = decode_split(937, 3, 3, 132);
  CHECK(h100_short.n_splits * 3 >= 80);  // 30 splits of 32 keys: as many as the length allows
  CHECK(h100_short.n_splits == decode_max_splits(937));
  // Orin (16 SMs): the blocks per SM are reached before the splits get minimal.
  const DecodeSplit orin = decode_split(1024, 3, 3, 16);
  CHECK(orin.n_splits * 3 * 100 >= 95 * kDecodeBlocksPerSm * 16);
  CHECK(orin.n_splits < decode_max_splits(1024));
  CHECK(orin.per_split > kDecodeMinKeys);
  // A group wider than one block's heads adds head tiles, so fewer splits are needed.
  CHECK(decode_head_tiles(20) == 3);
  CHECK(decode_head_tiles(8) == 1);
  CHECK(decode_split(8192, 1, 20, 132).n_splits < decode_split(8192, 1, 8, 132).n_splits);
}

TEST_CASE("cuda decode split: the workspace bound is monotone and covers every device") {
  int64_t prev = 0;
  for (int64_t keys = 0; keys <= 20000; keys += 7) {
    const int64_t most = decode_max_splits(keys);
    CHECK(most >= prev);
    prev = most;
    for (int sms : {1, 16, 132, 1000}) CHECK(decode_split(keys, 2, 7, sms).n_splits <= most);
  }
  CHECK(decode_max_splits(1 << 20) == kDecodeMaxSplits);
}
