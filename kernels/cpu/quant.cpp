#include "quant.h"

#include <algorithm>
#include <cmath>

namespace wt::cpu {

// ---- f16 / bf16 ------------------------------------------------------------------------

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000 | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // 112 = 127 - 15
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: normalize the mantissa; the value is mant * 2^-24.
    int e = 113;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FF) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000) return sign | 0x7E00;  // NaN
  if (ax >= 0x477FF000) return sign | 0x7C00;  // >= 65520 rounds to inf
  if (ax < 0x38800000) {
    // Subnormal or zero in f16: value / 2^-24, rounded to nearest even.
    if (ax < 0x33000000) return sign;  // < 2^-25: rounds to 0
    const uint32_t e = ax >> 23;
    const uint32_t m = (ax & 0x7FFFFF) | 0x800000;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return sign | static_cast<uint16_t>(r);
  }
  // Normal: rebias and round the 13 dropped mantissa bits to nearest even (a carry into
  // the exponent is the correct result).
  uint32_t r = ax - 0x38000000;  // exponent 127 -> 15
  r += 0xFFF + ((r >> 13) & 1);
  return sign | static_cast<uint16_t>(r >> 13);
}

uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

// ---- weight blocks ---------------------------------------------------------------------

void unpack_block(DType t, const uint8_t* row, int64_t b, WBlock* o) {
  switch (t) {
    case DType::q4_0: {
      const uint8_t* p = row + b * 18;
      const float d = f16_to_f32(load_u16(p));
      for (int j = 0; j < 16; ++j) {
        o->q[j] = static_cast<int8_t>((p[2 + j] & 0xF) - 8);
        o->q[j + 16] = static_cast<int8_t>((p[2 + j] >> 4) - 8);
      }
      o->d[0] = o->d[1] = d;
      o->m = 0.0f;
      return;
    }
    case DType::q4_1: {
      const uint8_t* p = row + b * 20;
      for (int j = 0; j < 16; ++j) {
        o->q[j] = static_cast<int8_t>(p[4 + j] & 0xF);
        o->q[j + 16] = static_cast<int8_t>(p[4 + j] >> 4);
      }
      o->d[0] = o->d[1] = f16_to_f32(load_u16(p));
      o->m = f16_to_f32(load_u16(p + 2));
      return;
    }
    case DType::q5_0:
    case DType::q5_1: {
      const bool min = t == DType::q5_1;
      const uint8_t* p = row + b * (min ? 24 : 22);
      const uint8_t* qs = p + (min ? 8 : 6);
      uint32_t qh;
      std::memcpy(&qh, p + (min ? 4 : 2), 4);  // little-endian, as the hosts Whittle runs on
      const int bias = min ? 0 : 16;
      for (int j = 0; j < 16; ++j) {
        o->q[j] = static_cast<int8_t>(((qs[j] & 0xF) | (((qh >> j) & 1) << 4)) - bias);
        o->q[j + 16] = static_cast<int8_t>(((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - bias);
      }
      o->d[0] = o->d[1] = f16_to_f32(load_u16(p));
      o->m = min ? f16_to_f32(load_u16(p + 2)) : 0.0f;
      return;
    }
    case DType::q8_0: {
      const uint8_t* p = row + b * 34;
      std::memcpy(o->q, p + 2, 32);
      o->d[0] = o->d[1] = f16_to_f32(load_u16(p));
      o->m = 0.0f;
      return;
    }
    case DType::q4_k:
    case DType::q5_k: {
      const bool five = t == DType::q5_k;
      const uint8_t* p = row + (b / 8) * (five ? 176 : 144);
      const int s = static_cast<int>(b % 8);
      int sc, mn;
      k_scale_min(p + 4, s, &sc, &mn);
      const uint8_t* qs = p + (five ? 48 : 16) + 32 * (s / 2);
      const int shift = 4 * (s & 1);
      for (int i = 0; i < 32; ++i) {
        int q = (qs[i] >> shift) & 0xF;
        if (five) q |= ((p[16 + i] >> s) & 1) << 4;
        o->q[i] = static_cast<int8_t>(q);
      }
      o->d[0] = o->d[1] = f16_to_f32(load_u16(p)) * static_cast<float>(sc);
      o->m = -(f16_to_f32(load_u16(p + 2)) * static_cast<float>(mn));
      return;
    }
    case DType::q6_k: {
      const uint8_t* p = row + (b / 8) * 210;
      const int s = static_cast<int>(b % 8);  // sub-block of 32: elements 32 s .. 32 s + 31
      const int h = s / 4, r0 = 32 * (s % 4);
      for (int i = 0; i < 32; ++i) {
        const int r = r0 + i;
        const int lo = (p[64 * h + r % 64] >> (4 * (r / 64))) & 0xF;
        const int hi = (p[128 + 32 * h + r % 32] >> (2 * (r / 32))) & 3;
        o->q[i] = static_cast<int8_t>((lo | (hi << 4)) - 32);
      }
      const float d = f16_to_f32(load_u16(p + 208));
      const int8_t* scales = reinterpret_cast<const int8_t*>(p + 192);
      o->d[0] = d * static_cast<float>(scales[2 * s]);
      o->d[1] = d * static_cast<float>(scales[2 * s + 1]);
      o->m = 0.0f;
      return;
    }
    default:
      return;  // not a quantized type: callers dispatch F32/F16/BF16 themselves
  }
}

void dequantize(DType t, const void* src, float* dst, int64_t n) {
  const uint8_t* s = static_cast<const uint8_t*>(src);
  switch (t) {
    case DType::f32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::f16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load_u16(s + 2 * i));
      return;
    case DType::bf16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(s + 2 * i));
      return;
    default:
      break;
  }
  // Quantized: x = d q + m, each product rounded to f32 as the reference does.
  WBlock blk;
  for (int64_t b = 0; b < n / 32; ++b) {
    unpack_block(t, s, b, &blk);
    for (int e = 0; e < 32; ++e) {
      dst[32 * b + e] = blk.d[e / 16] * static_cast<float>(blk.q[e]) + blk.m;
    }
  }
}

