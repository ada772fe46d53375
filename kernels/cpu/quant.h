// Scalar reference code for the weight formats and for the int8 activation format matmul
// multiplies them with. Everything here is portable C++ (baseline ISA); the SIMD paths in
// matmul_*.cpp must agree with it. Weight blocks are read byte by byte at the offsets GGUF
// uses (little-endian), never through struct casts, so any alignment is fine.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/dtype.h"

namespace wt::cpu {

// ---- f16 / bf16 ------------------------------------------------------------------------

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  // round to nearest even; overflow -> inf; NaN stays NaN
inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }
uint16_t f32_to_bf16(float f);  // round to nearest even; NaN stays NaN

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// ---- weight blocks ---------------------------------------------------------------------
// Byte layouts (offsets within one block):
//   Q4_0  18 B / 32: d f16 @0, qs[16] @2      x[j] = (lo(qs[j]) - 8) d, x[j+16] = (hi(qs[j]) - 8) d
//   Q4_1  20 B / 32: d @0, m @2, qs[16] @4    x = q d + m (same nibble order)
//   Q5_0  22 B / 32: d @0, qh u32 @2, qs[16] @6: Q4_0's nibbles plus bit j of qh as bit 4 of
//        element j (j = 0..31); x = (q - 16) d
//   Q5_1  24 B / 32: d @0, m @2, qh u32 @4, qs[16] @8   x = q d + m (q = 0..31, as Q5_0)
//   Q8_0  34 B / 32: d @0, qs[32] int8 @2     x = q d
//   Q4_K 144 B / 256: d @0, dmin @2, scales[12] @4, qs[128] @16. Sub-block s (32 elems)
//        has a 6-bit scale sc and min mn (k_scale_min); x = d sc q - dmin mn, where q is the
//        low nibble of qs[32 (s/2) + i] for even s and the high nibble for odd s.
//   Q5_K 176 B / 256: as Q4_K plus qh[32] @16 (qs moves to @48); bit s of qh[i] is bit 4
//        of element i of sub-block s.
//   Q6_K 210 B / 256: ql[128] @0, qh[64] @128, scales[16] int8 @192, d @208. Element
//        p = 128 h + r: low 4 bits from ql[64 h + r % 64] >> 4 (r / 64), high 2 bits from
//        qh[32 h + r % 32] >> 2 (r / 32); x = d scales[p / 16] (q - 32).

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K block.
inline void k_scale_min(const uint8_t* scales, int s, int* sc, int* mn) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *mn = scales[s + 4] & 63;
  } else {
    *sc = (scales[s + 4] & 0xF) | ((scales[s - 4] >> 6) << 4);
    *mn = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

// k_scale_min of sub-blocks 4h .. 4h+3 at once, for the SIMD unpackers: byte t of *sc and
// *mn is the scale and min of sub-block 4h + t.
inline void k_scale_min4(const uint8_t* scales, int h, uint32_t* sc, uint32_t* mn) {
  uint32_t w[3];
  std::memcpy(w, scales, 12);
  *sc = h == 0 ? (w[0] & 0x3F3F3F3F) : ((w[2] & 0x0F0F0F0F) | ((w[0] >> 2) & 0x30303030));
  *mn = h == 0 ? (w[1] & 0x3F3F3F3F) : (((w[2] >> 4) & 0x0F0F0F0F) | ((w[1] >> 2) & 0x30303030));
}

// One 32-element block of a weight row in integer form: x[e] = d[e / 16] q[e] + m.
// q is the format's signed integer (Q4_0: nibble - 8, Q5_0: value - 16, Q6_K: value - 32,
// Q4_1/Q5_1/K: the stored value).
// d differs between the halves only for Q6_K (16-element scales); m is 0 for the symmetric
// formats. This is the form every matmul path works with, in SIMD-friendly variants.
struct WBlock {
  int8_t q[32];
  float d[2];
  float m;
};

// Block b (32 elements) of a row of a quantized type. row points at the row's first block.
void unpack_block(DType t, const uint8_t* row, int64_t b, WBlock* out);

// Dequantizes n elements (a multiple of the block size) of type t starting at src.
// Works for every DType, including F32/F16/BF16.
void dequantize(DType t, const void* src, float* dst, int64_t n);

// Quantizers for tests and tools (round to nearest; the same rules as ggml's reference).
// n is a multiple of 32.
void quantize_q4_0(const float* x, uint8_t* dst, int64_t n);
void quantize_q4_1(const float* x, uint8_t* dst, int64_t n);
void quantize_q5_0(const float* x, uint8_t* dst, int64_t n);
void quantize_q5_1(const float* x, uint8_t* dst, int64_t n);
void quantize_q8_0(const float* x, uint8_t* dst, int64_t n);

// ---- quantized activations -------------------------------------------------------------
// matmul quantizes each f32 activation row once, per block of 32, to int8 with an f32 step
// dx = amax / 127 (q = round-to-nearest-even(x / dx)). The layout is built for SIMD dot
// products whose int32 lane L sums bytes 4L..4L+3 (vpdpbusd, maddubs+madd, sdot):
//
//   A row is a sequence of chunks. A chunk holds n_vec vectors of 64 bytes, then
//   dx16[16] and sx16[16] (f32). Lane L of every vector of a chunk holds 4 consecutive
//   elements of the same "unit": a block of 32 (kind block32) or, for Q6_K whose scales
//   cover 16 elements, a half block (kind half16). So the int32 lane sums of a chunk are
//   per-unit dot products, and one multiply by dx16 (the unit's step, per lane) and by the
//   weight's scale finishes 16 lanes at once:
//       y += sum_L  isum[L] * (d_w[L] dx16[L])  +  m_w[L] sx16[L]
//   where the weight is w = d_w q + m_w (per unit) and sx16[L] = dx * sum(q of the unit)
//   divided by the lanes the unit spans (a power of two: exact), so a unit's lanes add up
//   to dx * sum(q).
//
//   block32 chunks have 16 blocks (8 vectors, one lane per block); the last chunk of a row
//   covers the remaining r blocks laid out as 2, 4 or 8 blocks (1, 2, 4 vectors; 8, 4, 2
//   lanes per block), padded with zeros. half16 chunks have 8 blocks (16 halves, 4
//   vectors) and never a tail (Q6_K rows are multiples of 256).
//   chunk_map() gives the lane -> (unit, element) assignment of each chunk shape; it is
//   what weight unpacking must reproduce, and it is chosen so that it costs a 4x4 dword
//   transpose of naturally unpacked Q4 nibbles (see matmul_avx512.cpp).

enum class ActKind : uint8_t { block32, half16 };
inline ActKind act_kind(DType wtype) { return wtype == DType::q6_k ? ActKind::half16 : ActKind::block32; }

struct ChunkMap {
  int n_blocks;          // blocks the chunk covers: 16, 8, 4, 2 (block32) or 8 (half16)
  int n_vec;             // n_blocks / 2 vectors of 64 bytes
  int lanes_per_unit;    // 1 (16 blocks, or half16), 2, 4, 8
  uint8_t block[16];     // lane -> block within the chunk
  uint8_t half[16];      // lane -> half (half16), else 0
  uint8_t unit[16];      // lane -> its unit in natural order: block (block32), 2 block + half (half16)
  uint8_t elem[8][16];   // vector, lane -> first of its 4 elements within the block (0..28)
};
const ChunkMap& chunk_map(ActKind kind, int n_blocks);

struct ActLayout {
  ActKind kind;
  int64_t n_blocks;      // k / 32
  int64_t full_blocks;   // blocks of a full chunk: 16 (block32) or 8 (half16)
  int64_t n_chunks;      // including the last one
  int64_t last_blocks;   // blocks the last chunk is laid out for (a power of two)
  int64_t chunk_bytes;   // bytes of a full chunk; chunk c starts at c * chunk_bytes
  int64_t row_bytes;     // multiple of 64
  int64_t chunk_blocks(int64_t c) const { return c + 1 < n_chunks ? full_blocks : last_blocks; }
};
ActLayout act_layout(int64_t k, ActKind kind);
inline int64_t chunk_vec_bytes(int64_t n_blocks) { return n_blocks * 32; }  // n_vec * 64

// One chunk from naturally ordered int8 blocks q[block][32] (zeros past the row), their
// steps dx[block] and half sums sum[block][2]. Every quantizer ends with this, so all
// paths produce identical bytes.
void act_store_chunk(const ActLayout& l, int64_t c, const int8_t (*q)[32], const float* dx,
                     const int32_t (*sum)[2], uint8_t* dst);

// Chunk c of a weight row in the same lane layout: n_vec vectors of (q + offset) as bytes,
// then d16 and m16 (f32) such that w = d16 (q + offset) + m16 per lane. offset 0 keeps the
// format's signed integers (Q4_0 q - 8, Q5_0 q - 16, Q6_K q - 32, Q8_0 as stored); unsigned_offset()
// makes every format's q non-negative, as vpdpbusd / maddubs want their first operand.
// Padding blocks are all zero. (Portable paths. The SIMD paths build the same vectors and
// scale values with shuffles (a zero m16 may differ in sign), each with its own offsets:
// Kernels::fill_chunk and fill_offset in matmul_impl.h.)
void weight_chunk_ref(DType t, const uint8_t* row, const ActLayout& l, int64_t c, int offset, uint8_t* dst);
inline int unsigned_offset(DType t) {
  return t == DType::q4_0 ? 8 : t == DType::q5_0 ? 16 : t == DType::q6_k ? 32 : t == DType::q8_0 ? 128 : 0;
}

// Scalar reference quantizer of one row (k a multiple of 32) into the layout above.
void quantize_act_row_ref(const float* x, int64_t k, ActKind kind, uint8_t* dst);

// Rounds a quantized activation (|v| <= 127 for finite input) to the nearest integer, ties
// to even, as cvtps2dq and fcvtns do. Non-finite input (inf / NaN rows) gives some value
// in range instead of undefined behaviour.
inline int32_t round_even(float v) {
  if (!(v >= -127.0f && v <= 127.0f)) v = v > 0.0f ? 127.0f : (v < 0.0f ? -127.0f : 0.0f);
  return static_cast<int32_t>((v + 12582912.0f) - 12582912.0f);
}

}  // namespace wt::cpu
