// Weight loads for one type, chosen by a -D define (WTYPE_F32, WTYPE_F16, WTYPE_BF16,
// WTYPE_Q8_0, WTYPE_Q4_0, WTYPE_Q4_1, WTYPE_Q5_0, WTYPE_Q5_1, WTYPE_Q4_K, WTYPE_Q5_K,
// WTYPE_Q6_K) on the including kernel, which sets W_BINDING first. Rows start at `row`: in
// elements for f32/f16/bf16, in bytes for the quantized types (GGUF rows of blocks need not
// be 4-byte aligned). Block layouts are those of kernels/cpu/quant.h, read from a uint view
// (bf16 too) so no 8-bit or 16-bit storage feature is needed.
//   load_w(row, i): element i.
//   load_w8(row, u, a, b, ea, eb) = load_w8h(load_head(row, u), row, u, a, b, ea, eb): the
//     8 weights of unit u (k / 8 units per row) as
//     a = elements ea..ea+3 and b = elements eb..eb+3. A unit is 4 bytes of nibbles (Q4, Q5:
//     low nibbles are elements 4q.., high ones 16+4q..; Q5 adds their 5th bits from qh;
//     Q4_K, Q5_K: the low nibbles are 4 elements of sub-block 2j, the high ones the same 4 of
//     sub-block 2j+1; Q6_K: 4 bytes of ql, low nibbles r.., high ones r+64..), 8 bytes of
//     int8 (Q8_0) or 8 consecutive elements, so a lane decodes whole words, not single bytes.
//     The head (WHead: a block's scales, shared by its kHeadUnits units) is split off so a
//     kernel that walks a row's units in order loads it once per block, not once per unit.
// kWAlign (common.glsl, specialization constant 1): every block starts on a multiple of it
// (4: plain word loads; 2: no byte path; 1: any offset). A constant, not a uniform flag, so
// the paths it rules out are compiled away: a CPU device (lavapipe) runs both sides of every
// branch, and each load there is a loop over the lanes.

#if defined(WTYPE_F32) || defined(WTYPE_F16) || defined(WTYPE_BF16)
// No head: every unit stands alone.
const uint kHeadUnits = 1u;
struct WHead {
  uint unused;
};
WHead load_head(uint row, uint u) { return WHead(0u); }
#endif

