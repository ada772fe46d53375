// AVX-512 VNNI matmul path (chosen at run time; see matmul.cpp).
//
// Quantized weights are unpacked into the chunk layout of the activations (quant.h):
// n_vec vectors of unsigned 8-bit weights whose int32 lane L belongs to one unit (block or
// half block) in every vector, plus per-lane scale d16 and offset m16, such that
//   w = d q + m,  q in [0, 255]   (Q4_0: m = -8 d; Q5_0: q = value + 16, m = -16 d; Q8_0:
//   q = w + 128, m = -128 d; Q6_K: q = value + 32, m = -32 d).
// A chunk of 16 blocks then costs, per (weight row, activation row) pair, 8 vpdpbusd
// (u8 x s8 -> 16 per-block int32 sums) and four 16-lane float ops:
//   acc += cvt(isum) * (d16 dx16);  acc += m16 sx16.
// Prefill unpacks a tile of 4 weight rows once into an L1 cache (a panel of 64 blocks)
// and runs every activation row against it in 4 x 3 register tiles; decode (<= 3 rows)
// unpacks into registers. Both do the same operations per output in the same order, so a
// row's result does not depend on the batch it came in, the tile shape or the thread split.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "matmul_impl.h"
#include "quant.h"

// The target is set here, after the includes, rather than only by per-file compiler flags:
// inline functions of the headers above stay baseline code, so the linker can never pick
// an AVX-512 copy of one for the portable parts of the binary.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
// GCC 12's own avx512fintrin.h trips these (its "undefined vector" idiom).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace wt::cpu::mm {
namespace {

// The tile loops only stay in registers if every helper is inlined into them.
#define WT_INLINE inline __attribute__((always_inline))
#define WT_LAMBDA_INLINE __attribute__((always_inline))

constexpr int64_t kPanelBlocks = 64;  // 2048 elements: one cache fill, one partial sum
constexpr int kMR = 4;                // weight rows per register tile
constexpr int kNR = 3;                // activation rows per register tile (12 pairs)
constexpr int64_t kPrefetchBytes = 8192;  // decode: software prefetch distance

}  // namespace
}  // namespace wt::cpu::mm

#include "matmul_avx512_unpack.h"

namespace wt::cpu::mm {
namespace {

// ---- chunks: groups rearranged into the lane order of quant.h's chunk_map ---------------

template <int NV>
struct Chunk {
  __m512i v[NV];
  __m512 d, m;
};

// Per-lane unit index of each chunk shape: d16 / m16 = permutexvar(index, natural d / m).
struct LaneIndex {
  __m512i full, last;
};
inline __m512i lane_index(const ChunkMap& m) {
  alignas(64) int32_t idx[16];
  for (int l = 0; l < 16; ++l) idx[l] = m.unit[l];
  return _mm512_load_si512(idx);
}

WT_INLINE __m512 cat4(__m256 a, __m256 b, __m256 c, __m256 d) {  // lanes 0..3 of each
  const __m256 ab = _mm256_insertf128_ps(a, _mm256_castps256_ps128(b), 1);
  const __m256 cd = _mm256_insertf128_ps(c, _mm256_castps256_ps128(d), 1);
  return _mm512_insertf32x8(_mm512_castps256_ps512(ab), cd, 1);
}

// 16 blocks from four groups: a 4x4 dword transpose puts block 4t + a in lane 4a + t.
WT_INLINE void assemble16(const Group& g0, const Group& g1, const Group& g2, const Group& g3, __m512i idx,
                          Chunk<8>& c) {
  transpose4(g0.lo, g1.lo, g2.lo, g3.lo, c.v);
  transpose4(g0.hi, g1.hi, g2.hi, g3.hi, c.v + 4);
  c.d = _mm512_permutexvar_ps(idx, cat4(g0.d, g1.d, g2.d, g3.d));
  c.m = _mm512_permutexvar_ps(idx, cat4(g0.m, g1.m, g2.m, g3.m));
}

// Formats whose groups can also come packed (RawGroup) for the faster 16-block assembly.
template <class U>
constexpr bool has_raw = requires(const uint8_t* p) { U::raw(p, int64_t{0}); };
// Formats that unpack a chunk in one piece: 16 blocks (Q4_K, Q5_K) or 8 as 16 half blocks (Q6_K).
template <class U>
constexpr bool has_chunk8 = requires(const uint8_t* p, __m512i* v, __m512* f) { U::chunk8(p, int64_t{0}, v, f, f); };
template <class U>
constexpr bool has_chunk16 = requires(const uint8_t* p, __m512i* v, __m512* f) { U::chunk16(p, int64_t{0}, v, f, f); };
// Q5_0 / Q5_1: a 5th bit per element from the blocks' qh words (RawGroup::qh).
template <class U>
constexpr bool has_high_bit = requires { requires U::kHighBit; };

// The 5th bits of a transposed 16-block chunk: qh holds, in lane L, the qh word of the
// lane's block. Vector q (elements 4q..4q+3 of each block) takes bits 4q..4q+3, i.e. half
// q % 2 of byte q / 2; vector q + 4 (elements 16 + 4q..) the same of byte 2 + q / 2. A byte
// shuffle spreads that byte over the lane's 4 bytes, a test against 1, 2, 4, 8 (or 16 ..
// 128) picks each element's bit, and adding 16 sets it (the nibbles have bit 4 clear).
WT_INLINE void add_high_bits16(__m512i qh, __m512i* v) {
  const __m512i sixteen = _mm512_set1_epi8(16);
  #pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const int byte = q / 2;
    const __m512i idx = _mm512_broadcast_i32x4(
        _mm_setr_epi32(0x01010101 * byte, 0x01010101 * (4 + byte), 0x01010101 * (8 + byte), 0x01010101 * (12 + byte)));
    const __m512i sel = _mm512_set1_epi32(q % 2 ? static_cast<int>(0x80402010u) : 0x08040201);
    v[q] = _mm512_mask_add_epi8(v[q], _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, idx), sel), v[q], sixteen);
    const __m512i idx2 = _mm512_add_epi8(idx, _mm512_set1_epi8(2));
    v[q + 4] = _mm512_mask_add_epi8(v[q + 4], _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, idx2), sel), v[q + 4], sixteen);
  }
}

