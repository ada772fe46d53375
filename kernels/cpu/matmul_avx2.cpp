// AVX2 + FMA + F16C matmul path (chosen at run time when AVX-512 VNNI is missing).
//
// Same scheme as matmul_avx512.cpp on 256-bit vectors: a tile of weight rows is unpacked
// into the activation chunk layout (quant.h) in an L1 cache, one panel of 64 blocks at a
// time, and every activation row is run against it. A 64-byte layout vector is processed
// as two 32-byte halves (lanes 0..7 and 8..15). The int8 dot product is maddubs (u8 x s8
// -> pairs summed to s16) and madd with ones (-> s32); as many maddubs results are summed
// in 16 bits as cannot overflow (8 for 4-bit weights, 4 for 5-bit ones, 2 for Q6_K). Q8_0 keeps
// signed weights and uses the sign trick, maddubs(|w|, sign(x, w)), since w + 128 times
// x could overflow 16 bits. Decode is the same code with one activation row, so results
// never depend on the batch or the thread split.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "matmul_impl.h"
#include "quant.h"

// See matmul_avx512.cpp: the target is set after the includes so header inline functions
// stay baseline code.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace wt::cpu::mm {
namespace {

#define WT_INLINE inline __attribute__((always_inline))

constexpr int64_t kPanelBlocks = 64;
constexpr int kMR = 2;                    // weight rows per register tile
constexpr int kNR = 4;                    // activation rows per register tile
constexpr int64_t kCacheRowBytes = 3072;  // one panel of a weight row (see avx512)

// ---- unpacking every quantized format with vectors ------------------------------------
// A natural group: blocks 0,1 (half 0) and 2,3 (half 1) of 4, elements 0..15 in lo and
// 16..31 in hi, one block per 128-bit lane; d and m per block.

struct Group {
  __m256i lo[2], hi[2];
  __m128 d, m;
};

WT_INLINE __m256i load2x128(const uint8_t* a, const uint8_t* b) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
}

// Q4_0 / Q4_1: nibbles of 16 bytes per block; u8 q, m = -8 d (Q4_0) or the stored min.
template <bool kMin>
WT_INLINE Group group_q4(const uint8_t* row, int64_t g, int nv) {
  constexpr int bb = kMin ? 20 : 18, hdr = kMin ? 4 : 2;
  const uint8_t* p = row + g * 4 * bb;
  alignas(16) uint8_t tmp[4][16] = {};
  uint16_t d[4] = {0, 0, 0, 0}, m[4] = {0, 0, 0, 0};
  const uint8_t* qs[4];
  for (int b = 0; b < 4; ++b) {
    if (b < nv) {
      qs[b] = p + b * bb + hdr;
      d[b] = load_u16(p + b * bb);
      if (kMin) m[b] = load_u16(p + b * bb + 2);
    } else {
      qs[b] = tmp[b];  // zero weights for padding blocks
    }
  }
  const __m256i mask = _mm256_set1_epi8(0x0F);
  Group o;
  for (int h = 0; h < 2; ++h) {
    const __m256i v = load2x128(qs[2 * h], qs[2 * h + 1]);
    o.lo[h] = _mm256_and_si256(v, mask);
    o.hi[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
  }
  o.d = _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(d[0]), static_cast<short>(d[1]), static_cast<short>(d[2]),
                                    static_cast<short>(d[3]), 0, 0, 0, 0));
  o.m = kMin ? _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(m[0]), static_cast<short>(m[1]), static_cast<short>(m[2]),
                                           static_cast<short>(m[3]), 0, 0, 0, 0))
             : _mm_mul_ps(o.d, _mm_set1_ps(-8.0f));
  return o;
}