#if defined(WTYPE_F32)
layout(binding = W_BINDING) readonly buffer WBuf { float w[]; };
float load_w(uint row, uint i) { return w[row + i]; }
void load_w8h(WHead h, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  ea = 8u * u;
  eb = ea + 4u;
  const uint i = row + ea;
  a = vec4(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
  b = vec4(w[i + 4u], w[i + 5u], w[i + 6u], w[i + 7u]);
}
#elif defined(WTYPE_F16)
layout(binding = W_BINDING) readonly buffer WBuf { float16_t w[]; };
float load_w(uint row, uint i) { return float(w[row + i]); }
void load_w8h(WHead h, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  ea = 8u * u;
  eb = ea + 4u;
  const uint i = row + ea;
  a = vec4(float(w[i]), float(w[i + 1u]), float(w[i + 2u]), float(w[i + 3u]));
  b = vec4(float(w[i + 4u]), float(w[i + 5u]), float(w[i + 6u]), float(w[i + 7u]));
}
#elif defined(WTYPE_BF16)
// bf16: the high half of an f32. Read as words (two elements each), so no 16-bit storage.
layout(binding = W_BINDING) readonly buffer WBuf { uint w[]; };
float bf16_lo(uint v) { return uintBitsToFloat(v << 16); }
float bf16_hi(uint v) { return uintBitsToFloat(v & 0xFFFF0000u); }
float load_w(uint row, uint i) {
  const uint e = row + i;
  const uint v = w[e >> 1];
  return (e & 1u) == 0u ? bf16_lo(v) : bf16_hi(v);
}
void load_w8h(WHead h, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  ea = 8u * u;
  eb = ea + 4u;
  const uint e = row + ea, i = e >> 1;
  uint v0 = w[i], v1 = w[i + 1u], v2 = w[i + 2u], v3 = w[i + 3u];
  if ((e & 1u) != 0u) {  // a row at an odd element (the same for a whole row): shift by one
    const uint v4 = w[i + 4u];
    v0 = (v0 >> 16) | (v1 << 16);
    v1 = (v1 >> 16) | (v2 << 16);
    v2 = (v2 >> 16) | (v3 << 16);
    v3 = (v3 >> 16) | (v4 << 16);
  }
  a = vec4(bf16_lo(v0), bf16_hi(v0), bf16_lo(v1), bf16_hi(v1));
  b = vec4(bf16_lo(v2), bf16_hi(v2), bf16_lo(v3), bf16_hi(v3));
}
#else
#if defined(W_TEXEL)
// W_TEXEL: the weights through a uniform texel buffer of 16-byte texels (the allocation's
// view, backends/vulkan/memory.h): lavapipe fetches a texel per lane with vector gathers,
// where a storage load is a loop over the lanes with a bounds check each.
layout(binding = W_BINDING) uniform usamplerBuffer w_tex;
uint fetch_word(uint i) {
  const uvec4 t = texelFetch(w_tex, int(i >> 2));
  const uint c = i & 3u;
  return c == 0u ? t.x : c == 1u ? t.y : c == 2u ? t.z : t.w;
}
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0) || defined(WTYPE_Q4_1) || defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
// W_BLOCKS (blocks of 32 weights, a head and 4 units): a decode step (kTileRows 1) reads a
// block's 2-3 texels once (load_block, below) and decodes it from blkw, where the decoders'
// word reads become constant indexes: 13 texel fetches per Q8_0 block become 3.
#define W_BLOCKS 1
const uint kBlkWordsMax = 9u;  // 34 bytes, the largest of these blocks
uint blkw[kBlkWordsMax];
uint ww(uint i) { return kTileRows == 1u ? blkw[i] : fetch_word(i); }
#else
uint ww(uint i) { return fetch_word(i); }
#endif
#else
layout(binding = W_BINDING) readonly buffer WBuf { uint w[]; };
uint ww(uint i) { return w[i]; }
#endif
uint load_u8(uint b) { return (ww(b >> 2) >> ((b & 3u) * 8u)) & 0xFFu; }
// Two bytes from an even byte offset (one word load); an odd one (a row at an odd address,
// which no loader produces) is read byte by byte. Callers' offsets are even when kWAlign is.
uint load_u16(uint b) {
  if (kWAlign < 2u && (b & 1u) != 0u) return load_u8(b) | (load_u8(b + 1u) << 8);
  return (ww(b >> 2) >> ((b & 2u) * 8u)) & 0xFFFFu;
}
float load_f16(uint b) { return unpackHalf2x16(load_u16(b)).x; }
// Four bytes from a byte offset. The word after is read only when the bytes straddle it,
// so a row ending on the buffer's last word is never read past. On two bytes (kWAlign 2)
// both words are read and one selected, no branch: lanes of one row meet both alignments.
uint load_u32(uint b) {
  const uint i = b >> 2;
  if (kWAlign >= 4u) return ww(i);
  if (kWAlign == 2u) {
    const uint lo = ww(i), hi = ww(i + ((b >> 1) & 1u));
    return mix(lo, (lo >> 16) | (hi << 16), (b & 2u) != 0u);
  }
  const uint s = (b & 3u) * 8u;
  if (s == 0u) return ww(i);
  return (ww(i) >> s) | (ww(i + 1u) << (32u - s));
}
// Eight bytes: three words for two where they straddle (kWAlign 2), not four.
uvec2 load_u32x2(uint b) {
  const uint i = b >> 2;
  if (kWAlign >= 4u) return uvec2(ww(i), ww(i + 1u));
  if (kWAlign == 2u) {
    const uint w0 = ww(i), w1 = ww(i + 1u), w2 = ww(i + 1u + ((b >> 1) & 1u));
    return mix(uvec2(w0, w1), uvec2((w0 >> 16) | (w1 << 16), (w1 >> 16) | (w2 << 16)), bvec2((b & 2u) != 0u));
  }
  return uvec2(load_u32(b), load_u32(b + 4u));
}
// The bytes of v as four floats, byte 0 first.
vec4 u8x4(uint v) { return vec4(v & 0xFFu, (v >> 8) & 0xFFu, (v >> 16) & 0xFFu, v >> 24); }

