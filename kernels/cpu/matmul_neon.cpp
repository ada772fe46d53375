// NEON matmul path for aarch64 (Jetson). NEON is baseline there; the ARMv8.2 dot product
// (sdot) is optional and picked at run time (HWCAP_ASIMDDP, see matmul.cpp).
//
// Same scheme as the x86 paths: a tile of weight rows is unpacked (the bytes of
// weight_chunk_ref with the formats' signed integers, since sdot and smull are s8 x s8) into
// the activation chunk layout in an L1 cache, one panel of 64 blocks at a time, and every
// activation row is run against it. A 64-byte layout vector is four 16-byte quarters (lanes 0-3, 4-7, ...):
//   isum = sum_v dot(w[v], x[v])  (sdot, or smull + pairwise adds: lane L = bytes 4L..4L+3)
//   acc += cvt(isum) * (d16 dx16) + m16 sx16
// Decode is the same code with one activation row.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "matmul_impl.h"
#include "quant.h"

namespace wt::cpu::mm {
namespace {

#define WT_INLINE inline __attribute__((always_inline))

constexpr int64_t kPanelBlocks = 64;
constexpr int kMR = 4;
constexpr int kNR = 4;
constexpr int64_t kCacheRowBytes = 3072;

template <bool kDot>
WT_INLINE int32x4_t dot4(int32x4_t acc, int8x16_t w, int8x16_t a) {
  if constexpr (kDot) {
    // Inline assembly, so this file needs no -march flag (the rest must stay ARMv8.0);
    // it only runs where the CPU reports the dot product.
    __asm__(".arch armv8.2-a+dotprod\n\tsdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(w), "w"(a));
    return acc;
  } else {
    // |w a| <= 128 * 127, so a pair of products fits in 16 bits.
    const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(a));
    const int16x8_t hi = vmull_high_s8(w, a);
    return vpadalq_s16(acc, vpaddq_s16(lo, hi));
  }
}

template <bool kDot, int MR, int NR, int NV>
WT_INLINE void tile_chunk(float32x4_t (&acc)[MR][NR], const uint8_t* w, const uint8_t* const* a, int64_t a_off) {
  for (int i = 0; i < MR; ++i) {
    const uint8_t* wi = w + i * kCacheRowBytes;
    for (int j = 0; j < NR; ++j) {
      const uint8_t* aj = a[j] + a_off;
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        int32x4_t isum = vdupq_n_s32(0);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v)
          isum = dot4<kDot>(isum, vld1q_s8(reinterpret_cast<const int8_t*>(wi + 64 * v + 16 * q)),
                            vld1q_s8(reinterpret_cast<const int8_t*>(aj + 64 * v + 16 * q)));
        const float* ws = reinterpret_cast<const float*>(wi + 64 * NV) + 4 * q;
        const float* as = reinterpret_cast<const float*>(aj + 64 * NV) + 4 * q;
        acc[i][j] = vfmaq_f32(acc[i][j], vcvtq_f32_s32(isum), vmulq_f32(vld1q_f32(ws), vld1q_f32(as)));
        acc[i][j] = vfmaq_f32(acc[i][j], vld1q_f32(ws + 16), vld1q_f32(as + 16));
      }
    }
  }
}

struct TileArgs {
  const uint8_t* cache;
  const uint8_t* const* xr;
  float* const* yr;  // offset to the tile's first weight row
  const ActLayout* l;
  int64_t c0, c1;
};

template <bool kDot, int MR, int NR>
void tile(const TileArgs& t) {
  float32x4_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  for (int64_t c = t.c0; c < t.c1; ++c) {
    const uint8_t* w = t.cache + (c - t.c0) * t.l->chunk_bytes;
    const int64_t off = c * t.l->chunk_bytes;
    switch (t.l->chunk_blocks(c) / 2) {  // vectors of the chunk
      case 8: tile_chunk<kDot, MR, NR, 8>(acc, w, t.xr, off); break;
      case 4: tile_chunk<kDot, MR, NR, 4>(acc, w, t.xr, off); break;
      case 2: tile_chunk<kDot, MR, NR, 2>(acc, w, t.xr, off); break;
      default: tile_chunk<kDot, MR, NR, 1>(acc, w, t.xr, off); break;
    }
  }
  for (int j = 0; j < NR; ++j)
    for (int i = 0; i < MR; ++i) {
      const float r = vaddvq_f32(acc[i][j]);
      t.yr[j][i] = t.c0 == 0 ? r : t.yr[j][i] + r;
    }
}