// ---- quantizers (tests, tools) ---------------------------------------------------------

void quantize_q4_0(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 18) {
    float amax = 0.0f, vmax = 0.0f;  // the value with the largest magnitude maps to -8
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        vmax = x[j];
      }
    }
    const float d = vmax / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(dst, &dh, 2);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
      dst[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q4_1(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 20) {
    float lo = x[0], hi = x[0];
    for (int j = 1; j < 32; ++j) {
      lo = std::min(lo, x[j]);
      hi = std::max(hi, x[j]);
    }
    const float d = (hi - lo) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d), mh = f32_to_f16(lo);
    std::memcpy(dst, &dh, 2);
    std::memcpy(dst + 2, &mh, 2);
    for (int j = 0; j < 16; ++j) {
      const int a = std::min(15, static_cast<int>((x[j] - lo) * id + 0.5f));
      const int c = std::min(15, static_cast<int>((x[j + 16] - lo) * id + 0.5f));
      dst[4 + j] = static_cast<uint8_t>(a | (c << 4));
    }
  }
}

// Q5_0: as Q4_0 with 32 levels (the largest magnitude maps to -16).
void quantize_q5_0(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 22) {
    float amax = 0.0f, vmax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        vmax = x[j];
      }
    }
    const float d = vmax / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(dst, &dh, 2);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(31, static_cast<int>(x[j] * id + 16.5f));
      const int hi = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
      dst[6 + j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j;
      qh |= static_cast<uint32_t>(hi >> 4) << (j + 16);
    }
    std::memcpy(dst + 2, &qh, 4);
  }
}