// Q5_0 / Q5_1: as Q4_0 / Q4_1 (qs at byte 6 / 8) plus bit 4 of element j from bit j of the
// block's 32-bit qh (at byte 2 / 4): a byte shuffle spreads qh bytes 0, 1 (elements 0..15)
// or 2, 3 (16..31) over each 128-bit lane and a compare against each byte's bit selects 16.
// u8 q = value (Q5_0: + 16), m = -16 d (Q5_0) or the stored min.
template <bool kMin>
WT_INLINE Group group_q5(const uint8_t* row, int64_t g, int nv) {
  constexpr int bb = kMin ? 24 : 22, hq = kMin ? 4 : 2, hs = kMin ? 8 : 6;
  const uint8_t* p = row + g * 4 * bb;
  alignas(16) uint8_t tmp[4][16] = {};
  uint16_t d[4] = {0, 0, 0, 0}, m[4] = {0, 0, 0, 0};
  uint32_t qh[4] = {0, 0, 0, 0};
  const uint8_t* qs[4];
  for (int b = 0; b < 4; ++b) {
    if (b < nv) {
      qs[b] = p + b * bb + hs;
      d[b] = load_u16(p + b * bb);
      if (kMin) m[b] = load_u16(p + b * bb + 2);
      std::memcpy(&qh[b], p + b * bb + hq, 4);
    } else {
      qs[b] = tmp[b];  // zero weights for padding blocks
    }
  }
  const __m256i mask = _mm256_set1_epi8(0x0F);
  const __m256i sel = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i idx_lo = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                          1, 1, 1, 1, 1, 1, 1);
  const __m256i idx_hi = _mm256_add_epi8(idx_lo, _mm256_set1_epi8(2));
  const __m256i sixteen = _mm256_set1_epi8(16);
  Group o;
  for (int h = 0; h < 2; ++h) {
    const __m256i v = load2x128(qs[2 * h], qs[2 * h + 1]);
    const __m256i hv = _mm256_setr_epi32(static_cast<int>(qh[2 * h]), 0, 0, 0, static_cast<int>(qh[2 * h + 1]), 0, 0, 0);
    const __m256i blo = _mm256_and_si256(_mm256_shuffle_epi8(hv, idx_lo), sel);
    const __m256i bhi = _mm256_and_si256(_mm256_shuffle_epi8(hv, idx_hi), sel);
    o.lo[h] = _mm256_or_si256(_mm256_and_si256(v, mask), _mm256_and_si256(_mm256_cmpeq_epi8(blo, sel), sixteen));
    o.hi[h] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask),
                              _mm256_and_si256(_mm256_cmpeq_epi8(bhi, sel), sixteen));
  }
  o.d = _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(d[0]), static_cast<short>(d[1]), static_cast<short>(d[2]),
                                    static_cast<short>(d[3]), 0, 0, 0, 0));
  o.m = kMin ? _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(m[0]), static_cast<short>(m[1]), static_cast<short>(m[2]),
                                           static_cast<short>(m[3]), 0, 0, 0, 0))
             : _mm_mul_ps(o.d, _mm_set1_ps(-16.0f));
  return o;
}

// Q8_0: signed weights as stored (m = 0); the kernel applies the sign trick.
WT_INLINE Group group_q8(const uint8_t* row, int64_t g, int nv) {
  const uint8_t* p = row + g * 136;
  __m256i y[4];
  uint16_t d[4] = {0, 0, 0, 0};
  for (int b = 0; b < 4; ++b) {
    y[b] = b < nv ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 34 * b + 2)) : _mm256_setzero_si256();
    if (b < nv) d[b] = load_u16(p + 34 * b);
  }
  Group o;
  for (int h = 0; h < 2; ++h) {
    o.lo[h] = _mm256_permute2x128_si256(y[2 * h], y[2 * h + 1], 0x20);
    o.hi[h] = _mm256_permute2x128_si256(y[2 * h], y[2 * h + 1], 0x31);
  }
  o.d = _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(d[0]), static_cast<short>(d[1]), static_cast<short>(d[2]),
                                    static_cast<short>(d[3]), 0, 0, 0, 0));
  o.m = _mm_setzero_ps();
  return o;
}

