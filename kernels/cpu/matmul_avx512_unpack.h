// The AVX-512 group unpackers of matmul_avx512.cpp: 4 blocks of a weight row, of each
// quantized format, as u8 vectors with per-block scale and offset (the file's header says
// how they enter the int8 dot products). Included only by matmul_avx512.cpp, after its
// target pragma and its WT_INLINE macro, so every function here is AVX-512 code of that one
// translation unit.
#pragma once

namespace wt::cpu::mm {
namespace {

// ---- group unpackers: 4 blocks of a row in natural order -------------------------------
// lo / hi: elements 0..15 / 16..31 of block t in 128-bit lane t (u8); d, m: per block
// (lanes 0..3) or, for Q6_K, per half block (lanes 0..7: block 0 lo, block 0 hi, ...).

struct Group {
  __m512i lo, hi;
  __m256 d, m;
};

struct RawGroup {
  __m512i qs, hdr;
  __m512i qh;  // Q5_0 / Q5_1: the qh word of block t in dword t
};

// 4x4 transpose of dwords within each 128-bit lane: out[q] lane t = in[t] lane q.
WT_INLINE void transpose4(__m512i a, __m512i b, __m512i c, __m512i d, __m512i* out) {
  const __m512i t0 = _mm512_unpacklo_epi32(a, b), t1 = _mm512_unpackhi_epi32(a, b);
  const __m512i t2 = _mm512_unpacklo_epi32(c, d), t3 = _mm512_unpackhi_epi32(c, d);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

inline __mmask64 bytes_mask(int n) { return n >= 64 ? ~0ull : (n <= 0 ? 0ull : (1ull << n) - 1); }
inline Group zero_group() {
  return Group{_mm512_setzero_si512(), _mm512_setzero_si512(), _mm256_setzero_ps(), _mm256_setzero_ps()};
}

struct UnpackQ4_0 {
  static constexpr bool kHalf = false;
  static Group group(const uint8_t* row, int64_t g, int nv) {
    alignas(64) static constexpr uint16_t kQs[32] = {1,  2,  3,  4,  5,  6,  7,  8,  10, 11, 12,
                                                     13, 14, 15, 16, 17, 19, 20, 21, 22, 23, 24,
                                                     25, 26, 56, 57, 58, 59, 60, 61, 62, 63};
    alignas(64) static constexpr uint16_t kHdr[32] = {0, 9, 18, 27};
    if (nv <= 0) return zero_group();
    const uint8_t* p = row + g * 72;  // 4 blocks of 18 bytes: word 9b = d, 9b+1.. = qs
    __m512i v0, v1;
    if (nv == 4) {
      v0 = _mm512_loadu_si512(p);
      v1 = _mm512_loadu_si512(p + 8);
    } else {
      v0 = _mm512_maskz_loadu_epi8(bytes_mask(18 * nv), p);
      v1 = _mm512_maskz_loadu_epi8(bytes_mask(18 * nv - 8), p + 8);
    }
    const __m512i qs = _mm512_permutex2var_epi16(v0, _mm512_load_si512(kQs), v1);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    const __m128 d = _mm_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi16(_mm512_load_si512(kHdr), v0)));
    return Group{_mm512_and_si512(qs, mask), _mm512_and_si512(_mm512_srli_epi16(qs, 4), mask),
                 _mm256_castps128_ps256(d), _mm256_castps128_ps256(_mm_mul_ps(d, _mm_set1_ps(-8.0f)))};
  }
  // Four full blocks still packed: qs bytes (block t in 128-bit lane t) and the header
  // word of block t in dword t (for the faster 16-block chunk assembly).
  static RawGroup raw(const uint8_t* row, int64_t g) {
    alignas(64) static constexpr uint16_t kQs[32] = {1,  2,  3,  4,  5,  6,  7,  8,  10, 11, 12,
                                                     13, 14, 15, 16, 17, 19, 20, 21, 22, 23, 24,
                                                     25, 26, 56, 57, 58, 59, 60, 61, 62, 63};
    alignas(64) static constexpr uint16_t kHdr[32] = {0, 0, 9, 0, 18, 0, 27, 0};  // high halves unused
    const uint8_t* p = row + g * 72;
    const __m512i v0 = _mm512_loadu_si512(p), v1 = _mm512_loadu_si512(p + 8);
    return RawGroup{_mm512_permutex2var_epi16(v0, _mm512_load_si512(kQs), v1),
                    _mm512_permutexvar_epi16(_mm512_load_si512(kHdr), v0), _mm512_setzero_si512()};
  }
  static void headers(__m512i h, __m512* d, __m512* m) {  // 16 header dwords -> d, m
    *d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
    *m = _mm512_mul_ps(*d, _mm512_set1_ps(-8.0f));
  }
};

struct UnpackQ4_1 {
  static constexpr bool kHalf = false;
  static Group group(const uint8_t* row, int64_t g, int nv) {
    alignas(64) static constexpr int32_t kQs[16] = {1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14, 28, 29, 30, 31};
    alignas(64) static constexpr int32_t kHdr[16] = {0, 5, 10, 15};
    if (nv <= 0) return zero_group();
    const uint8_t* p = row + g * 80;  // 4 blocks of 5 dwords: d|m, then 4 dwords of qs
    __m512i v0, v1;
    if (nv == 4) {
      v0 = _mm512_loadu_si512(p);
      v1 = _mm512_loadu_si512(p + 16);
    } else {
      v0 = _mm512_maskz_loadu_epi8(bytes_mask(20 * nv), p);
      v1 = _mm512_maskz_loadu_epi8(bytes_mask(20 * nv - 16), p + 16);
    }
    const __m512i qs = _mm512_permutex2var_epi32(v0, _mm512_load_si512(kQs), v1);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    // [d0 m0 d1 m1 d2 m2 d3 m3] -> d and m in lanes 0..3
    const __m256 dm = _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_load_si512(kHdr), v0)));
    return Group{_mm512_and_si512(qs, mask), _mm512_and_si512(_mm512_srli_epi16(qs, 4), mask),
                 _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)),
                 _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7))};
  }
  static RawGroup raw(const uint8_t* row, int64_t g) {
    alignas(64) static constexpr int32_t kQs[16] = {1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14, 28, 29, 30, 31};
    alignas(64) static constexpr int32_t kHdr[16] = {0, 5, 10, 15};
    const uint8_t* p = row + g * 80;
    const __m512i v0 = _mm512_loadu_si512(p), v1 = _mm512_loadu_si512(p + 16);
    return RawGroup{_mm512_permutex2var_epi32(v0, _mm512_load_si512(kQs), v1),
                    _mm512_permutexvar_epi32(_mm512_load_si512(kHdr), v0), _mm512_setzero_si512()};
  }
  static void headers(__m512i h, __m512* d, __m512* m) {  // dwords d | m << 16
    alignas(64) static constexpr uint16_t kSplit[32] = {0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20,
                                                        22, 24, 26, 28, 30, 1,  3,  5,  7,  9,  11,
                                                        13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
    const __m512i dm = _mm512_permutexvar_epi16(_mm512_load_si512(kSplit), h);
    *d = _mm512_cvtph_ps(_mm512_castsi512_si256(dm));
    *m = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(dm, 1));
  }
};