// Q5_1: as Q4_1 with 32 levels.
void quantize_q5_1(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 24) {
    float lo = x[0], hi = x[0];
    for (int j = 1; j < 32; ++j) {
      lo = std::min(lo, x[j]);
      hi = std::max(hi, x[j]);
    }
    const float d = (hi - lo) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d), mh = f32_to_f16(lo);
    std::memcpy(dst, &dh, 2);
    std::memcpy(dst + 2, &mh, 2);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int a = std::min(31, static_cast<int>((x[j] - lo) * id + 0.5f));
      const int c = std::min(31, static_cast<int>((x[j + 16] - lo) * id + 0.5f));
      dst[8 + j] = static_cast<uint8_t>((a & 0xF) | ((c & 0xF) << 4));
      qh |= static_cast<uint32_t>(a >> 4) << j;
      qh |= static_cast<uint32_t>(c >> 4) << (j + 16);
    }
    std::memcpy(dst + 4, &qh, 4);
  }
}

void quantize_q8_0(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(dst, &dh, 2);
    for (int j = 0; j < 32; ++j) dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(x[j] * id)));
  }
}

// ---- quantized activations -------------------------------------------------------------

namespace {

// The lane assignments (see quant.h). Each is what a few shuffles of naturally unpacked
// weights give: 16 blocks = a 4x4 dword transpose of four 4-block groups, 8 blocks = a
// 64-bit interleave of two groups, 4 blocks = one group (elements 0..15 then 16..31 of
// each block in a 128-bit lane), 2 blocks = half a group, half16 = the 4x4 transpose of
// the low and high halves of two Q6_K groups.
constexpr ChunkMap make_map(ActKind kind, int nb) {
  ChunkMap m{};
  m.n_blocks = nb;
  m.n_vec = nb / 2;
  m.lanes_per_unit = kind == ActKind::half16 ? 1 : 16 / nb;
  for (int l = 0; l < 16; ++l) {
    const int a = l / 4, t = l % 4;
    for (int v = 0; v < m.n_vec; ++v) {
      int block = 0, half = 0, elem = 0;
      if (kind == ActKind::half16) {
        block = 4 * (t / 2) + a, half = t % 2, elem = 16 * half + 4 * v;
      } else if (nb == 16) {
        block = 4 * t + a, elem = 4 * v;
      } else if (nb == 8) {
        block = t < 2 ? a : 4 + a, elem = 8 * v + 4 * (t % 2);
      } else if (nb == 4) {
        block = a, elem = 16 * v + 4 * t;
      } else {
        block = a % 2, elem = 16 * (a / 2) + 4 * t;
      }
      m.block[l] = static_cast<uint8_t>(block);
      m.half[l] = static_cast<uint8_t>(half);
      m.unit[l] = static_cast<uint8_t>(kind == ActKind::half16 ? 2 * block + half : block);
      m.elem[v][l] = static_cast<uint8_t>(elem);
    }
  }
  return m;
}

constexpr ChunkMap kMaps[5] = {make_map(ActKind::block32, 16), make_map(ActKind::block32, 8),
                               make_map(ActKind::block32, 4), make_map(ActKind::block32, 2),
                               make_map(ActKind::half16, 8)};

}  // namespace

const ChunkMap& chunk_map(ActKind kind, int n_blocks) {
  if (kind == ActKind::half16) return kMaps[4];
  return n_blocks >= 16 ? kMaps[0] : n_blocks >= 8 ? kMaps[1] : n_blocks >= 4 ? kMaps[2] : kMaps[3];
}

ActLayout act_layout(int64_t k, ActKind kind) {
  ActLayout l{};
  l.kind = kind;
  l.n_blocks = k / 32;
  l.full_blocks = kind == ActKind::half16 ? 8 : 16;
  const int64_t r = l.n_blocks % l.full_blocks;
  l.n_chunks = l.n_blocks / l.full_blocks + (r ? 1 : 0);
  l.last_blocks = r == 0 || kind == ActKind::half16 ? l.full_blocks : r <= 2 ? 2 : r <= 4 ? 4 : r <= 8 ? 8 : 16;
  l.chunk_bytes = chunk_vec_bytes(l.full_blocks) + 128;
  l.row_bytes = l.n_chunks == 0 ? 64 : (l.n_chunks - 1) * l.chunk_bytes + chunk_vec_bytes(l.last_blocks) + 128;
  return l;
}