// Unpacks the chunk of nb (layout) blocks starting at block b0 of a row.
template <class U, int NV>
WT_INLINE Chunk<NV> unpack_chunk(const uint8_t* row, int64_t b0, int64_t n_blocks, __m512i idx) {
  Chunk<NV> c;
  const int64_t g0 = b0 / 4;
  auto nv = [&](int64_t g) { return static_cast<int>(std::min<int64_t>(4, n_blocks - 4 * g)); };
  if constexpr (U::kHalf && has_chunk8<U>) {  // Q6_K: 8 blocks = 16 half-block lanes
    U::chunk8(row, g0, c.v, &c.d, &c.m);
  } else if constexpr (U::kHalf) {  // 8 blocks = 16 half-block lanes
    const Group a = U::group(row, g0, 4), b = U::group(row, g0 + 1, 4);
    transpose4(a.lo, a.hi, b.lo, b.hi, c.v);
    c.d = _mm512_permutexvar_ps(idx, _mm512_insertf32x8(_mm512_castps256_ps512(a.d), b.d, 1));
    c.m = _mm512_permutexvar_ps(idx, _mm512_insertf32x8(_mm512_castps256_ps512(a.m), b.m, 1));
  } else if constexpr (NV == 8 && has_chunk16<U>) {  // 8 vectors: all 16 blocks are there
    U::chunk16(row, g0, c.v, &c.d, &c.m);
  } else if constexpr (NV == 8 && has_raw<U>) {
    if (b0 + 16 <= n_blocks) {
      // Q4_0 / Q4_1 / Q5_0 / Q5_1, all 16 blocks present: transpose the packed nibble
      // bytes once (the low nibbles give vectors 0..3, the high ones 4..7) and gather the
      // 16 headers in lane order (lane 4a + t = block 4t + a, see chunk_map) with two
      // permutes and a blend.
      alignas(64) static constexpr int32_t kH01[16] = {0, 16, 0, 0, 1, 17, 0, 0, 2, 18, 0, 0, 3, 19, 0, 0};
      alignas(64) static constexpr int32_t kH23[16] = {0, 0, 0, 16, 0, 0, 1, 17, 0, 0, 2, 18, 0, 0, 3, 19};
      const RawGroup r0 = U::raw(row, g0), r1 = U::raw(row, g0 + 1), r2 = U::raw(row, g0 + 2), r3 = U::raw(row, g0 + 3);
      __m512i t[4];
      transpose4(r0.qs, r1.qs, r2.qs, r3.qs, t);
      const __m512i mask = _mm512_set1_epi8(0x0F);
      for (int q = 0; q < 4; ++q) {
        c.v[q] = _mm512_and_si512(t[q], mask);
        c.v[q + 4] = _mm512_and_si512(_mm512_srli_epi16(t[q], 4), mask);
      }
      const __m512i h01 = _mm512_permutex2var_epi32(r0.hdr, _mm512_load_si512(kH01), r1.hdr);
      const __m512i h23 = _mm512_permutex2var_epi32(r2.hdr, _mm512_load_si512(kH23), r3.hdr);
      U::headers(_mm512_mask_blend_epi32(0xCCCC, h01, h23), &c.d, &c.m);
      if constexpr (has_high_bit<U>) {  // the qh words, gathered into lane order the same way
        const __m512i q01 = _mm512_permutex2var_epi32(r0.qh, _mm512_load_si512(kH01), r1.qh);
        const __m512i q23 = _mm512_permutex2var_epi32(r2.qh, _mm512_load_si512(kH23), r3.qh);
        add_high_bits16(_mm512_mask_blend_epi32(0xCCCC, q01, q23), c.v);
      }
    } else {
      assemble16(U::group(row, g0, nv(g0)), U::group(row, g0 + 1, nv(g0 + 1)), U::group(row, g0 + 2, nv(g0 + 2)),
                 U::group(row, g0 + 3, nv(g0 + 3)), idx, c);
    }
  } else if constexpr (NV == 8) {
    assemble16(U::group(row, g0, nv(g0)), U::group(row, g0 + 1, nv(g0 + 1)), U::group(row, g0 + 2, nv(g0 + 2)),
               U::group(row, g0 + 3, nv(g0 + 3)), idx, c);
  } else if constexpr (NV == 4) {
    const Group a = U::group(row, g0, nv(g0)), b = U::group(row, g0 + 1, nv(g0 + 1));
    c.v[0] = _mm512_unpacklo_epi64(a.lo, b.lo);
    c.v[1] = _mm512_unpackhi_epi64(a.lo, b.lo);
    c.v[2] = _mm512_unpacklo_epi64(a.hi, b.hi);
    c.v[3] = _mm512_unpackhi_epi64(a.hi, b.hi);
    c.d = _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(_mm256_insertf128_ps(a.d, _mm256_castps256_ps128(b.d), 1)));
    c.m = _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(_mm256_insertf128_ps(a.m, _mm256_castps256_ps128(b.m), 1)));
  } else {
    const Group a = U::group(row, g0, nv(g0));
    if constexpr (NV == 2) {
      c.v[0] = a.lo;
      c.v[1] = a.hi;
    } else {
      c.v[0] = _mm512_shuffle_i64x2(a.lo, a.hi, 0x44);  // [lo.0 lo.1 hi.0 hi.1]
    }
    c.d = _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(a.d));
    c.m = _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(a.m));
  }
  return c;
}