// Q5_0 / Q5_1: Q4_0 / Q4_1 nibbles plus a 32-bit word qh per block whose bit j is bit 4
// of element j. Block t's qh is gathered into dword 0 of 128-bit lane t; a byte shuffle
// spreads its bytes 0, 1 (elements 0..15) or 2, 3 (16..31) over the lane's 16 bytes, and a
// test against each byte's bit turns it into 16 where set. Q5_0 keeps q = value + 16 (as
// stored), m = -16 d.
WT_INLINE void add_high_bits(__m512i qh, __m512i* lo, __m512i* hi) {
  const __m512i sel = _mm512_set1_epi64(static_cast<long long>(0x8040201008040201ull));
  const __m512i idx_lo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m512i idx_hi = _mm512_broadcast_i32x4(_mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m512i sixteen = _mm512_set1_epi8(16);
  // The nibbles have bit 4 clear, so adding 16 sets it.
  *lo = _mm512_mask_add_epi8(*lo, _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, idx_lo), sel), *lo, sixteen);
  *hi = _mm512_mask_add_epi8(*hi, _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, idx_hi), sel), *hi, sixteen);
}

struct UnpackQ5_0 {
  static constexpr bool kHalf = false;
  static constexpr bool kHighBit = true;
  // 4 blocks of 22 bytes = 11 words: d at word 11b, qh at 11b+1..2, qs at 11b+3..10. v0
  // holds words 0..31, v1 words 12..43 (indices 32.. of the two-source permutes).
  alignas(64) static constexpr uint16_t kQs[32] = {3,  4,  5,  6,  7,  8,  9,  10, 14, 15, 16,
                                                   17, 18, 19, 20, 21, 25, 26, 27, 28, 29, 30,
                                                   31, 52, 56, 57, 58, 59, 60, 61, 62, 63};
  static Group group(const uint8_t* row, int64_t g, int nv) {
    alignas(64) static constexpr uint16_t kQh[32] = {1, 2, 0, 0, 0, 0, 0, 0, 12, 13, 0, 0, 0, 0, 0, 0,
                                                     23, 24, 0, 0, 0, 0, 0, 0, 54, 55, 0, 0, 0, 0, 0, 0};
    alignas(64) static constexpr uint16_t kHdr[32] = {0, 11, 22, 53};
    if (nv <= 0) return zero_group();
    const uint8_t* p = row + g * 88;
    __m512i v0, v1;
    if (nv == 4) {
      v0 = _mm512_loadu_si512(p);
      v1 = _mm512_loadu_si512(p + 24);
    } else {
      v0 = _mm512_maskz_loadu_epi8(bytes_mask(22 * nv), p);
      v1 = _mm512_maskz_loadu_epi8(bytes_mask(22 * nv - 24), p + 24);
    }
    const __m512i qs = _mm512_permutex2var_epi16(v0, _mm512_load_si512(kQs), v1);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    __m512i lo = _mm512_and_si512(qs, mask), hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), mask);
    add_high_bits(_mm512_permutex2var_epi16(v0, _mm512_load_si512(kQh), v1), &lo, &hi);
    const __m128 d =
        _mm_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi16(v0, _mm512_load_si512(kHdr), v1)));
    return Group{lo, hi, _mm256_castps128_ps256(d), _mm256_castps128_ps256(_mm_mul_ps(d, _mm_set1_ps(-16.0f)))};
  }
  static RawGroup raw(const uint8_t* row, int64_t g) {
    alignas(64) static constexpr uint16_t kQh[32] = {1, 2, 12, 13, 23, 24, 54, 55};  // dword t = qh of block t
    alignas(64) static constexpr uint16_t kHdr[32] = {0, 0, 11, 0, 22, 0, 53, 0};  // high halves unused
    const uint8_t* p = row + g * 88;
    const __m512i v0 = _mm512_loadu_si512(p), v1 = _mm512_loadu_si512(p + 24);
    return RawGroup{_mm512_permutex2var_epi16(v0, _mm512_load_si512(kQs), v1),
                    _mm512_permutex2var_epi16(v0, _mm512_load_si512(kHdr), v1),
                    _mm512_permutex2var_epi16(v0, _mm512_load_si512(kQh), v1)};
  }
  static void headers(__m512i h, __m512* d, __m512* m) {  // 16 header dwords -> d, m
    *d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
    *m = _mm512_mul_ps(*d, _mm512_set1_ps(-16.0f));
  }
};