#if defined(WTYPE_Q8_0)
// 34 bytes / 32: d f16 @0, qs[32] int8 @2; x = q d
const uint kBlockBytes = 34u;
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 5) * kBlockBytes;
  const int q = int(load_u8(blk + 2u + (i & 31u)));
  return float(q >= 128 ? q - 256 : q) * load_f16(blk);
}
vec4 i8x4(uint v) {
  const int s = int(v);
  return vec4(bitfieldExtract(s, 0, 8), bitfieldExtract(s, 8, 8), bitfieldExtract(s, 16, 8), bitfieldExtract(s, 24, 8));
}
const uint kHeadUnits = 4u;
struct WHead {
  float d;
};
WHead load_head(uint row, uint u) { return WHead(load_f16(row + (u >> 2) * kBlockBytes)); }
void load_w8h(WHead h, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 2) * kBlockBytes, q = u & 3u;
  ea = (u >> 2) * 32u + 8u * q;
  eb = ea + 4u;
  const uvec2 v = load_u32x2(blk + 2u + 8u * q);
  a = i8x4(v.x) * h.d;
  b = i8x4(v.y) * h.d;
}

#elif defined(WTYPE_Q4_0) || defined(WTYPE_Q4_1)
// Q4_0 18 bytes / 32: d @0, qs[16] @2; x[j] = (lo(qs[j]) - 8) d, x[j + 16] = (hi(qs[j]) - 8) d
// Q4_1 20 bytes / 32: d @0, m @2, qs[16] @4; x = nibble d + m
#if defined(WTYPE_Q4_0)
const uint kBlockBytes = 18u, kQs = 2u;
#else
const uint kBlockBytes = 20u, kQs = 4u;
#endif
float dequant4(float nib, vec2 dm) {
#if defined(WTYPE_Q4_0)
  return (nib - 8.0) * dm.x;
#else
  return nib * dm.x + dm.y;
#endif
}
vec4 dequant4(vec4 nib, vec2 dm) {
#if defined(WTYPE_Q4_0)
  return (nib - 8.0) * dm.x;
#else
  return nib * dm.x + dm.y;
#endif
}
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 5) * kBlockBytes;
  const uint j = i & 31u;
  const uint byte = load_u8(blk + kQs + (j & 15u));
  const uint nib = j < 16u ? (byte & 0xFu) : (byte >> 4);
  return dequant4(float(nib), vec2(load_f16(blk), load_f16(blk + 2u)));
}
const uint kHeadUnits = 4u;
struct WHead {
  vec2 dm;  // Q4_0: .y unused
};
WHead load_head(uint row, uint u) {
  const uint blk = row + (u >> 2) * kBlockBytes;
#if defined(WTYPE_Q4_0)
  return WHead(vec2(load_f16(blk), 0.0));
#else
  return WHead(unpackHalf2x16(load_u32(blk)));
#endif
}
void load_w8h(WHead h, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 2) * kBlockBytes, q = u & 3u;
  const vec2 dm = h.dm;
  const uint v = load_u32(blk + kQs + 4u * q);
  ea = (u >> 2) * 32u + 4u * q;
  eb = ea + 16u;
  a = dequant4(vec4(v & 0xFu, (v >> 8) & 0xFu, (v >> 16) & 0xFu, (v >> 24) & 0xFu), dm);
  b = dequant4(vec4((v >> 4) & 0xFu, (v >> 12) & 0xFu, (v >> 20) & 0xFu, v >> 28), dm);
}
#elif defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
// Q5_0 22 bytes / 32: d @0, qh u32 @2, qs[16] @6; q[j] = lo(qs[j]) | bit j of qh << 4,
//   q[j + 16] = hi(qs[j]) | bit j + 16 of qh << 4; x = (q - 16) d
// Q5_1 24 bytes / 32: d @0, m @2, qh u32 @4, qs[16] @8; x = q d + m
// Q5_0 blocks are 22 bytes, so consecutive blocks of a row alternate between word and
// half-word offsets: its words are read as two 16-bit halves (one word load each, the same
// code for every lane, where load_u32 would take a different branch in every other block).
// Q5_1 blocks (24 bytes) share one alignment per row, so load_u32 (plain when w_aligned).
#if defined(WTYPE_Q5_0)
const uint kBlockBytes = 22u, kQh = 2u, kQs = 6u;
#else
const uint kBlockBytes = 24u, kQh = 4u, kQs = 8u;
#endif
uint load_q5_word(uint b) {
#if defined(WTYPE_Q5_0)
  return load_u16(b) | (load_u16(b + 2u) << 16);
#else
  return load_u32(b);
#endif
}
float dequant5(float q, vec2 dm) {
#if defined(WTYPE_Q5_0)
  return (q - 16.0) * dm.x;
#else
  return q * dm.x + dm.y;
#endif
}
vec4 dequant5(vec4 q, vec2 dm) {
#if defined(WTYPE_Q5_0)
  return (q - 16.0) * dm.x;
#else
  return q * dm.x + dm.y;
#endif
}
vec2 load_dm(uint blk) {
#if defined(WTYPE_Q5_0)
  return vec2(unpackHalf2x16(load_u16(blk)).x, 0.0);
#else
  return unpackHalf2x16(load_u32(blk));
#endif
}
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 5) * kBlockBytes;
  const uint j = i & 31u;
  const uint byte = load_u8(blk + kQs + (j & 15u));
  const uint hi = (load_u8(blk + kQh + (j >> 3)) >> (j & 7u)) & 1u;
  const uint q = (j < 16u ? (byte & 0xFu) : (byte >> 4)) | (hi << 4);
  return dequant5(float(q), vec2(load_f16(blk), load_f16(blk + 2u)));
}
// The 4 bytes of q with bit i of h (i = 0..3) as bit 4 of byte i.
vec4 q5x4(uint q, uint h) {
  const uint v = q | ((h & 1u) << 4) | ((h & 2u) << 11) | ((h & 4u) << 18) | ((h & 8u) << 25);
  return vec4(v & 0xFFu, (v >> 8) & 0xFFu, (v >> 16) & 0xFFu, v >> 24);
}
const uint kHeadUnits = 4u;
struct WHead {
  vec2 dm;
  uint qh;
};
WHead load_head(uint row, uint u) {
  const uint blk = row + (u >> 2) * kBlockBytes;
  return WHead(load_dm(blk), load_q5_word(blk + kQh));
}
void load_w8h(WHead h, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 2) * kBlockBytes, q = u & 3u;
  const vec2 dm = h.dm;
  const uint qh = h.qh;
  const uint v = load_q5_word(blk + kQs + 4u * q);
  ea = (u >> 2) * 32u + 4u * q;
  eb = ea + 16u;
  a = dequant5(q5x4(v & 0x0F0F0F0Fu, qh >> (4u * q)), dm);
  b = dequant5(q5x4((v >> 4) & 0x0F0F0F0Fu, qh >> (16u + 4u * q)), dm);
}
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
// Q4_K 144 bytes / 256: d @0, dmin @2, scales[12] @4, qs[128] @16. Chunk j (64 elements)
// holds sub-blocks 2j (the low nibbles of qs[32j .. 32j+31]) and 2j+1 (their high nibbles);
// sub-block s has a 6-bit scale sc and min mn (k_scale_min of cpu/quant.h); x = d sc q - dmin mn.
// Q5_K 176 bytes / 256: qh[32] @16 adds bit s of qh[i] as bit 4 of element i of sub-block s,
// and qs moves to @48. Both block sizes are whole words: a row's blocks share its alignment.
#if defined(WTYPE_Q4_K)
const uint kBlockBytes = 144u, kQs = 16u;
#else
const uint kBlockBytes = 176u, kQs = 48u;
#endif
const uint kQh = 16u;
// The scale (x) and min (y) of sub-block s, byte by byte as k_scale_min reads them.
uvec2 scale_min(uint blk, uint s) {
  const uint sc = blk + 4u;
  if (s < 4u) return uvec2(load_u8(sc + s) & 63u, load_u8(sc + s + 4u) & 63u);
  const uint b = load_u8(sc + s + 4u);
  return uvec2((b & 0xFu) | ((load_u8(sc + s - 4u) >> 6) << 4), (b >> 4) | ((load_u8(sc + s) >> 6) << 4));
}
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 8) * kBlockBytes;
  const uint e = i & 255u, j = e >> 6, hi = (e >> 5) & 1u, l = e & 31u, s = 2u * j + hi;
  const uint byte = load_u8(blk + kQs + 32u * j + l);
  uint q = hi != 0u ? byte >> 4 : byte & 0xFu;