// Q4_K / Q5_K: group g is half h of super-block g / 2 (sub-blocks 4h .. 4h+3, always
// whole: K-quant rows are multiples of 256). Of the half's 64 bytes of qs, the first 32
// hold sub-blocks 4h, 4h+1 as low / high nibbles, the next 32 sub-blocks 4h+2, 4h+3. Q5_K:
// bit 4h + t of qh[i] is bit 4 of element i of local sub-block t. d = d sc, m = -dmin mn
// per sub-block, computed as unpack_block does (the same f32 products).
template <bool kFive>
WT_INLINE Group group_qk(const uint8_t* row, int64_t g) {
  const uint8_t* p = row + (g >> 1) * (kFive ? 176 : 144);
  const int h = static_cast<int>(g & 1);
  const __m256i mask = _mm256_set1_epi8(0x0F);
  Group o;
  for (int q = 0; q < 2; ++q) {  // local sub-blocks 2q (low nibbles) and 2q + 1 (high)
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + (kFive ? 48 : 16) + 64 * h + 32 * q));
    const __m256i ln = _mm256_and_si256(v, mask), hn = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    o.lo[q] = _mm256_permute2x128_si256(ln, hn, 0x20);  // [2q: 0..15 | 2q+1: 0..15]
    o.hi[q] = _mm256_permute2x128_si256(ln, hn, 0x31);  // [2q: 16..31 | 2q+1: 16..31]
    if constexpr (kFive) {
      const int s = 4 * h + 2 * q;  // qh bits s (128-bit lane 0) and s + 1 (lane 1)
      const long long b0 = static_cast<long long>(0x0101010101010101ull << s), b1 = static_cast<long long>(0x0101010101010101ull << (s + 1));
      const __m256i sel = _mm256_setr_epi64x(b0, b0, b1, b1);
      const __m256i sixteen = _mm256_set1_epi8(16);
      const __m256i qh0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
      const __m256i qh1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32)));
      o.lo[q] = _mm256_or_si256(o.lo[q], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh0, sel), sel), sixteen));
      o.hi[q] = _mm256_or_si256(o.hi[q], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh1, sel), sel), sixteen));
    }
  }
  uint32_t sc, mn;  // 6-bit scales and mins of sub-blocks 4h..4h+3, a byte each
  k_scale_min4(p + 4, h, &sc, &mn);
  const __m128 scf = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(sc))));
  const __m128 mnf = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(mn))));
  o.d = _mm_mul_ps(_mm_set1_ps(_cvtsh_ss(load_u16(p))), scf);
  o.m = _mm_xor_ps(_mm_mul_ps(_mm_set1_ps(_cvtsh_ss(load_u16(p + 2))), mnf), _mm_set1_ps(-0.0f));
  return o;
}

// Q6_K: group g is half h of super-block g / 2, local sub-block t = elements 32t .. 32t+31
// of the half: low nibbles of ql[64h + 32 (t % 2) + i] (t < 2) or high ones (t >= 2), 2 high
// bits from qh[32h + i] >> 2t. Scales cover 16 elements, so d and m are per half block
// (lanes [t0 lo, t0 hi, t1 lo, ...]); q is the stored 6-bit value (signed value + 32), so
// m = -32 d.
struct Group6 {
  __m256i lo[2], hi[2];
  __m256 d, m;
};

WT_INLINE Group6 group_q6k(const uint8_t* row, int64_t g) {
  const uint8_t* p = row + (g >> 1) * 210;
  const int h = static_cast<int>(g & 1);
  const __m256i mask = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h));       // t = 0 | 2
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h + 32));  // t = 1 | 3
  const __m256i la = _mm256_and_si256(a, mask), ha = _mm256_and_si256(_mm256_srli_epi16(a, 4), mask);
  const __m256i lb = _mm256_and_si256(b, mask), hb = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
  const __m256i qh0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 128 + 32 * h)));
  const __m256i qh1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 144 + 32 * h)));
  Group6 o;
  for (int q = 0; q < 2; ++q) {  // local sub-blocks 2q (128-bit lane 0) and 2q + 1 (lane 1)
    // Shifting dwords by at most 6 keeps each byte's two bits within the byte.
    const __m256i shift = _mm256_setr_epi32(4 * q, 4 * q, 4 * q, 4 * q, 4 * q + 2, 4 * q + 2, 4 * q + 2, 4 * q + 2);
    const __m256i b0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srlv_epi32(qh0, shift), three), 4);
    const __m256i b1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srlv_epi32(qh1, shift), three), 4);
    const __m256i x = q == 0 ? la : ha, y = q == 0 ? lb : hb;
    o.lo[q] = _mm256_or_si256(_mm256_permute2x128_si256(x, y, 0x20), b0);
    o.hi[q] = _mm256_or_si256(_mm256_permute2x128_si256(x, y, 0x31), b1);
  }
  const __m128i sc8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 192 + 8 * h));
  o.d = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(load_u16(p + 208))), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
  o.m = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(_mm256_set1_ps(32.0f), o.d));  // as weight_chunk_ref
  return o;
}