using TileFn = void (*)(const TileArgs&);
template <bool kDot, int MR, int... N>
constexpr std::array<TileFn, sizeof...(N)> tile_row(std::integer_sequence<int, N...>) {
  return {&tile<kDot, MR, N + 1>...};
}
template <bool kDot>
constexpr std::array<std::array<TileFn, kNR>, kMR> kTiles = {
    tile_row<kDot, 1>(std::make_integer_sequence<int, kNR>{}), tile_row<kDot, 2>(std::make_integer_sequence<int, kNR>{}),
    tile_row<kDot, 3>(std::make_integer_sequence<int, kNR>{}), tile_row<kDot, 4>(std::make_integer_sequence<int, kNR>{})};

// ---- weight unpacking ------------------------------------------------------------------
// The bytes weight_chunk_ref(t, row, l, c, 0, dst) writes, with vector loads and bit
// operations instead of its per-element loop: each block in two registers (elements 0..15
// and 16..31, the format's signed integers), then a 4x4 dword transpose per 16-byte quarter
// of the chunk's vectors gives chunk_map's lane order (quant.h): in a 16-block chunk,
// quarter a of vector v holds elements 4v.. of blocks a, 4 + a, 8 + a, 12 + a; in a Q6_K
// chunk, both halves of blocks a and 4 + a.

struct Blk {
  int8x16_t lo, hi;
  float d[2];  // per half block (they differ only for Q6_K)
  float m;
};

WT_INLINE Blk zero_blk() { return Blk{vdupq_n_s8(0), vdupq_n_s8(0), {0.0f, 0.0f}, 0.0f}; }

WT_INLINE int8x16_t minus(uint8x16_t v, int bias) { return vsubq_s8(vreinterpretq_s8_u8(v), vdupq_n_s8(static_cast<int8_t>(bias))); }

// 16 where bit mask[j] of bytes[j] is set, else 0: a 5th bit per element.
WT_INLINE uint8x16_t bit4(uint8x16_t bytes, uint8x16_t mask) { return vandq_u8(vtstq_u8(bytes, mask), vdupq_n_u8(16)); }