// ---- the per-pair arithmetic -------------------------------------------------------------

// The one summation tree of a 16-lane accumulator: lanes l + (l+8), then + (l+4), then
// + (l+2), then + (l+1). reduce1 and reduce4 compute exactly this, lane by lane.
WT_INLINE float reduce1(__m512 a) {
  const __m256 t = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  const __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}
WT_INLINE __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  const __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  const __m512 v = _mm512_add_ps(u, _mm512_permute_ps(u, 0x4E));  // + (l+2) within 128 bits
  const __m512 w = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));  // + (l+1)
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), w));
}

// acc += the chunk's contribution: weights in registers, activation chunk at a.
template <int NV>
WT_INLINE __m512 pair_step(__m512 acc, const Chunk<NV>& w, const uint8_t* a) {
  __m512i s = _mm512_setzero_si512();
  #pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) s = _mm512_dpbusd_epi32(s, w.v[v], _mm512_load_si512(a + 64 * v));
  const __m512 dx = _mm512_load_ps(reinterpret_cast<const float*>(a + 64 * NV));
  const __m512 sx = _mm512_load_ps(reinterpret_cast<const float*>(a + 64 * NV + 64));
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(w.d, dx), acc);
  return _mm512_fmadd_ps(w.m, sx, acc);
}