WT_INLINE void transpose4(__m256i a, __m256i b, __m256i c, __m256i d, __m256i* out, int stride) {
  const __m256i t0 = _mm256_unpacklo_epi32(a, b), t1 = _mm256_unpackhi_epi32(a, b);
  const __m256i t2 = _mm256_unpacklo_epi32(c, d), t3 = _mm256_unpackhi_epi32(c, d);
  out[0] = _mm256_unpacklo_epi64(t0, t2);
  out[stride] = _mm256_unpackhi_epi64(t0, t2);
  out[2 * stride] = _mm256_unpacklo_epi64(t1, t3);
  out[3 * stride] = _mm256_unpackhi_epi64(t1, t3);
}

// d16[L] = d[idx[L]] and m16[L] = m[idx[L]] of 16 values in natural order (lo: 0..7, hi:
// 8..15), stored as the chunk's two f32 vectors: two 8-lane permutes and a blend per half.
WT_INLINE void store_scales(const uint8_t* idx16, __m256 d_lo, __m256 d_hi, __m256 m_lo, __m256 m_hi, float* d16) {
  for (int h = 0; h < 2; ++h) {
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(idx16 + 8 * h)));
    const __m256 hi = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));  // sign bit set where idx >= 8
    _mm256_storeu_ps(d16 + 8 * h, _mm256_blendv_ps(_mm256_permutevar8x32_ps(d_lo, idx),
                                                   _mm256_permutevar8x32_ps(d_hi, idx), hi));
    _mm256_storeu_ps(d16 + 16 + 8 * h, _mm256_blendv_ps(_mm256_permutevar8x32_ps(m_lo, idx),
                                                        _mm256_permutevar8x32_ps(m_hi, idx), hi));
  }
}

WT_INLINE __m256 cat(__m128 lo, __m128 hi) { return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1); }

template <DType T>  // the block32 formats
WT_INLINE Group load_group(const uint8_t* row, int64_t g, int nv) {
  if constexpr (T == DType::q4_k || T == DType::q5_k) return group_qk<T == DType::q5_k>(row, g);
  else if constexpr (T == DType::q8_0) return group_q8(row, g, nv);
  else if constexpr (T == DType::q5_0 || T == DType::q5_1) return group_q5<T == DType::q5_1>(row, g, nv);
  else return group_q4<T == DType::q4_1>(row, g, nv);
}