// Q5_0 / Q5_1: bit j of the block's 32-bit qh is bit 4 of element j. A table lookup puts qh
// byte j / 8 in byte j (elements 0..15: qh bytes 0, 1; 16..31: bytes 2, 3), tested against 1 << j % 8.
WT_INLINE void add_qh32(const uint8_t* qh, uint8x16_t* lo, uint8x16_t* hi) {
  static constexpr uint8_t kIdx[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  uint32_t w;
  std::memcpy(&w, qh, 4);
  const uint8x16_t q = vreinterpretq_u8_u32(vdupq_n_u32(w)), bit = vld1q_u8(kBit);
  *lo = vorrq_u8(*lo, bit4(vqtbl1q_u8(q, vld1q_u8(kIdx)), bit));
  *hi = vorrq_u8(*hi, bit4(vqtbl1q_u8(q, vld1q_u8(kIdx + 16)), bit));
}

// Block b of a row of type T, as unpack_block gives it (the same f32 products for d and m).
template <DType T>
WT_INLINE Blk unpack(const uint8_t* row, int64_t b) {
  const uint8x16_t mask = vdupq_n_u8(0x0F);
  Blk o;
  o.m = 0.0f;
  if constexpr (T == DType::q4_0 || T == DType::q4_1 || T == DType::q5_0 || T == DType::q5_1) {
    constexpr bool kMin = T == DType::q4_1 || T == DType::q5_1, kFive = T == DType::q5_0 || T == DType::q5_1;
    constexpr int kBytes = kFive ? (kMin ? 24 : 22) : (kMin ? 20 : 18);
    const uint8_t* p = row + b * kBytes;
    const uint8x16_t qs = vld1q_u8(p + (kMin ? 4 : 2) + (kFive ? 4 : 0));
    uint8x16_t lo = vandq_u8(qs, mask), hi = vshrq_n_u8(qs, 4);
    if constexpr (kFive) add_qh32(p + (kMin ? 4 : 2), &lo, &hi);
    constexpr int kBias = kMin ? 0 : (kFive ? 16 : 8);
    o.lo = minus(lo, kBias);
    o.hi = minus(hi, kBias);
    o.d[0] = o.d[1] = f16_to_f32(load_u16(p));
    if constexpr (kMin) o.m = f16_to_f32(load_u16(p + 2));
  } else if constexpr (T == DType::q8_0) {
    const uint8_t* p = row + b * 34;
    o.lo = vld1q_s8(reinterpret_cast<const int8_t*>(p + 2));
    o.hi = vld1q_s8(reinterpret_cast<const int8_t*>(p + 18));
    o.d[0] = o.d[1] = f16_to_f32(load_u16(p));
  } else if constexpr (T == DType::q4_k || T == DType::q5_k) {
    constexpr bool kFive = T == DType::q5_k;
    const uint8_t* p = row + (b / 8) * (kFive ? 176 : 144);
    const int s = static_cast<int>(b % 8);
    int sc, mn;
    k_scale_min(p + 4, s, &sc, &mn);
    const uint8_t* qs = p + (kFive ? 48 : 16) + 32 * (s / 2);  // sub-block s: low nibbles if even
    const uint8x16_t v0 = vld1q_u8(qs), v1 = vld1q_u8(qs + 16);
    uint8x16_t lo = s & 1 ? vshrq_n_u8(v0, 4) : vandq_u8(v0, mask);
    uint8x16_t hi = s & 1 ? vshrq_n_u8(v1, 4) : vandq_u8(v1, mask);
    if constexpr (kFive) {  // bit s of qh[i] is bit 4 of element i
      const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << s));
      lo = vorrq_u8(lo, bit4(vld1q_u8(p + 16), bit));
      hi = vorrq_u8(hi, bit4(vld1q_u8(p + 32), bit));
    }
    o.lo = vreinterpretq_s8_u8(lo);
    o.hi = vreinterpretq_s8_u8(hi);
    o.d[0] = o.d[1] = f16_to_f32(load_u16(p)) * static_cast<float>(sc);
    o.m = -(f16_to_f32(load_u16(p + 2)) * static_cast<float>(mn));
  } else {
    static_assert(T == DType::q6_k);
    const uint8_t* p = row + (b / 8) * 210;
    const int s = static_cast<int>(b % 8), h = s / 4, t = s % 4;  // sub-block t of half h
    // Low 4 bits: ql[64h + 32 (t % 2) + i], low nibble for t < 2; 2 high bits: qh[32h + i] >> 2t.
    const uint8_t* ql = p + 64 * h + 32 * (t % 2);
    const uint8x16_t v0 = vld1q_u8(ql), v1 = vld1q_u8(ql + 16);
    const int8x16_t down = vdupq_n_s8(static_cast<int8_t>(-2 * t));
    const uint8x16_t three = vdupq_n_u8(3);
    const uint8x16_t h0 = vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(p + 128 + 32 * h), down), three), 4);
    const uint8x16_t h1 = vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(p + 144 + 32 * h), down), three), 4);
    o.lo = minus(vorrq_u8(t < 2 ? vandq_u8(v0, mask) : vshrq_n_u8(v0, 4), h0), 32);
    o.hi = minus(vorrq_u8(t < 2 ? vandq_u8(v1, mask) : vshrq_n_u8(v1, 4), h1), 32);
    const float d = f16_to_f32(load_u16(p + 208));
    const int8_t* scales = reinterpret_cast<const int8_t*>(p + 192);
    o.d[0] = d * static_cast<float>(scales[2 * s]);
    o.d[1] = d * static_cast<float>(scales[2 * s + 1]);
  }
  return o;
}