inline float* out_row(const Job& job, int64_t j) { return reinterpret_cast<float*>(job.y.row(j)); }

// Number of vectors of chunk c, as a template argument.
template <bool kHalf, typename Fn>
WT_INLINE void with_nv(int64_t blocks, Fn&& fn) {
  if constexpr (kHalf) {
    fn(std::integral_constant<int, 4>{});
  } else {
    switch (blocks) {
      case 16: fn(std::integral_constant<int, 8>{}); break;
      case 8: fn(std::integral_constant<int, 4>{}); break;
      case 4: fn(std::integral_constant<int, 2>{}); break;
      default: fn(std::integral_constant<int, 1>{}); break;
    }
  }
}

// ---- decode: weights unpacked in registers ---------------------------------------------

template <class U, int NR>
void qdirect(const Job& job, const ActLayout& l, const LaneIndex& li, int64_t i0, int64_t i1, int64_t j0) {
  const uint8_t* xr[NR];
  float* yr[NR];
  #pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    xr[j] = job.xq + (j0 + j) * job.xq_stride;
    yr[j] = out_row(job, j0 + j);
  }
  const int64_t cpp = kPanelBlocks / l.full_blocks;  // chunks per panel
  size_t row_bytes = 0, chunk_bytes = 0;  // of weights: a row, a full chunk (whole blocks either way)
  dtype_row_bytes(job.wtype, job.k, &row_bytes);
  dtype_row_bytes(job.wtype, l.full_blocks * 32, &chunk_bytes);
  // Decode streams the weights once: keep asking for the bytes kPrefetchBytes ahead of the
  // chunk being read, a few lines per chunk, so enough loads are in flight (the hardware
  // prefetcher alone left bandwidth unused). Asking for the whole row two rows ahead at
  // each row's start instead sent bursts of ~80 requests on rows of 5 KiB (k = 8960), and
  // such rows decoded at two thirds of the speed of short ones (bench_matmul --mat
  // q4_k:8960:1536:1). Offsets from job.w: no pointer is formed past the weights.
  const int64_t stride = static_cast<int64_t>(job.w_stride);
  const int64_t w_end = (i1 - 1) * stride + static_cast<int64_t>(row_bytes);
  int64_t pf = i0 * stride;
  for (int64_t i = i0; i < i1; ++i) {
    const uint8_t* row = job.w + i * job.w_stride;
    for (int64_t c0 = 0; c0 < l.n_chunks; c0 += cpp) {
      const int64_t c1 = std::min(l.n_chunks, c0 + cpp);
      __m512 acc[NR];
      #pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) acc[j] = _mm512_setzero_ps();
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t want = std::min(w_end, i * stride + (c + 1) * static_cast<int64_t>(chunk_bytes) + kPrefetchBytes);
        for (; pf < want; pf += 64) _mm_prefetch(reinterpret_cast<const char*>(job.w + pf), _MM_HINT_T0);
        const bool last = c + 1 == l.n_chunks;
        with_nv<U::kHalf>(l.chunk_blocks(c), [&](auto nv) WT_LAMBDA_INLINE {
          const Chunk<nv> w = unpack_chunk<U, nv>(row, c * l.full_blocks, l.n_blocks, last ? li.last : li.full);
          #pragma GCC unroll 16
          for (int j = 0; j < NR; ++j) acc[j] = pair_step<nv>(acc[j], w, xr[j] + c * l.chunk_bytes);
        });
      }
      #pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) yr[j][i] = c0 == 0 ? reduce1(acc[j]) : yr[j][i] + reduce1(acc[j]);
    }
  }
}

// ---- prefill: a tile of weight rows unpacked once into an L1 cache ---------------------
// A cache row holds one panel of a weight row in the activation chunk layout, each chunk
// [n_vec vectors | d16 | m16], chunk c of the panel at c * chunk_bytes.

constexpr int64_t kCacheRowBytes = 3072;  // max over kinds of (64 / full_blocks) * chunk_bytes