// Chunk c of NV vectors (2 NV blocks) of a row into the cache, in the layout of chunk_map
// (see quant.h). Everything stays in registers up to the stores: scales gathered through a
// stack array stalled on store forwarding (4-lane stores read back as 8 lanes).
template <DType T, int NV>
WT_INLINE void fill_chunk_nv(const uint8_t* row, const ActLayout& l, int64_t c, const ChunkMap& map, uint8_t* dst) {
  constexpr int kGroups = NV >= 2 ? NV / 2 : 1;
  const int64_t g0 = c * 4;  // 16 blocks = 4 groups per full chunk
  Group g[kGroups];
  if (4 * (g0 + kGroups) <= l.n_blocks) {  // every block present (the common case)
    for (int t = 0; t < kGroups; ++t) g[t] = load_group<T>(row, g0 + t, 4);
  } else {
    for (int t = 0; t < kGroups; ++t)
      g[t] = load_group<T>(row, g0 + t, static_cast<int>(std::min<int64_t>(4, l.n_blocks - 4 * (g0 + t))));
  }
  __m256i* v = reinterpret_cast<__m256i*>(dst);  // vector q, half h at v[2 q + h]
  for (int h = 0; h < 2; ++h) {
    if constexpr (NV == 8) {
      transpose4(g[0].lo[h], g[1].lo[h], g[2].lo[h], g[3].lo[h], v + h, 2);
      transpose4(g[0].hi[h], g[1].hi[h], g[2].hi[h], g[3].hi[h], v + 8 + h, 2);
    } else if constexpr (NV == 4) {
      v[0 + h] = _mm256_unpacklo_epi64(g[0].lo[h], g[1].lo[h]);
      v[2 + h] = _mm256_unpackhi_epi64(g[0].lo[h], g[1].lo[h]);
      v[4 + h] = _mm256_unpacklo_epi64(g[0].hi[h], g[1].hi[h]);
      v[6 + h] = _mm256_unpackhi_epi64(g[0].hi[h], g[1].hi[h]);
    } else if constexpr (NV == 2) {
      v[0 + h] = g[0].lo[h];
      v[2 + h] = g[0].hi[h];
    } else {  // 2 blocks: [lo of blocks 0,1 | hi of blocks 0,1]
      v[h] = h == 0 ? g[0].lo[0] : g[0].hi[0];
    }
  }
  // d16 / m16: lane L takes block map.unit[L] of the natural order (blocks 0..15).
  __m256 d_lo = cat(g[0].d, _mm_setzero_ps()), m_lo = cat(g[0].m, _mm_setzero_ps());
  __m256 d_hi = _mm256_setzero_ps(), m_hi = _mm256_setzero_ps();
  if constexpr (kGroups >= 2) {
    d_lo = cat(g[0].d, g[1].d);
    m_lo = cat(g[0].m, g[1].m);
  }
  if constexpr (kGroups == 4) {
    d_hi = cat(g[2].d, g[3].d);
    m_hi = cat(g[2].m, g[3].m);
  }
  store_scales(map.unit, d_lo, d_hi, m_lo, m_hi, reinterpret_cast<float*>(dst + 64 * NV));
}

// Q6_K's chunk (half16: 8 blocks, 16 half-block lanes, 4 vectors) from two groups: the
// 4x4 dword transpose of the low and high halves of each 128-bit lane (see make_map).
void fill_chunk_q6k(const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst) {
  const ChunkMap& map = chunk_map(l.kind, static_cast<int>(l.chunk_blocks(c)));
  const Group6 a = group_q6k(row, 2 * c), b = group_q6k(row, 2 * c + 1);
  __m256i* v = reinterpret_cast<__m256i*>(dst);  // vector q, half h at v[2 q + h]
  for (int h = 0; h < 2; ++h) transpose4(a.lo[h], a.hi[h], b.lo[h], b.hi[h], v + h, 2);
  store_scales(map.unit, a.d, b.d, a.m, b.m, reinterpret_cast<float*>(dst + 64 * map.n_vec));
}

// Chunk c of a row of type T into dst: Q6_K's one shape, or the vectors the chunk has.
template <DType T>
void fill_chunk(const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst) {
  if constexpr (T == DType::q6_k) {
    fill_chunk_q6k(row, l, c, dst);
  } else {
    const ChunkMap& map = chunk_map(l.kind, static_cast<int>(l.chunk_blocks(c)));
    switch (map.n_vec) {
      case 8: return fill_chunk_nv<T, 8>(row, l, c, map, dst);
      case 4: return fill_chunk_nv<T, 4>(row, l, c, map, dst);
      case 2: return fill_chunk_nv<T, 2>(row, l, c, map, dst);
      default: return fill_chunk_nv<T, 1>(row, l, c, map, dst);
    }
  }
}

template <DType T>
void fill_cache(const uint8_t* row, const ActLayout& l, int64_t c0, int64_t c1, uint8_t* cache) {
  for (int64_t c = c0; c < c1; ++c) fill_chunk<T>(row, l, c, cache + (c - c0) * l.chunk_bytes);
}

// ---- the kernel -----------------------------------------------------------------------

// 16-bit sums of maddubs results that cannot overflow: 2 * 127 * qmax per result.
template <DType T>
constexpr int kDepth = T == DType::q8_0                                            ? 1
                       : T == DType::q6_k                                          ? 2
                       : T == DType::q5_k || T == DType::q5_0 || T == DType::q5_1 ? 4
                                                                                   : 8;

