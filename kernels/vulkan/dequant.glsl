// Weight loads for one type, chosen by a -D define (WTYPE_F32, WTYPE_F16, WTYPE_Q8_0,
// WTYPE_Q4_0, WTYPE_Q4_1) on the including kernel, which sets W_BINDING first.
// load_w(row, i) = element i of the row starting at `row` (f32/f16: in elements;
// quantized: in bytes, as GGUF rows of blocks need not be 4-byte aligned). Block layouts
// are those of kernels/cpu/quant.h, read byte by byte from a uint view so no 8-bit
// storage feature is needed.
#if defined(WTYPE_F32)
layout(binding = W_BINDING) readonly buffer WBuf { float w[]; };
float load_w(uint row, uint i) { return w[row + i]; }
#elif defined(WTYPE_F16)
layout(binding = W_BINDING) readonly buffer WBuf { float16_t w[]; };
float load_w(uint row, uint i) { return float(w[row + i]); }
#else
layout(binding = W_BINDING) readonly buffer WBuf { uint w[]; };
uint load_u8(uint b) { return (w[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu; }
float load_f16(uint b) { return unpackHalf2x16(load_u8(b) | (load_u8(b + 1u) << 8)).x; }
#if defined(WTYPE_Q8_0)
// 34 bytes / 32: d f16 @0, qs[32] int8 @2; x = q d
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 5) * 34u;
  const int q = int(load_u8(blk + 2u + (i & 31u)));
  return float(q >= 128 ? q - 256 : q) * load_f16(blk);
}
#elif defined(WTYPE_Q4_0) || defined(WTYPE_Q4_1)
// Q4_0 18 bytes / 32: d @0, qs[16] @2; x[j] = (lo(qs[j]) - 8) d, x[j + 16] = (hi(qs[j]) - 8) d
// Q4_1 20 bytes / 32: d @0, m @2, qs[16] @4; x = nibble d + m
#if defined(WTYPE_Q4_0)
const uint kBlockBytes = 18u, kQs = 2u;
#else
const uint kBlockBytes = 20u, kQs = 4u;
#endif
float load_w(uint row, uint i) {
  const uint blk = row + (i >> 5) * kBlockBytes;
  const uint j = i & 31u;
  const uint byte = load_u8(blk + kQs + (j & 15u));
  const uint nib = j < 16u ? (byte & 0xFu) : (byte >> 4);
#if defined(WTYPE_Q4_0)
  return (float(nib) - 8.0) * load_f16(blk);
#else
  return float(nib) * load_f16(blk) + load_f16(blk + 2u);
#endif
}
#else
#error "dequant.glsl: define one of WTYPE_F32, WTYPE_F16, WTYPE_Q8_0, WTYPE_Q4_0, WTYPE_Q4_1"
#endif
#endif