struct UnpackQ5_1 {
  static constexpr bool kHalf = false;
  static constexpr bool kHighBit = true;
  // 4 blocks of 6 dwords: d|m at dword 6b, qh at 6b+1, qs at 6b+2..5. v0 holds dwords
  // 0..15, v1 dwords 8..23 (indices 16.. of the two-source permutes).
  alignas(64) static constexpr int32_t kQs[16] = {2, 3, 4, 5, 8, 9, 10, 11, 14, 15, 24, 25, 28, 29, 30, 31};
  alignas(64) static constexpr int32_t kHdr[16] = {0, 6, 12, 26};  // d | m << 16 of block t in dword t
  static Group group(const uint8_t* row, int64_t g, int nv) {
    alignas(64) static constexpr int32_t kQh[16] = {1, 0, 0, 0, 7, 0, 0, 0, 13, 0, 0, 0, 27, 0, 0, 0};
    if (nv <= 0) return zero_group();
    const uint8_t* p = row + g * 96;
    __m512i v0, v1;
    if (nv == 4) {
      v0 = _mm512_loadu_si512(p);
      v1 = _mm512_loadu_si512(p + 32);
    } else {
      v0 = _mm512_maskz_loadu_epi8(bytes_mask(24 * nv), p);
      v1 = _mm512_maskz_loadu_epi8(bytes_mask(24 * nv - 32), p + 32);
    }
    const __m512i qs = _mm512_permutex2var_epi32(v0, _mm512_load_si512(kQs), v1);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    __m512i lo = _mm512_and_si512(qs, mask), hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), mask);
    add_high_bits(_mm512_permutex2var_epi32(v0, _mm512_load_si512(kQh), v1), &lo, &hi);
    // [d0 m0 d1 m1 d2 m2 d3 m3] -> d and m in lanes 0..3
    const __m256 dm =
        _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi32(v0, _mm512_load_si512(kHdr), v1)));
    return Group{lo, hi, _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)),
                 _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7))};
  }
  static RawGroup raw(const uint8_t* row, int64_t g) {
    alignas(64) static constexpr int32_t kQh[16] = {1, 7, 13, 27};  // dword t = qh of block t
    const uint8_t* p = row + g * 96;
    const __m512i v0 = _mm512_loadu_si512(p), v1 = _mm512_loadu_si512(p + 32);
    return RawGroup{_mm512_permutex2var_epi32(v0, _mm512_load_si512(kQs), v1),
                    _mm512_permutex2var_epi32(v0, _mm512_load_si512(kHdr), v1),
                    _mm512_permutex2var_epi32(v0, _mm512_load_si512(kQh), v1)};
  }
  static void headers(__m512i h, __m512* d, __m512* m) { UnpackQ4_1::headers(h, d, m); }  // dwords d | m << 16
};