// out[q] dword t = in[t] dword q, stored at dst + 64 q (one quarter of four vectors).
WT_INLINE void transpose4(int8x16_t a, int8x16_t b, int8x16_t c, int8x16_t d, uint8_t* dst) {
  const int32x4_t t0 = vtrn1q_s32(vreinterpretq_s32_s8(a), vreinterpretq_s32_s8(b));
  const int32x4_t t1 = vtrn2q_s32(vreinterpretq_s32_s8(a), vreinterpretq_s32_s8(b));
  const int32x4_t t2 = vtrn1q_s32(vreinterpretq_s32_s8(c), vreinterpretq_s32_s8(d));
  const int32x4_t t3 = vtrn2q_s32(vreinterpretq_s32_s8(c), vreinterpretq_s32_s8(d));
  auto s64 = [](int32x4_t v) { return vreinterpretq_s64_s32(v); };
  vst1q_s64(reinterpret_cast<int64_t*>(dst), vtrn1q_s64(s64(t0), s64(t2)));
  vst1q_s64(reinterpret_cast<int64_t*>(dst + 64), vtrn1q_s64(s64(t1), s64(t3)));
  vst1q_s64(reinterpret_cast<int64_t*>(dst + 128), vtrn2q_s64(s64(t0), s64(t2)));
  vst1q_s64(reinterpret_cast<int64_t*>(dst + 192), vtrn2q_s64(s64(t1), s64(t3)));
}

// Chunk c of a row into the cache. A row's last chunk laid out for 8, 4 or 2 blocks (once
// per row at most) goes through weight_chunk_ref.
template <DType T>
void fill_chunk(const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst) {
  constexpr bool kHalf = T == DType::q6_k;
  const ChunkMap& map = chunk_map(l.kind, static_cast<int>(l.chunk_blocks(c)));
  if (!kHalf && map.n_blocks != 16) return weight_chunk_ref(T, row, l, c, 0, dst);
  const int64_t b0 = c * l.full_blocks;
  Blk b[16];
  for (int i = 0; i < map.n_blocks; ++i) b[i] = b0 + i < l.n_blocks ? unpack<T>(row, b0 + i) : zero_blk();
  for (int a = 0; a < 4; ++a) {
    if constexpr (kHalf) {
      transpose4(b[a].lo, b[a].hi, b[4 + a].lo, b[4 + a].hi, dst + 16 * a);
    } else {
      transpose4(b[a].lo, b[4 + a].lo, b[8 + a].lo, b[12 + a].lo, dst + 16 * a);
      transpose4(b[a].hi, b[4 + a].hi, b[8 + a].hi, b[12 + a].hi, dst + 256 + 16 * a);
    }
  }
  float d16[32];  // d16 then m16, as weight_chunk_ref computes m16 with offset 0
  for (int L = 0; L < 16; ++L) {
    const Blk& x = b[map.block[L]];
    d16[L] = x.d[map.half[L]];
    d16[16 + L] = x.m - 0.0f * x.d[map.half[L]];
  }
  std::memcpy(dst + 64 * map.n_vec, d16, sizeof d16);
}

using FillFn = void (*)(const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst);
inline FillFn fill_for(DType t) {
  switch (t) {
    case DType::q4_0: return &fill_chunk<DType::q4_0>;
    case DType::q4_1: return &fill_chunk<DType::q4_1>;
    case DType::q5_0: return &fill_chunk<DType::q5_0>;
    case DType::q5_1: return &fill_chunk<DType::q5_1>;
    case DType::q8_0: return &fill_chunk<DType::q8_0>;
    case DType::q4_k: return &fill_chunk<DType::q4_k>;
    case DType::q5_k: return &fill_chunk<DType::q5_k>;
    case DType::q6_k: return &fill_chunk<DType::q6_k>;
    default: return nullptr;
  }
}

void fill_any(DType t, const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst) {
  if (const FillFn fill = fill_for(t)) fill(row, l, c, dst);
}
int signed_offset(DType) { return 0; }