// One chunk for a MR x NR tile, both 32-byte halves.
template <DType T, int MR, int NR, int NV>
WT_INLINE void tile_chunk(__m256 (&acc)[MR][NR], const uint8_t* w, const uint8_t* const* a, int64_t a_off) {
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const uint8_t* wi = w + i * kCacheRowBytes + 32 * h;
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        const uint8_t* aj = a[j] + a_off + 32 * h;
        __m256i isum = _mm256_setzero_si256(), s16 = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(wi + 64 * v));
          const __m256i av = _mm256_load_si256(reinterpret_cast<const __m256i*>(aj + 64 * v));
          const __m256i p = T == DType::q8_0 ? _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(av, wv))
                                             : _mm256_maddubs_epi16(wv, av);
          s16 = v % kDepth<T> == 0 ? p : _mm256_add_epi16(s16, p);
          if (v % kDepth<T> == kDepth<T> - 1 || v == NV - 1) isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s16, ones));
        }
        const __m256 d = _mm256_load_ps(reinterpret_cast<const float*>(wi + 64 * NV));
        const __m256 m = _mm256_load_ps(reinterpret_cast<const float*>(wi + 64 * NV + 64));
        const __m256 dx = _mm256_load_ps(reinterpret_cast<const float*>(aj + 64 * NV));
        const __m256 sx = _mm256_load_ps(reinterpret_cast<const float*>(aj + 64 * NV + 64));
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, dx), acc[i][j]);
        acc[i][j] = _mm256_fmadd_ps(m, sx, acc[i][j]);
      }
    }
  }
}

// The summation tree of an 8-lane accumulator: l + (l+4), + (l+2), + (l+1).
WT_INLINE float reduce8(__m256 a) {
  const __m128 u = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}

struct TileArgs {
  const uint8_t* cache;
  const uint8_t* const* xr;
  float* const* yr;  // offset to the tile's first weight row
  const ActLayout* l;
  int64_t c0, c1;
};

template <DType T, int MR, int NR>
void tile(const TileArgs& t) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t c = t.c0; c < t.c1; ++c) {
    const uint8_t* w = t.cache + (c - t.c0) * t.l->chunk_bytes;
    const int64_t off = c * t.l->chunk_bytes;
    switch (t.l->chunk_blocks(c) / 2) {  // vectors of the chunk
      case 8: tile_chunk<T, MR, NR, 8>(acc, w, t.xr, off); break;
      case 4: tile_chunk<T, MR, NR, 4>(acc, w, t.xr, off); break;
      case 2: tile_chunk<T, MR, NR, 2>(acc, w, t.xr, off); break;
      default: tile_chunk<T, MR, NR, 1>(acc, w, t.xr, off); break;
    }
  }
  for (int j = 0; j < NR; ++j)
    for (int i = 0; i < MR; ++i) {
      const float r = reduce8(acc[i][j]);
      t.yr[j][i] = t.c0 == 0 ? r : t.yr[j][i] + r;
    }
}

using TileFn = void (*)(const TileArgs&);
template <DType T, int MR, int... N>
constexpr std::array<TileFn, sizeof...(N)> tile_row(std::integer_sequence<int, N...>) {
  return {&tile<T, MR, N + 1>...};
}
template <DType T>
constexpr std::array<std::array<TileFn, kNR>, kMR> kTiles = {tile_row<T, 1>(std::make_integer_sequence<int, kNR>{}),
                                                             tile_row<T, 2>(std::make_integer_sequence<int, kNR>{})};

// Decode (a few activation rows) streams the weights once. A tile of two weight rows reads
// them panel by panel, alternating between two streams a row apart: with rows of a few KiB
// (k = 8960: Qwen2.5-1.5B's ffn_down) the hardware prefetcher fell behind and every format
// decoded at half the speed it reached on short rows (bench_matmul --isa avx2 --mat
// q4_k:8960:1536:1, 552 us against 284 for the same bytes as q4_k:1536:8960:1). Such rows go
// one at a time: one stream. Short rows keep the two-row tile (its two rows are one
// contiguous stream, and the activations' loads are shared). Either way each output is the
// same sequence of operations, so the results do not change.
constexpr size_t kLongRowBytes = 4096;