struct UnpackQ8_0 {
  static constexpr bool kHalf = false;
  static Group group(const uint8_t* row, int64_t g, int nv) {
    if (nv <= 0) return zero_group();
    const uint8_t* p = row + g * 136;
    __m256i q[4];
    short d[4];
    for (int b = 0; b < 4; ++b) {
      q[b] = b < nv ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 34 * b + 2)) : _mm256_setzero_si256();
      d[b] = b < nv ? static_cast<short>(load_u16(p + 34 * b)) : 0;
    }
    const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(q[0]), q[1], 1);  // [0lo 0hi 1lo 1hi]
    const __m512i c = _mm512_inserti64x4(_mm512_castsi256_si512(q[2]), q[3], 1);
    // s8 -> u8: q = w + 128, in the 128-bit lanes of real blocks only (lane b is block b
    // after the shuffles below): padding blocks stay all zero, as weight_chunk_ref lays them out.
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    const __mmask8 real = static_cast<__mmask8>(nv >= 4 ? 0xFF : (1u << (2 * nv)) - 1u);
    const __m128 dv = _mm_cvtph_ps(_mm_setr_epi16(d[0], d[1], d[2], d[3], 0, 0, 0, 0));
    const __m512i lo = _mm512_shuffle_i64x2(a, c, 0x88), hi = _mm512_shuffle_i64x2(a, c, 0xDD);
    return Group{_mm512_mask_xor_epi64(lo, real, lo, flip), _mm512_mask_xor_epi64(hi, real, hi, flip),
                 _mm256_castps128_ps256(dv),
                 _mm256_castps128_ps256(_mm_mul_ps(dv, _mm_set1_ps(-128.0f)))};
  }
};