template <bool kDot>
void qmatmul(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const ActLayout l = act_layout(job.k, act_kind(job.wtype));
  const FillFn fill = fill_for(job.wtype);
  if (!fill) return;
  alignas(64) uint8_t cache[kMR * kCacheRowBytes];
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
        for (int i = 0; i < mr; ++i)
          for (int64_t c = c0; c < c1; ++c)
            fill(job.w + (it + i) * job.w_stride, l, c, cache + i * kCacheRowBytes + (c - c0) * l.chunk_bytes);
        for (int64_t jt = ja; jt < jb; jt += kNR) {
          const int nr = static_cast<int>(std::min<int64_t>(kNR, jb - jt));
          for (int j = 0; j < nr; ++j) {
            xr[j] = job.xq + (jt + j) * job.xq_stride;
            yr[j] = reinterpret_cast<float*>(job.y.row(jt + j)) + it;
          }
          kTiles<kDot>[mr - 1][nr - 1](TileArgs{cache, xr, yr, &l, c0, c1});
        }
      }
    }
  }
}

// ---- activation quantization -----------------------------------------------------------

void quantize_row(const float* x, int64_t k, ActKind kind, uint8_t* dst) {
  const ActLayout l = act_layout(k, kind);
  for (int64_t c = 0; c < l.n_chunks; ++c) {
    alignas(16) int8_t q[16][32];
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
      float32x4_t v[8];
      float32x4_t mx = vdupq_n_f32(0.0f);
      for (int t = 0; t < 8; ++t) {
        v[t] = vld1q_f32(xb + 4 * t);
        mx = vmaxq_f32(mx, vabsq_f32(v[t]));
      }
      const float d = vmaxvq_f32(mx) / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
      for (int t = 0; t < 8; t += 2) {
        const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[t], id));  // nearest even
        const int32x4_t bq = vcvtnq_s32_f32(vmulq_n_f32(v[t + 1], id));
        s[t / 4] = vaddq_s32(s[t / 4], vaddq_s32(a, bq));
        const int16x8_t h = vcombine_s16(vmovn_s32(a), vmovn_s32(bq));
        vst1_s8(q[b] + 4 * t, vmovn_s16(h));
      }
      dx[b] = d;
      sum[b][0] = vaddvq_s32(s[0]);
      sum[b][1] = vaddvq_s32(s[1]);
    }
    act_store_chunk(l, c, q, dx, sum, dst);
  }
}

// ---- float weights (F32 / F16 / BF16): f32 FMA in 4 x 4 register tiles ------------------

template <DType T>
WT_INLINE float32x4_t load_w(const uint8_t* w, int64_t e) {
  if constexpr (T == DType::f32) return vld1q_f32(reinterpret_cast<const float*>(w) + e);
  const uint16x4_t h = vld1_u16(reinterpret_cast<const uint16_t*>(w + 2 * e));
  if constexpr (T == DType::f16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
  return vreinterpretq_f32_u32(vshlq_n_u32(vmovl_u16(h), 16));
}

template <DType T, int MR, int NR>
void ftile(const uint8_t* const* w, const float* const* x, float* const* y, int64_t k) {
  float32x4_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  int64_t e = 0;
  for (; e + 4 <= k; e += 4) {
    for (int i = 0; i < MR; ++i) {
      const float32x4_t wv = load_w<T>(w[i], e);
      for (int j = 0; j < NR; ++j) acc[i][j] = vfmaq_f32(acc[i][j], wv, vld1q_f32(x[j] + e));
    }
  }
  if (e < k) {  // tail through a zero-padded buffer, the same lanes as a full step
    float wt[MR][4] = {}, xt[NR][4] = {};
    for (int i = 0; i < MR; ++i) dequantize(T, w[i] + (T == DType::f32 ? 4 : 2) * e, wt[i], k - e);
    for (int j = 0; j < NR; ++j) std::memcpy(xt[j], x[j] + e, static_cast<size_t>(k - e) * 4);
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] = vfmaq_f32(acc[i][j], vld1q_f32(wt[i]), vld1q_f32(xt[j]));
  }
  for (int j = 0; j < NR; ++j)
    for (int i = 0; i < MR; ++i) y[j][i] = vaddvq_f32(acc[i][j]);
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

const Kernels kNeonKernels = {"neon", quantize_row, qmatmul<false>, fmatmul, fill_any, signed_offset};
const Kernels kNeonDotKernels = {"neon-dot", quantize_row, qmatmul<true>, fmatmul, fill_any, signed_offset};

}  // namespace wt::cpu::mm

#endif  // __aarch64__