template <class U>
void fill_cache(const uint8_t* row, const ActLayout& l, const LaneIndex& li, int64_t c0, int64_t c1, uint8_t* cache) {
  for (int64_t c = c0; c < c1; ++c) {
    const bool last = c + 1 == l.n_chunks;
    uint8_t* dst = cache + (c - c0) * l.chunk_bytes;
    with_nv<U::kHalf>(l.chunk_blocks(c), [&](auto nv) WT_LAMBDA_INLINE {
      const Chunk<nv> w = unpack_chunk<U, nv>(row, c * l.full_blocks, l.n_blocks, last ? li.last : li.full);
      for (int v = 0; v < nv; ++v) _mm512_store_si512(dst + 64 * v, w.v[v]);
      _mm512_store_ps(dst + 64 * nv, w.d);
      _mm512_store_ps(dst + 64 * nv + 64, w.m);
    });
  }
}

// One chunk for a MR x NR tile: integer dot products with the chunk's vectors loaded once
// per tile (weights for MR rows, activations for NR rows), then the per-pair epilogue.
template <int MR, int NR, int NV>
WT_INLINE void tile_chunk(__m512 (&acc)[MR][NR], const uint8_t* w, const uint8_t* const* a, int64_t a_off) {
  __m512i s[MR][NR];
  #pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) s[i][j] = _mm512_setzero_si512();
  #pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    __m512i wv[MR];
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) wv[i] = _mm512_load_si512(w + i * kCacheRowBytes + 64 * v);
    #pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const __m512i av = _mm512_load_si512(a[j] + a_off + 64 * v);
      #pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) s[i][j] = _mm512_dpbusd_epi32(s[i][j], wv[i], av);
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const __m512 d = _mm512_load_ps(w + i * kCacheRowBytes + 64 * NV);
    const __m512 m = _mm512_load_ps(w + i * kCacheRowBytes + 64 * NV + 64);
    #pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const float* ax = reinterpret_cast<const float*>(a[j] + a_off + 64 * NV);
      acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[i][j]), _mm512_mul_ps(d, _mm512_load_ps(ax)), acc[i][j]);
      acc[i][j] = _mm512_fmadd_ps(m, _mm512_load_ps(ax + 16), acc[i][j]);
    }
  }
}

struct TileArgs {
  const uint8_t* cache;       // kMR cache rows
  const uint8_t* const* xr;   // NR activation rows
  float* const* yr;           // NR output rows, offset to the tile's first weight row
  const ActLayout* l;
  int64_t c0, c1;             // the panel's chunks
};

template <bool kHalf, int MR, int NR>
void tile(const TileArgs& t) {
  __m512 acc[MR][NR];
  #pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t c = t.c0; c < t.c1; ++c) {
    const uint8_t* w = t.cache + (c - t.c0) * t.l->chunk_bytes;
    with_nv<kHalf>(t.l->chunk_blocks(c), [&](auto nv) WT_LAMBDA_INLINE { tile_chunk<MR, NR, nv>(acc, w, t.xr, c * t.l->chunk_bytes); });
  }
  const __m512 z = _mm512_setzero_ps();
  const __mmask8 mk = static_cast<__mmask8>((1u << MR) - 1);
  #pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    __m128 r = reduce4(acc[0][j], MR > 1 ? acc[1 % MR][j] : z, MR > 2 ? acc[2 % MR][j] : z, MR > 3 ? acc[3 % MR][j] : z);
    if (t.c0 != 0) r = _mm_add_ps(_mm_maskz_loadu_ps(mk, t.yr[j]), r);
    _mm_mask_storeu_ps(t.yr[j], mk, r);
  }
}

using TileFn = void (*)(const TileArgs&);
template <bool kHalf, int MR, int... N>
constexpr std::array<TileFn, sizeof...(N)> tile_row(std::integer_sequence<int, N...>) {
  return {&tile<kHalf, MR, N + 1>...};
}
template <bool kHalf>
constexpr std::array<std::array<TileFn, kNR>, kMR> kTiles = {
    tile_row<kHalf, 1>(std::make_integer_sequence<int, kNR>{}), tile_row<kHalf, 2>(std::make_integer_sequence<int, kNR>{}),
    tile_row<kHalf, 3>(std::make_integer_sequence<int, kNR>{}), tile_row<kHalf, 4>(std::make_integer_sequence<int, kNR>{})};