// Q4_K / Q5_K, 16 blocks = super-blocks s and s + 1 (halves a = 0..3) straight into the
// chunk's lane order (lane 4L + a = sub-block L of half a, as chunk_map lays out 16 blocks),
// instead of four groups and assemble16's transposes: decode is bound by this unpack, not
// by memory. A 4x4 dword transpose of the four halves' 64 qs bytes puts dword 4L' + q of
// half a in lane a of 128-bit lane L' of t[q]; dwords 0..7 hold sub-blocks 0 / 1 (low /
// high nibbles), 8..15 sub-blocks 2 / 3, so t[q]'s 128-bit lanes 0 and 2 give elements
// 4q.. of every sub-block and lanes 1 and 3 elements 16 + 4q... Q5_K's 5th bits: vector v
// holds elements 4v..4v+3, whose bits are in qh dword v of the lane's super-block, bit
// 4 (a % 2) + L of each byte. The scales and mins of the four halves are k_scale_min4's
// word arithmetic done for all four at once, then a 4x4 byte transpose into lane order.
// d and m come out bit for bit as group() computes them.
template <bool kFive>
WT_INLINE void qk_chunk16(const uint8_t* row, int64_t g0, __m512i* v, __m512* d, __m512* m) {
  constexpr int64_t kBytes = kFive ? 176 : 144, kQs = kFive ? 48 : 16;
  alignas(64) static constexpr int64_t kEven[8] = {0, 1, 8, 9, 4, 5, 12, 13};  // lo.L0 hi.L0 lo.L2 hi.L2
  alignas(64) static constexpr int64_t kOdd[8] = {2, 3, 10, 11, 6, 7, 14, 15};  // lo.L1 hi.L1 lo.L3 hi.L3
  const uint8_t* p0 = row + (g0 >> 1) * kBytes;
  const uint8_t* p1 = p0 + kBytes;
  __m512i t[4];
  transpose4(_mm512_loadu_si512(p0 + kQs), _mm512_loadu_si512(p0 + kQs + 64), _mm512_loadu_si512(p1 + kQs),
             _mm512_loadu_si512(p1 + kQs + 64), t);
  const __m512i mask = _mm512_set1_epi8(0x0F);
  const __m512i even = _mm512_load_si512(kEven), odd = _mm512_load_si512(kOdd);
  #pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m512i lo = _mm512_and_si512(t[q], mask), hi = _mm512_and_si512(_mm512_srli_epi16(t[q], 4), mask);
    v[q] = _mm512_permutex2var_epi64(lo, even, hi);
    v[q + 4] = _mm512_permutex2var_epi64(lo, odd, hi);
  }
  if constexpr (kFive) {
    // qh of super-block s in dwords 0..7, of s + 1 in 8..15; lane 4L + a reads dword
    // 8 (a / 2) + v and tests bit 4 (a % 2) + L of its bytes.
    const __m512i qh = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0 + 16))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1 + 16)), 1);
    alignas(64) static constexpr int32_t kSb[16] = {0, 0, 8, 8, 0, 0, 8, 8, 0, 0, 8, 8, 0, 0, 8, 8};
    alignas(64) static constexpr uint32_t kBit[16] = {0x01010101, 0x10101010, 0x01010101, 0x10101010,
                                                      0x02020202, 0x20202020, 0x02020202, 0x20202020,
                                                      0x04040404, 0x40404040, 0x04040404, 0x40404040,
                                                      0x08080808, 0x80808080, 0x08080808, 0x80808080};
    const __m512i sb = _mm512_load_si512(kSb), bit = _mm512_load_si512(kBit), sixteen = _mm512_set1_epi8(16);
    #pragma GCC unroll 8
    for (int e = 0; e < 8; ++e) {
      const __m512i bits = _mm512_permutexvar_epi32(_mm512_add_epi32(sb, _mm512_set1_epi32(e)), qh);
      v[e] = _mm512_or_si512(v[e], _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(bits, bit), sixteen));
    }
  }
  // Scale words w0, w1, w2 of each super-block (bytes 4..15; the load's last 4 bytes are qs).
  const __m128 s0 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + 4)));
  const __m128 s1 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + 4)));
  const __m128i w0 = _mm_castps_si128(_mm_shuffle_ps(s0, s1, _MM_SHUFFLE(0, 0, 0, 0)));  // dword a: half a
  const __m128i w1 = _mm_castps_si128(_mm_shuffle_ps(s0, s1, _MM_SHUFFLE(1, 1, 1, 1)));
  const __m128i w2 = _mm_castps_si128(_mm_shuffle_ps(s0, s1, _MM_SHUFFLE(2, 2, 2, 2)));
  const __m128i m3f = _mm_set1_epi8(0x3F), m0f = _mm_set1_epi8(0x0F), m30 = _mm_set1_epi8(0x30);
  const __mmask8 second = 0xA;  // halves 1 and 3: the second half of their super-block
  const __m128i sc = _mm_mask_or_epi32(_mm_and_si128(w0, m3f), second, _mm_and_si128(w2, m0f),
                                       _mm_and_si128(_mm_srli_epi32(w0, 2), m30));
  const __m128i mn = _mm_mask_or_epi32(_mm_and_si128(w1, m3f), second, _mm_and_si128(_mm_srli_epi32(w2, 4), m0f),
                                       _mm_and_si128(_mm_srli_epi32(w1, 2), m30));
  const __m128i tr = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);  // byte 4a+L -> 4L+a
  const __m512 scf = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(sc, tr)));
  const __m512 mnf = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(mn, tr)));
  const __mmask16 hi_sb = 0xCCCC;  // lanes of halves 2 and 3: super-block s + 1
  const __m512 dd = _mm512_mask_blend_ps(hi_sb, _mm512_set1_ps(_cvtsh_ss(load_u16(p0))), _mm512_set1_ps(_cvtsh_ss(load_u16(p1))));
  const __m512 dm =
      _mm512_mask_blend_ps(hi_sb, _mm512_set1_ps(_cvtsh_ss(load_u16(p0 + 2))), _mm512_set1_ps(_cvtsh_ss(load_u16(p1 + 2))));
  *d = _mm512_mul_ps(dd, scf);
  *m = _mm512_xor_ps(_mm512_mul_ps(dm, mnf), _mm512_set1_ps(-0.0f));
}

