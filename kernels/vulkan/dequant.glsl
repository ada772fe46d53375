// Weight loads for one type, chosen by a -D define (WTYPE_F32, WTYPE_F16, WTYPE_Q8_0,
// WTYPE_Q4_0, WTYPE_Q4_1) on the including kernel, which sets W_BINDING first. Rows start
// at `row`: in elements for f32/f16, in bytes for the quantized types (GGUF rows of blocks
// need not be 4-byte aligned). Block layouts are those of kernels/cpu/quant.h, read from
// a uint view so no 8-bit storage feature is needed.
//   load_w(row, i): element i.
//   load_w8(row, u, a, b, ea, eb): the 8 weights of unit u (k / 8 units per row) as
//     a = elements ea..ea+3 and b = elements eb..eb+3. A unit is 4 bytes of nibbles (Q4:
//     low nibbles are elements 4q.., high ones 16+4q..), 8 bytes of int8 (Q8_0) or 8
//     consecutive elements, so a lane decodes whole words, not single bytes.
// Set by a kernel whose quantized blocks all start on a word (Q4_1 rows at word offsets):
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
#else
#error "dequant.glsl: define one of WTYPE_F32, WTYPE_F16, WTYPE_Q8_0, WTYPE_Q4_0, WTYPE_Q4_1"
#endif
#endif