#if defined(WTYPE_Q5_K)
  q |= ((load_u8(blk + kQh + l) >> s) & 1u) << 4;
#endif
  const uvec2 sm = scale_min(blk, s);
  return load_f16(blk) * float(sm.x) * float(q) - load_f16(blk + 2u) * float(sm.y);
}
// Unit u: chunk j = (u % 32) / 8, bytes l0 .. l0+3 of it (l0 = 4 (u % 8)); a = sub-block 2j,
// b = sub-block 2j+1, each at elements l0 ..
const uint kHeadUnits = 32u;
struct WHead {
  vec2 dm;        // d, dmin
  uvec3 scales;   // scales[0..12) as words
};
WHead load_head(uint row, uint u) {
  const uint blk = row + (u >> 5) * kBlockBytes;
  return WHead(unpackHalf2x16(load_u32(blk)), uvec3(load_u32(blk + 4u), load_u32(blk + 8u), load_u32(blk + 12u)));
}
void load_w8h(WHead h, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 5) * kBlockBytes, j = (u >> 3) & 3u, l0 = (u & 7u) * 4u;
  const vec2 dm = h.dm;
  // The 6-bit scales and mins of the 8 sub-blocks, a byte each: sub-blocks 0..3 from the
  // low 6 bits of scales[0..3] and [4..7]; 4..7 from the nibbles of scales[8..11] with the
  // top two bits of scales[0..3] (scales) and [4..7] (mins) as bits 4, 5.
  const uint s0 = h.scales.x, s1 = h.scales.y, s2 = h.scales.z;
  const uint sc = j < 2u ? s0 & 0x3F3F3F3Fu : (s2 & 0x0F0F0F0Fu) | ((s0 >> 2) & 0x30303030u);
  const uint mn = j < 2u ? s1 & 0x3F3F3F3Fu : ((s2 >> 4) & 0x0F0F0F0Fu) | ((s1 >> 2) & 0x30303030u);
  const uint sh = 16u * (j & 1u);  // sub-block 2j is byte 2j % 4 of its word, 2j+1 the next
  const vec2 da = dm.x * vec2((sc >> sh) & 0xFFu, (sc >> (sh + 8u)) & 0xFFu);
  const vec2 ma = dm.y * vec2((mn >> sh) & 0xFFu, (mn >> (sh + 8u)) & 0xFFu);
  const uint v = load_u32(blk + kQs + 32u * j + l0);
  uint qa = v & 0x0F0F0F0Fu, qb = (v >> 4) & 0x0F0F0F0Fu;