// Q4_K / Q5_K: group g is half h of super-block g / 2 (sub-blocks 4h .. 4h+3). The 64
// bytes of qs of the half hold sub-blocks (2s, 2s+1) as low / high nibbles of 32 bytes.
template <bool kFive>
struct UnpackQK {
  static constexpr bool kHalf = false;
  static void chunk16(const uint8_t* row, int64_t g0, __m512i* v, __m512* d, __m512* m) {
    qk_chunk16<kFive>(row, g0, v, d, m);
  }
  static Group group(const uint8_t* row, int64_t g, int) {
    alignas(64) static constexpr int64_t kLo[8] = {0, 1, 8, 9, 4, 5, 12, 13};
    alignas(64) static constexpr int64_t kHi[8] = {2, 3, 10, 11, 6, 7, 14, 15};
    const uint8_t* p = row + (g >> 1) * (kFive ? 176 : 144);
    const int h = static_cast<int>(g & 1);
    const __m512i v = _mm512_loadu_si512(p + (kFive ? 48 : 16) + 64 * h);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    const __m512i ln = _mm512_and_si512(v, mask), hn = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
    __m512i lo = _mm512_permutex2var_epi64(ln, _mm512_load_si512(kLo), hn);
    __m512i hi = _mm512_permutex2var_epi64(ln, _mm512_load_si512(kHi), hn);
    if (kFive) {
      // Bit (4h + t) of qh[i] is bit 4 of element i of local sub-block t.
      const __m512i sel = _mm512_slli_epi16(
          _mm512_setr_epi32(0x01010101, 0x01010101, 0x01010101, 0x01010101, 0x02020202, 0x02020202, 0x02020202,
                            0x02020202, 0x04040404, 0x04040404, 0x04040404, 0x04040404, 0x08080808, 0x08080808,
                            0x08080808, 0x08080808),
          4 * h);
      const __m512i sixteen = _mm512_set1_epi8(16);
      const __m512i qh0 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
      const __m512i qh1 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32)));
      lo = _mm512_or_si512(lo, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(qh0, sel), sixteen));
      hi = _mm512_or_si512(hi, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(qh1, sel), sixteen));
    }
    uint32_t sc, mn;  // 6-bit scales and mins of sub-blocks 4h..4h+3, a byte each
    k_scale_min4(p + 4, h, &sc, &mn);
    const __m128 scf = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(sc))));
    const __m128 mnf = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(mn))));
    const __m128 d = _mm_mul_ps(_mm_set1_ps(_cvtsh_ss(load_u16(p))), scf);
    const __m128 m = _mm_xor_ps(_mm_mul_ps(_mm_set1_ps(_cvtsh_ss(load_u16(p + 2))), mnf), _mm_set1_ps(-0.0f));
    return Group{lo, hi, _mm256_castps128_ps256(d), _mm256_castps128_ps256(m)};
  }
};