template <class U>
void qcached(const Job& job, const ActLayout& l, const LaneIndex& li, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  alignas(64) uint8_t cache[kMR * kCacheRowBytes];
  // Activation rows per pass: as many as fit in ~1 MiB of L2, so a weight tile's cache is
  // reused over many rows while the activations stay in L2.
  const int64_t jc = std::max<int64_t>(kNR, (int64_t{1} << 20) / static_cast<int64_t>(job.xq_stride) / kNR * kNR);
  const int64_t cpp = kPanelBlocks / l.full_blocks;
  const uint8_t* xr[kNR];
  float* yr[kNR];
  for (int64_t ja = j0; ja < j1; ja += jc) {
    const int64_t jb = std::min(j1, ja + jc);
    for (int64_t it = i0; it < i1; it += kMR) {
      const int mr = static_cast<int>(std::min<int64_t>(kMR, i1 - it));
      for (int64_t c0 = 0; c0 < l.n_chunks; c0 += cpp) {
        const int64_t c1 = std::min(l.n_chunks, c0 + cpp);
        for (int i = 0; i < mr; ++i) fill_cache<U>(job.w + (it + i) * job.w_stride, l, li, c0, c1, cache + i * kCacheRowBytes);
        for (int64_t jt = ja; jt < jb; jt += kNR) {
          const int nr = static_cast<int>(std::min<int64_t>(kNR, jb - jt));
          for (int j = 0; j < nr; ++j) {
            xr[j] = job.xq + (jt + j) * job.xq_stride;
            yr[j] = out_row(job, jt + j) + it;
          }
          kTiles<U::kHalf>[mr - 1][nr - 1](TileArgs{cache, xr, yr, &l, c0, c1});
        }
      }
    }
  }
}

template <class U>
void qmatmul_t(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const ActLayout l = act_layout(job.k, U::kHalf ? ActKind::half16 : ActKind::block32);
  const LaneIndex li{lane_index(chunk_map(l.kind, static_cast<int>(l.full_blocks))),
                     lane_index(chunk_map(l.kind, static_cast<int>(l.last_blocks)))};
  switch (j1 - j0) {
    case 1: return qdirect<U, 1>(job, l, li, i0, i1, j0);
    case 2: return qdirect<U, 2>(job, l, li, i0, i1, j0);
    case 3: return qdirect<U, 3>(job, l, li, i0, i1, j0);
    default: return qcached<U>(job, l, li, i0, i1, j0, j1);
  }
}

void qmatmul(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  switch (job.wtype) {
    case DType::q4_0: return qmatmul_t<UnpackQ4_0>(job, i0, i1, j0, j1);
    case DType::q4_1: return qmatmul_t<UnpackQ4_1>(job, i0, i1, j0, j1);
    case DType::q5_0: return qmatmul_t<UnpackQ5_0>(job, i0, i1, j0, j1);
    case DType::q5_1: return qmatmul_t<UnpackQ5_1>(job, i0, i1, j0, j1);
    case DType::q8_0: return qmatmul_t<UnpackQ8_0>(job, i0, i1, j0, j1);
    case DType::q4_k: return qmatmul_t<UnpackQK<false>>(job, i0, i1, j0, j1);
    case DType::q5_k: return qmatmul_t<UnpackQK<true>>(job, i0, i1, j0, j1);
    case DType::q6_k: return qmatmul_t<UnpackQ6_K>(job, i0, i1, j0, j1);
    default: return;
  }
}

template <class U>
void fill_one(const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst) {
  const LaneIndex li{lane_index(chunk_map(l.kind, static_cast<int>(l.full_blocks))),
                     lane_index(chunk_map(l.kind, static_cast<int>(l.last_blocks)))};
  fill_cache<U>(row, l, li, c, c + 1, dst);
}

void fill_any(DType t, const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst) {
  switch (t) {
    case DType::q4_0: return fill_one<UnpackQ4_0>(row, l, c, dst);
    case DType::q4_1: return fill_one<UnpackQ4_1>(row, l, c, dst);
    case DType::q5_0: return fill_one<UnpackQ5_0>(row, l, c, dst);
    case DType::q5_1: return fill_one<UnpackQ5_1>(row, l, c, dst);
    case DType::q8_0: return fill_one<UnpackQ8_0>(row, l, c, dst);
    case DType::q4_k: return fill_one<UnpackQK<false>>(row, l, c, dst);
    case DType::q5_k: return fill_one<UnpackQK<true>>(row, l, c, dst);
    case DType::q6_k: return fill_one<UnpackQ6_K>(row, l, c, dst);
    default: return;
  }
}