#if defined(WTYPE_Q5_K)
  const uint hb = load_u32(blk + kQh + l0);
  qa |= ((hb >> (2u * j)) & 0x01010101u) << 4;
  qb |= ((hb >> (2u * j + 1u)) & 0x01010101u) << 4;
#endif
  ea = (u >> 5) * 256u + 64u * j + l0;
  eb = ea + 32u;
  a = da.x * u8x4(qa) - ma.x;
  b = da.y * u8x4(qb) - ma.y;
}
#elif defined(WTYPE_Q6_K)
// Q6_K 210 bytes / 256: ql[128] @0, qh[64] @128, scales[16] int8 @192, d @208. Element
// p = 128 h + r: low 4 bits from ql[64 h + r % 64] >> 4 (r / 64), high 2 bits from
// qh[32 h + r % 32] >> 2 (r / 32); x = d scales[p / 16] (q - 32). Blocks of 210 bytes
// alternate between word and half-word offsets, so words are read as two 16-bit halves
// (one word load each, the same code in every lane), as Q5_0's.
const uint kBlockBytes = 210u;
uint load_q6_word(uint b) { return load_u16(b) | (load_u16(b + 2u) << 16); }
float load_scale(uint blk, uint p) { return float(bitfieldExtract(int(load_u8(blk + 192u + (p >> 4))), 0, 8)); }
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 8) * kBlockBytes;
  const uint p = i & 255u, h = p >> 7, r = p & 127u;
  const uint lo = (load_u8(blk + 64u * h + (r & 63u)) >> (4u * (r >> 6))) & 0xFu;
  const uint hi = (load_u8(blk + 128u + 32u * h + (r & 31u)) >> (2u * (r >> 5))) & 3u;
  return load_f16(blk + 208u) * load_scale(blk, p) * (float(lo | (hi << 4)) - 32.0);
}
// Unit u: half h = (u % 32) / 16 of the block, ql bytes r0 .. r0+3 of it (r0 = 4 (u % 8) +
// 32 c, c = (u % 16) / 8); a = their low nibbles (elements r0 ..), b = their high nibbles
// (r0 + 64 ..); the 2-bit highs come from the same qh bytes, bits 2c (a) and 2c + 4 (b).
const uint kHeadUnits = 32u;
struct WHead {
  float d;
  uvec4 scales;  // scales[0..16) as words
};
WHead load_head(uint row, uint u) {
  const uint blk = row + (u >> 5) * kBlockBytes;
  return WHead(load_f16(blk + 208u), uvec4(load_q6_word(blk + 192u), load_q6_word(blk + 196u),
                                           load_q6_word(blk + 200u), load_q6_word(blk + 204u)));
}
// Signed scales[i] from the head.
float head_scale(WHead h, uint i) { return float(bitfieldExtract(int(h.scales[i >> 2]), int((i & 3u) * 8u), 8)); }
void load_w8h(WHead hd, uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 5) * kBlockBytes, h = (u >> 4) & 1u, c = (u >> 3) & 1u;
  const uint r0 = (u & 7u) * 4u + 32u * c, p = 128u * h + r0;
  const uint ql = load_q6_word(blk + 64u * h + r0);
  const uint qh = load_q6_word(blk + 128u + 32u * h + (r0 & 31u));
  const uint qa = (ql & 0x0F0F0F0Fu) | (((qh >> (2u * c)) & 0x03030303u) << 4);
  const uint qb = ((ql >> 4) & 0x0F0F0F0Fu) | (((qh >> (2u * c + 4u)) & 0x03030303u) << 4);
  ea = (u >> 5) * 256u + p;
  eb = ea + 64u;
  a = (hd.d * head_scale(hd, p >> 4)) * (u8x4(qa) - 32.0);
  b = (hd.d * head_scale(hd, (p + 64u) >> 4)) * (u8x4(qb) - 32.0);
}
#else
#error "dequant.glsl: define one of WTYPE_F32, WTYPE_F16, WTYPE_BF16, WTYPE_Q8_0, WTYPE_Q4_0, WTYPE_Q4_1, WTYPE_Q5_0, WTYPE_Q5_1, WTYPE_Q4_K, WTYPE_Q5_K, WTYPE_Q6_K"
#endif
#endif

