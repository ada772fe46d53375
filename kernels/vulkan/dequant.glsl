// Weight loads for one type, chosen by a -D define (WTYPE_F32, WTYPE_F16, WTYPE_Q8_0,
// WTYPE_Q4_0, WTYPE_Q4_1, WTYPE_Q5_0, WTYPE_Q5_1) on the including kernel, which sets W_BINDING first. Rows start
// at `row`: in elements for f32/f16, in bytes for the quantized types (GGUF rows of blocks
// need not be 4-byte aligned). Block layouts are those of kernels/cpu/quant.h, read from
// a uint view so no 8-bit storage feature is needed.
//   load_w(row, i): element i.
//   load_w8(row, u, a, b, ea, eb): the 8 weights of unit u (k / 8 units per row) as
//     a = elements ea..ea+3 and b = elements eb..eb+3. A unit is 4 bytes of nibbles (Q4, Q5:
//     low nibbles are elements 4q.., high ones 16+4q..; Q5 adds their 5th bits from qh),
//     8 bytes of int8 (Q8_0) or 8
//     consecutive elements, so a lane decodes whole words, not single bytes.
// Set by a kernel whose quantized blocks all start on a word (Q4_1, Q5_1 rows at word offsets):
// a uniform branch then skips the per-lane alignment test.
bool w_aligned = false;

#if defined(WTYPE_F32)
layout(binding = W_BINDING) readonly buffer WBuf { float w[]; };
float load_w(uint row, uint i) { return w[row + i]; }
void load_w8(uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  ea = 8u * u;
  eb = ea + 4u;
  const uint i = row + ea;
  a = vec4(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
  b = vec4(w[i + 4u], w[i + 5u], w[i + 6u], w[i + 7u]);
}
#elif defined(WTYPE_F16)
layout(binding = W_BINDING) readonly buffer WBuf { float16_t w[]; };
float load_w(uint row, uint i) { return float(w[row + i]); }
void load_w8(uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  ea = 8u * u;
  eb = ea + 4u;
  const uint i = row + ea;
  a = vec4(float(w[i]), float(w[i + 1u]), float(w[i + 2u]), float(w[i + 3u]));
  b = vec4(float(w[i + 4u]), float(w[i + 5u]), float(w[i + 6u]), float(w[i + 7u]));
}
#else
layout(binding = W_BINDING) readonly buffer WBuf { uint w[]; };
uint load_u8(uint b) { return (w[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu; }
float load_f16(uint b) { return unpackHalf2x16(load_u8(b) | (load_u8(b + 1u) << 8)).x; }
// Four bytes from any byte offset. The second word is read only when the bytes straddle
// it, so a row ending on the buffer's last word is never read past.
uint load_u32(uint b) {
  if (w_aligned) return w[b >> 2];
  const uint i = b >> 2, s = (b & 3u) * 8u;
  if (s == 0u) return w[i];
  return (w[i] >> s) | (w[i + 1u] << (32u - s));
}

#if defined(WTYPE_Q8_0)
// 34 bytes / 32: d f16 @0, qs[32] int8 @2; x = q d
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 5) * 34u;
  const int q = int(load_u8(blk + 2u + (i & 31u)));
  return float(q >= 128 ? q - 256 : q) * load_f16(blk);
}
vec4 i8x4(uint v) {
  const int s = int(v);
  return vec4(bitfieldExtract(s, 0, 8), bitfieldExtract(s, 8, 8), bitfieldExtract(s, 16, 8), bitfieldExtract(s, 24, 8));
}
void load_w8(uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 2) * 34u, q = u & 3u;
  const float d = unpackHalf2x16(load_u32(blk)).x;
  ea = (u >> 2) * 32u + 8u * q;
  eb = ea + 4u;
  a = i8x4(load_u32(blk + 2u + 8u * q)) * d;
  b = i8x4(load_u32(blk + 6u + 8u * q)) * d;
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
void load_w8(uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 2) * kBlockBytes, q = u & 3u;
  const vec2 dm = unpackHalf2x16(load_u32(blk));  // Q4_0: .y is the first quant bytes, unused
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
// Two bytes from an even byte offset (one word load); an odd one (a row at an odd address,
// which no loader produces) is read byte by byte.
uint load_u16(uint b) {
  if ((b & 1u) != 0u) return load_u8(b) | (load_u8(b + 1u) << 8);
  return (w[b >> 2] >> ((b & 2u) * 8u)) & 0xFFFFu;
}
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
void load_w8(uint row, uint u, out vec4 a, out vec4 b, out uint ea, out uint eb) {
  const uint blk = row + (u >> 2) * kBlockBytes, q = u & 3u;
  const vec2 dm = load_dm(blk);
  const uint qh = load_q5_word(blk + kQh);
  const uint v = load_q5_word(blk + kQs + 4u * q);
  ea = (u >> 2) * 32u + 4u * q;
  eb = ea + 16u;
  a = dequant5(q5x4(v & 0x0F0F0F0Fu, qh >> (4u * q)), dm);
  b = dequant5(q5x4((v >> 4) & 0x0F0F0F0Fu, qh >> (16u + 4u * q)), dm);
}
#else
#error "dequant.glsl: define one of WTYPE_F32, WTYPE_F16, WTYPE_Q8_0, WTYPE_Q4_0, WTYPE_Q4_1, WTYPE_Q5_0, WTYPE_Q5_1"
#endif
#endif