// Q6_K, a chunk of 8 blocks (one super-block, 16 half-block units) straight into the chunk's
// lane order: lane 4L + j is half-block j % 2 of sub-block L of half j / 2, i.e. scale
// 8 (j / 2) + 2 L + j % 2, as two groups and a transpose would lay it out. Vector q takes
// elements 4q..4q+3 of each unit: the ql dword 16 (j / 2) + 8 (L % 2) + 4 (j % 2) + q (its
// high nibbles for L >= 2), and the qh dword 4j + q shifted right by 2L (the two bits of
// each byte end up in bits 0 and 1: 2L <= 6). One permute per source and vector instead of
// two groups' unpacking and a transpose; d and m as group() computes them, bit for bit.
WT_INLINE void q6k_chunk8(const uint8_t* row, int64_t g0, __m512i* v, __m512* d, __m512* m) {
  const uint8_t* p = row + (g0 >> 1) * 210;
  const __m512i ql0 = _mm512_loadu_si512(p), ql1 = _mm512_loadu_si512(p + 64), qh = _mm512_loadu_si512(p + 128);
  // Per lane 4L + j: the ql dword of elements 0..3, the qh dword of elements 0..3, 2L.
  alignas(64) static constexpr int32_t kQl[16] = {0, 4, 16, 20, 8, 12, 24, 28, 0, 4, 16, 20, 8, 12, 24, 28};
  alignas(64) static constexpr int32_t kQh[16] = {0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12};
  alignas(64) static constexpr int32_t kShift[16] = {0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6};
  const __m512i ql_base = _mm512_load_si512(kQl), qh_base = _mm512_load_si512(kQh), shift = _mm512_load_si512(kShift);
  const __m512i m0f = _mm512_set1_epi8(0x0F), m03 = _mm512_set1_epi8(0x03);
  #pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m512i qv = _mm512_set1_epi32(q);
    __m512i lo = _mm512_permutex2var_epi32(ql0, _mm512_add_epi32(ql_base, qv), ql1);
    lo = _mm512_and_si512(_mm512_mask_srli_epi16(lo, 0xFFFF0000u, lo, 4), m0f);  // L >= 2: high nibbles
    const __m512i hb = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(_mm512_add_epi32(qh_base, qv), qh), shift), m03);
    v[q] = _mm512_or_si512(lo, _mm512_slli_epi16(hb, 4));
  }
  const __m128i sidx = _mm_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);  // 8 (j/2) + 2L + j%2
  const __m128i sc = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192)), sidx);
  *d = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(load_u16(p + 208))), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc)));
  *m = _mm512_mul_ps(*d, _mm512_set1_ps(-32.0f));
}

// Q6_K: group g is half h of super-block g / 2; local sub-block t = elements 32t .. 32t+31
// of the half: low nibbles from ql[64h + 32 (t % 2) + i] >> 4 (t / 2), 2 high bits from
// qh[32h + i] >> 2t. Scales cover 16 elements, so d and m are per half block.
struct UnpackQ6_K {
  static constexpr bool kHalf = true;
  static void chunk8(const uint8_t* row, int64_t g0, __m512i* v, __m512* d, __m512* m) { q6k_chunk8(row, g0, v, d, m); }
  static Group group(const uint8_t* row, int64_t g, int) {
    alignas(64) static constexpr int64_t kLo[8] = {0, 1, 4, 5, 8, 9, 12, 13};
    alignas(64) static constexpr int64_t kHi[8] = {2, 3, 6, 7, 10, 11, 14, 15};
    const uint8_t* p = row + (g >> 1) * 210;
    const int h = static_cast<int>(g & 1);
    const __m512i v = _mm512_loadu_si512(p + 64 * h);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    const __m512i ln = _mm512_and_si512(v, mask), hn = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
    const __m512i shifts = _mm512_setr_epi32(0, 0, 0, 0, 0x00020002, 0x00020002, 0x00020002, 0x00020002, 0x00040004,
                                             0x00040004, 0x00040004, 0x00040004, 0x00060006, 0x00060006, 0x00060006,
                                             0x00060006);
    const __m512i three = _mm512_set1_epi8(3);
    const __m512i qh0 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 128 + 32 * h)));
    const __m512i qh1 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 144 + 32 * h)));
    const __m512i b0 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh0, shifts), three), 4);
    const __m512i b1 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh1, shifts), three), 4);
    // Scales of the 8 half sub-blocks [t0 lo, t0 hi, t1 lo, ...]; the stored q is value + 32.
    const __m128i sc8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 192 + 8 * h));
    const __m256 s = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(load_u16(p + 208))),
                                   _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
    return Group{_mm512_or_si512(_mm512_permutex2var_epi64(ln, _mm512_load_si512(kLo), hn), b0),
                 _mm512_or_si512(_mm512_permutex2var_epi64(ln, _mm512_load_si512(kHi), hn), b1), s,
                 _mm256_mul_ps(s, _mm256_set1_ps(-32.0f))};
  }
};

}  // namespace
}  // namespace wt::cpu::mm