#if defined(W_BLOCKS)
// The block at byte b of the view into blkw, realigned to start on word 0, so that the
// decoders read it as the block at row 0 (their offsets then fold to constants). The
// block spans at most (16 - kWAlign + kBlockBytes) bytes from its first texel; kWAlign >= 2
// (the encoder's condition). Texels past the view's last are not read (clamped): the bytes
// they would give lie past the block.
void load_block(uint b) {
  const uint kTexelsMax = (14u + kBlockBytes + 15u) / 16u;
  const uint n_texels = (16u - kWAlign + kBlockBytes + 15u) / 16u;  // a constant once specialized
  const int t0 = int(b >> 4), last = textureSize(w_tex) - 1;
  uint raw[4u * kTexelsMax];
  [[unroll]] for (uint t = 0u; t < kTexelsMax; ++t) {
    uvec4 v = uvec4(0u);
    if (t < n_texels) v = texelFetch(w_tex, min(t0 + int(t), last));
    raw[4u * t] = v.x;
    raw[4u * t + 1u] = v.y;
    raw[4u * t + 2u] = v.z;
    raw[4u * t + 3u] = v.w;
  }
  const uint ph = (b >> 2) & 3u;                       // the block's first word in its texel
  const uint sh = kWAlign >= 4u ? 0u : (b & 3u) * 8u;  // and its first byte in that word
  const uint kRaw = 4u * kTexelsMax;
  [[unroll]] for (uint k = 0u; k < (kBlockBytes + 3u) / 4u; ++k) {
    // Selects, not raw[k + ph]: indexes that are constants keep raw in registers.
    const uint c0 = min(k, kRaw - 1u), c1 = min(k + 1u, kRaw - 1u), c2 = min(k + 2u, kRaw - 1u),
               c3 = min(k + 3u, kRaw - 1u), c4 = min(k + 4u, kRaw - 1u);
    const uint lo = ph == 0u ? raw[c0] : ph == 1u ? raw[c1] : ph == 2u ? raw[c2] : raw[c3];
    const uint hi = ph == 0u ? raw[c1] : ph == 1u ? raw[c2] : ph == 2u ? raw[c3] : raw[c4];
    blkw[k] = sh == 0u ? lo : (lo >> sh) | (hi << (32u - sh));
  }
}
#endif

void load_w8(uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  load_w8h(load_head(row, u), row, u, a, b, ea, eb);
}