// ---- activation quantization -----------------------------------------------------------

// The sum of 16 int32 lanes in vector adds, which wrap. GCC's _mm512_reduce_add_epi32 ends in
// a scalar int addition, undefined on overflow: a NaN or infinite activation converts to
// INT32_MIN lanes (a fuzz_gguf model, once its KV cache is f16 and rounds large values to
// infinity), and UBSan stops there. Finite blocks (|q| <= 127) never come near overflow.
WT_INLINE int32_t hsum_epi32(__m512i v) {
  const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

void quantize_row(const float* x, int64_t k, ActKind kind, uint8_t* dst) {
  const ActLayout l = act_layout(k, kind);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t c = 0; c < l.n_chunks; ++c) {
    alignas(64) int8_t q[16][32];
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
      const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, _mm512_set1_ps(id)));  // nearest even
      const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, _mm512_set1_ps(id)));
      _mm_store_si128(reinterpret_cast<__m128i*>(q[b]), _mm512_cvtepi32_epi8(q0));
      _mm_store_si128(reinterpret_cast<__m128i*>(q[b] + 16), _mm512_cvtepi32_epi8(q1));
      dx[b] = d;
      sum[b][0] = hsum_epi32(q0);
      sum[b][1] = hsum_epi32(q1);
    }
    act_store_chunk(l, c, q, dx, sum, dst);
  }
}

// ---- float weights (F32 / F16 / BF16): f32 FMA in 4 x 3 register tiles ------------------

template <DType T>
inline __m512 load_w(const uint8_t* w, int64_t e) {
  if constexpr (T == DType::f32) return _mm512_loadu_ps(reinterpret_cast<const float*>(w) + e);
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2 * e));
  if constexpr (T == DType::f16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
template <DType T>
inline __m512 load_w_tail(const uint8_t* w, int64_t e, __mmask16 mk) {
  if constexpr (T == DType::f32) return _mm512_maskz_loadu_ps(mk, reinterpret_cast<const float*>(w) + e);
  const __m256i h = _mm256_maskz_loadu_epi16(mk, w + 2 * e);
  if constexpr (T == DType::f16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <DType T, int MR, int NR>
void ftile(const uint8_t* const* w, const float* const* x, float* const* y, int64_t k) {
  __m512 acc[MR][NR];
  #pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t e = 0;
  for (; e + 16 <= k; e += 16) {
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 wv = load_w<T>(w[i], e);
      #pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[j] + e), acc[i][j]);
    }
  }
  if (e < k) {
    const __mmask16 mk = static_cast<__mmask16>((1u << (k - e)) - 1);
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 wv = load_w_tail<T>(w[i], e, mk);
      #pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mk, x[j] + e), acc[i][j]);
    }
  }
  const __m512 z = _mm512_setzero_ps();
  #pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    const __m128 r = reduce4(acc[0][j], MR > 1 ? acc[1 % MR][j] : z, MR > 2 ? acc[2 % MR][j] : z,
                             MR > 3 ? acc[3 % MR][j] : z);
    _mm_mask_storeu_ps(y[j], static_cast<__mmask8>((1u << MR) - 1), r);
  }
}

template <DType T, int MR, int... N>
constexpr std::array<FTileFn, sizeof...(N)> ftile_row(std::integer_sequence<int, N...>) {
  return {&ftile<T, MR, N + 1>...};
}
template <DType T>
constexpr std::array<std::array<FTileFn, kNR>, kMR> kFTiles = {
    ftile_row<T, 1>(std::make_integer_sequence<int, kNR>{}), ftile_row<T, 2>(std::make_integer_sequence<int, kNR>{}),
    ftile_row<T, 3>(std::make_integer_sequence<int, kNR>{}), ftile_row<T, 4>(std::make_integer_sequence<int, kNR>{})};

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

const Kernels kAvx512Kernels = {"avx512-vnni", quantize_row, qmatmul, fmatmul, fill_any, unsigned_offset};

}  // namespace wt::cpu::mm

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
