#version 450
// Rows into a KV cache of f16 or q8_0: the twin of kernels/cpu/kv_rows.cpp, for copy_rows and
// gather_rows whenever their destination is such a cache.
//   KV_STORE_F16, KV_STORE_Q8_0: f32 rows (binding 1, offsets in floats) rounded to the cache's
//     type as the CPU's kv_store_row does (q8_0: per block of 32, d = max|x| / 127, q = x * (1 / d)
//     rounded half away from zero, as quantize_q8_0).
//   KV_COPY: rows of the cache's own type copied as bytes (binding 1 in bytes).
// dst (binding 0) is addressed in bytes. Rows of halves or of 34-byte blocks need not start on
// a word, and a word may hold the end of one row and the start of the next (written by another
// invocation), so each invocation composes one word of one row: a word the row fills is
// stored, a word it shares is merged with atomicAnd / atomicOr on its bytes only.
// Which rows (flags): bit 3: copy_rows, src row r to dst row i0 + r (rows of both by their
// nb1); else gather_rows by the ids (binding 4), shared or per head (bit 2), src 3-D (bit 0)
// and dst 3-D (bit 1), as in gather_rows.comp.
// ne0 = values per row, ne1 = heads, ne2 = rows; i1 = a row's bytes in dst, i2 = words per row
// at most (a row's bytes / 4 + 2, rounded down).
#include "common.glsl"

layout(binding = 0) buffer Dst { uint dst[]; };
#if defined(KV_COPY)
layout(binding = 1) readonly buffer Src { uint src[]; };
#else
layout(binding = 1) readonly buffer Src { float src[]; };
#endif
layout(binding = 4) readonly buffer Ids { int ids[]; };

#if defined(KV_COPY)
uint row_byte(uint s0, uint i) {
  const uint b = s0 + i;
  return (src[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu;
}
#elif defined(KV_STORE_F16)
uint row_byte(uint s0, uint i) { return (packHalf2x16(vec2(src[s0 + (i >> 1)], 0.0)) >> ((i & 1u) * 8u)) & 0xFFu; }
#elif defined(KV_STORE_Q8_0)
// The block a word's bytes were last taken from (a word spans at most two blocks).
uint block_at = 0xFFFFFFFFu;
float block_d = 0.0, block_id = 0.0;
uint row_byte(uint s0, uint i) {
  const uint blk = i / 34u, j = i % 34u;
  const uint x0 = s0 + blk * 32u;
  if (blk != block_at) {
    float amax = 0.0;
    for (uint e = 0u; e < 32u; ++e) amax = max(amax, abs(src[x0 + e]));
    block_at = blk;
    block_d = amax / 127.0;
    block_id = block_d != 0.0 ? 1.0 / block_d : 0.0;
  }
  if (j < 2u) return (packHalf2x16(vec2(block_d, 0.0)) >> (j * 8u)) & 0xFFu;
  const float x = src[x0 + j - 2u] * block_id;
  float q = trunc(x);
  if (abs(x - q) >= 0.5) q += sign(x);  // half away from zero (lround); x - q is exact
  return uint(int(q)) & 0xFFu;
}
#else
#error "kv_rows.comp: define KV_STORE_F16, KV_STORE_Q8_0 or KV_COPY"
#endif

void main() {
  const uint idx = global_id();
  const uint words = uint(p.i2);
  if (idx >= p.ne1 * p.ne2 * words) return;
  const uint v = idx / words, k = idx % words;
  const uint r = v / p.ne1, h = v % p.ne1;
  uint from, to;
  if ((p.flags & 8u) != 0u) {
    from = r * p.s0_nb1;
    to = (uint(p.i0) + r) * p.dst_nb1;
  } else {
    const uint s = uint(ids[p.o_aux + ((p.flags & 4u) != 0u ? h * p.ne2 + r : r)]);
    from = (p.flags & 1u) != 0u ? h * p.s0_nb1 + s * p.s0_nb2 : s * p.s0_nb1;
    to = (p.flags & 2u) != 0u ? h * p.dst_nb1 + r * p.dst_nb2 : r * p.dst_nb1;
  }
  const uint s0 = p.o_s0 + from, b0 = p.o_dst + to, b1 = b0 + uint(p.i1);
  const uint w = (b0 >> 2) + k;
  if (w * 4u >= b1) return;
  uint word = 0u, mask = 0u;
  for (uint j = 0u; j < 4u; ++j) {
    const uint b = w * 4u + j;
    if (b < b0 || b >= b1) continue;
    word |= row_byte(s0, b - b0) << (j * 8u);
    mask |= 0xFFu << (j * 8u);
  }
  if (mask == 0xFFFFFFFFu) {
    dst[w] = word;
  } else {
    atomicAnd(dst[w], ~mask);
    atomicOr(dst[w], word);
  }
}