void act_store_chunk(const ActLayout& l, int64_t c, const int8_t (*q)[32], const float* dx,
                     const int32_t (*sum)[2], uint8_t* dst) {
  const ChunkMap& m = chunk_map(l.kind, static_cast<int>(l.chunk_blocks(c)));
  uint8_t* p = dst + c * l.chunk_bytes;
  for (int v = 0; v < m.n_vec; ++v)
    for (int L = 0; L < 16; ++L) std::memcpy(p + 64 * v + 4 * L, &q[m.block[L]][m.elem[v][L]], 4);
  float dx16[16], sx16[16];
  for (int L = 0; L < 16; ++L) {
    const int b = m.block[L];
    dx16[L] = dx[b];
    // Added in 64 bits: the SIMD quantizers turn a NaN or infinite activation into INT32_MIN
    // lanes (cvtps2dq's "integer indefinite"), and such half-block sums may sit at the int32
    // limits. A non-finite row then yields garbage, as it must, but no undefined behaviour.
    const int64_t both = int64_t{sum[b][0]} + sum[b][1];
    sx16[L] = l.kind == ActKind::half16
                  ? dx[b] * static_cast<float>(sum[b][m.half[L]])
                  : dx[b] * static_cast<float>(both) / static_cast<float>(m.lanes_per_unit);
  }
  std::memcpy(p + 64 * m.n_vec, dx16, 64);
  std::memcpy(p + 64 * m.n_vec + 64, sx16, 64);
}

void weight_chunk_ref(DType t, const uint8_t* row, const ActLayout& l, int64_t c, int offset, uint8_t* dst) {
  const ChunkMap& m = chunk_map(l.kind, static_cast<int>(l.chunk_blocks(c)));
  const int64_t b0 = c * l.full_blocks;
  int8_t q[16][32] = {};
  float d[16][2] = {}, mo[16][2] = {};
  for (int b = 0; b < m.n_blocks && b0 + b < l.n_blocks; ++b) {
    WBlock wb;
    unpack_block(t, row, b0 + b, &wb);
    for (int e = 0; e < 32; ++e) q[b][e] = static_cast<int8_t>(static_cast<uint8_t>(wb.q[e] + offset));
    for (int h = 0; h < 2; ++h) {
      d[b][h] = wb.d[h];
      mo[b][h] = wb.m - static_cast<float>(offset) * wb.d[h];
    }
  }
  for (int v = 0; v < m.n_vec; ++v)
    for (int L = 0; L < 16; ++L) std::memcpy(dst + 64 * v + 4 * L, &q[m.block[L]][m.elem[v][L]], 4);
  float d16[16], m16[16];
  for (int L = 0; L < 16; ++L) {
    d16[L] = d[m.block[L]][m.half[L]];
    m16[L] = mo[m.block[L]][m.half[L]];
  }
  std::memcpy(dst + 64 * m.n_vec, d16, 64);
  std::memcpy(dst + 64 * m.n_vec + 64, m16, 64);
}

void quantize_act_row_ref(const float* x, int64_t k, ActKind kind, uint8_t* dst) {
  const ActLayout l = act_layout(k, kind);
  for (int64_t c = 0; c < l.n_chunks; ++c) {
    int8_t q[16][32] = {};
    float dx[16] = {};
    int32_t sum[16][2] = {};
    const int64_t b0 = c * l.full_blocks;
    const int64_t nb = std::min<int64_t>(l.chunk_blocks(c), l.n_blocks - b0);
    for (int64_t lb = 0; lb < nb; ++lb) {
      const float* xb = x + 32 * (b0 + lb);
      float amax = 0.0f;
      for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(xb[e]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int e = 0; e < 32; ++e) {
        const int32_t v = round_even(xb[e] * id);
        q[lb][e] = static_cast<int8_t>(v);
        sum[lb][e / 16] += v;
      }
      dx[lb] = d;
    }
    act_store_chunk(l, c, q, dx, sum, dst);
  }
}

}  // namespace wt::cpu