template <DType T>
void qmatmul_t(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const ActLayout l = act_layout(job.k, act_kind(T));
  size_t row_bytes = 0;
  dtype_row_bytes(T, job.k, &row_bytes);
  const int64_t tile_rows = j1 - j0 <= 3 && row_bytes > kLongRowBytes ? 1 : kMR;
  alignas(64) uint8_t cache[kMR * kCacheRowBytes];
  const int64_t jc = std::max<int64_t>(kNR, (int64_t{1} << 20) / static_cast<int64_t>(job.xq_stride) / kNR * kNR);
  const int64_t cpp = kPanelBlocks / l.full_blocks;
  const uint8_t* xr[kNR];
  float* yr[kNR];
  for (int64_t ja = j0; ja < j1; ja += jc) {
    const int64_t jb = std::min(j1, ja + jc);
    for (int64_t it = i0; it < i1; it += tile_rows) {
      const int mr = static_cast<int>(std::min<int64_t>(tile_rows, i1 - it));
      for (int64_t c0 = 0; c0 < l.n_chunks; c0 += cpp) {
        const int64_t c1 = std::min(l.n_chunks, c0 + cpp);
        for (int i = 0; i < mr; ++i) fill_cache<T>(job.w + (it + i) * job.w_stride, l, c0, c1, cache + i * kCacheRowBytes);
        for (int64_t jt = ja; jt < jb; jt += kNR) {
          const int nr = static_cast<int>(std::min<int64_t>(kNR, jb - jt));
          for (int j = 0; j < nr; ++j) {
            xr[j] = job.xq + (jt + j) * job.xq_stride;
            yr[j] = reinterpret_cast<float*>(job.y.row(jt + j)) + it;
          }
          kTiles<T>[mr - 1][nr - 1](TileArgs{cache, xr, yr, &l, c0, c1});
        }
      }
    }
  }
}

void qmatmul(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  switch (job.wtype) {
    case DType::q4_0: return qmatmul_t<DType::q4_0>(job, i0, i1, j0, j1);
    case DType::q4_1: return qmatmul_t<DType::q4_1>(job, i0, i1, j0, j1);
    case DType::q5_0: return qmatmul_t<DType::q5_0>(job, i0, i1, j0, j1);
    case DType::q5_1: return qmatmul_t<DType::q5_1>(job, i0, i1, j0, j1);
    case DType::q8_0: return qmatmul_t<DType::q8_0>(job, i0, i1, j0, j1);
    case DType::q4_k: return qmatmul_t<DType::q4_k>(job, i0, i1, j0, j1);
    case DType::q5_k: return qmatmul_t<DType::q5_k>(job, i0, i1, j0, j1);
    case DType::q6_k: return qmatmul_t<DType::q6_k>(job, i0, i1, j0, j1);
    default: return;
  }
}

void fill_any(DType t, const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst) {
  switch (t) {
    case DType::q4_0: return fill_chunk<DType::q4_0>(row, l, c, dst);
    case DType::q4_1: return fill_chunk<DType::q4_1>(row, l, c, dst);
    case DType::q5_0: return fill_chunk<DType::q5_0>(row, l, c, dst);
    case DType::q5_1: return fill_chunk<DType::q5_1>(row, l, c, dst);
    case DType::q8_0: return fill_chunk<DType::q8_0>(row, l, c, dst);
    case DType::q4_k: return fill_chunk<DType::q4_k>(row, l, c, dst);
    case DType::q5_k: return fill_chunk<DType::q5_k>(row, l, c, dst);
    case DType::q6_k: return fill_chunk<DType::q6_k>(row, l, c, dst);
    default: return;
  }
}
int fill_offset(DType t) { return t == DType::q8_0 ? 0 : unsigned_offset(t); }  // Q8_0 stays signed

// ---- activation quantization -----------------------------------------------------------

WT_INLINE int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

