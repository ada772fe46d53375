// Random K-quant blocks for tests that need K-quant weights without a K-quant quantizer
// (kernels/cpu/quant.h reads Q4_K, Q5_K and Q6_K but writes none): every byte pattern is a
// valid block once its f16 scales are finite, so the quants and 6-bit scales are random
// bytes and the f16 super-block scales are set small, which keeps |x| below about 0.5.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace wt::test {

// type: the GGUF / DType id (12 Q4_K, 13 Q5_K, 14 Q6_K); dst holds n_blocks blocks of 256.
// Returns false for another type (nothing written).
inline bool fill_random_kquant(uint32_t type, uint8_t* dst, size_t n_blocks, std::mt19937& rng) {
  const size_t bytes = type == 12 ? 144 : type == 13 ? 176 : type == 14 ? 210 : 0;
  if (bytes == 0) return false;
  for (size_t i = 0; i < n_blocks * bytes; ++i) dst[i] = static_cast<uint8_t>(rng() & 0xFF);
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = dst + b * bytes;
    if (type == 14) {
      // Q6_K: int8 scales kept within -16..15, d (f16 @208) about 0.001 (0x1419 = 0.00101).
      for (int s = 0; s < 16; ++s) blk[192 + s] = static_cast<uint8_t>(static_cast<int>(rng() % 32) - 16);
      blk[208] = 0x19;
      blk[209] = 0x14;
    } else {
      // Q4_K / Q5_K: d about 0.0002 (0x0A8E = 0.000202) times 6-bit scales up to 63 times
      // quants up to 31, dmin about 0.0001 (0x068E) times mins up to 63.
      blk[0] = 0x8E;
      blk[1] = 0x0A;
      blk[2] = 0x8E;
      blk[3] = 0x06;
    }
  }
  return true;
}

}  // namespace wt::test