void quantize_row(const float* x, int64_t k, ActKind kind, uint8_t* dst) {
  const ActLayout l = act_layout(k, kind);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t c = 0; c < l.n_chunks; ++c) {
    alignas(32) int8_t q[16][32];
    float dx[16];
    int32_t sum[16][2];
    const int64_t b0 = c * l.full_blocks, nl = l.chunk_blocks(c);
    const int64_t nb = std::min(nl, l.n_blocks - b0);
    for (int64_t b = 0; b < nl; ++b) {
      if (b >= nb) {
        std::memset(q[b], 0, 32);
        dx[b] = 0.0f;
        sum[b][0] = sum[b][1] = 0;
        continue;
      }
      const float* xb = x + 32 * (b0 + b);
      __m256 v[4];
      for (int t = 0; t < 4; ++t) v[t] = _mm256_loadu_ps(xb + 8 * t);
      __m256 mx = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
      const float d = _mm_cvtss_f32(m4) / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      __m256i qi[4];
      for (int t = 0; t < 4; ++t) qi[t] = _mm256_cvtps_epi32(_mm256_mul_ps(v[t], _mm256_set1_ps(id)));  // nearest even
      // int32 -> int8 with the lane interleave of packs undone by a final permute.
      const __m256i p16 = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[b]),
                         _mm256_permutevar8x32_epi32(p16, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
      dx[b] = d;
      sum[b][0] = hsum_epi32(_mm256_add_epi32(qi[0], qi[1]));
      sum[b][1] = hsum_epi32(_mm256_add_epi32(qi[2], qi[3]));
    }
    act_store_chunk(l, c, q, dx, sum, dst);
  }
}

// ---- float weights (F32 / F16 / BF16): f32 FMA in 2 x 4 register tiles ------------------

template <DType T>
WT_INLINE __m256 load_w(const uint8_t* w, int64_t e) {
  if constexpr (T == DType::f32) return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + e);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2 * e));
  if constexpr (T == DType::f16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

template <DType T, int MR, int NR>
void ftile(const uint8_t* const* w, const float* const* x, float* const* y, int64_t k) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t e = 0;
  for (; e + 8 <= k; e += 8) {
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256 wv = load_w<T>(w[i], e);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[j] + e), acc[i][j]);
    }
  }
  // Tail (k % 8 elements): through a zero-padded buffer, the same lanes as a full step.
  if (e < k) {
    alignas(32) float wt[MR][8] = {}, xt[NR][8] = {};
    for (int64_t t = e; t < k; ++t) {
      for (int i = 0; i < MR; ++i) {
        float f[1];
        dequantize(T, w[i] + (T == DType::f32 ? 4 : 2) * t, f, 1);
        wt[i][t - e] = f[0];
      }
      for (int j = 0; j < NR; ++j) xt[j][t - e] = x[j][t];
    }
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(_mm256_load_ps(wt[i]), _mm256_load_ps(xt[j]), acc[i][j]);
  }
  for (int j = 0; j < NR; ++j)
    for (int i = 0; i < MR; ++i) y[j][i] = reduce8(acc[i][j]);
}

template <DType T, int MR, int... N>
constexpr std::array<FTileFn, sizeof...(N)> ftile_row(std::integer_sequence<int, N...>) {
  return {&ftile<T, MR, N + 1>...};
}
template <DType T>
constexpr std::array<std::array<FTileFn, kNR>, kMR> kFTiles = {ftile_row<T, 1>(std::make_integer_sequence<int, kNR>{}),
                                                               ftile_row<T, 2>(std::make_integer_sequence<int, kNR>{})};

template <DType T>
void fmatmul_t(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  static_assert(sizeof(kFTiles<T>) == sizeof(FTileFn) * kMR * kNR && kMR <= 8 && kNR <= 8,
                "the tile table is one array of kMR x kNR, as fmatmul_tiled reads it");
  fmatmul_tiled(job, i0, i1, j0, j1, &kFTiles<T>[0][0], kMR, kNR);
}

void fmatmul(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  switch (job.wtype) {
    case DType::f32: return fmatmul_t<DType::f32>(job, i0, i1, j0, j1);
    case DType::f16: return fmatmul_t<DType::f16>(job, i0, i1, j0, j1);
    case DType::bf16: return fmatmul_t<DType::bf16>(job, i0, i1, j0, j1);
    default: return;
  }
}

}  // namespace

const Kernels kAvx2Kernels = {"avx2", quantize_row, qmatmul, fmatmul, fill_any, fill_offset};

}  // namespace wt::cpu::mm

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
