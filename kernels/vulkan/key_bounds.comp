#version 450
// Quest's page bounds and the scores a decode step's query gives them (kernels/ops.h:
// KeyBoundsOp, BoundScoresOp; the CPU's kernels/cpu/key_bounds.cpp). Three kernels:
//   KB_BOUNDS: one invocation per word (two halves) of the f16 bounds dst[b, g, 0:2hd]:
//     element j < hd the min of the block's keys in dim j rounded down, j >= hd the max in
//     dim j - hd rounded up (f16_bound below, kernels/f16_bound.h's steps). dst is written as
//     words (no 16-bit storage feature needed), so its offset and strides are even in halves
//     (the encoder checks). k (binding 2) is a cache of f32, f16 or q8_0 (kv.glsl). ne0 = hd,
//     ne1 = n_head_kv, ne2 = key rows, ne3 = blocks; i0 = block rows; with flags bit 0, key
//     row r is row ids[r] of k (binding 4: a pager's host tier). A min and a max are exact
//     and the rounding is integer code, so the bounds equal the CPU's bit for bit.
//   KB_HEAD: one workgroup per query head h: u_h[b] = f0 * sum_d max(q_d lo_d, q_d hi_d)
//     over the blocks, then u_h - logsumexp(u_h) (the head's log-softmax) into the workspace
//     (binding 3, [n_head][n_blocks]). q (binding 1) row i0 is the query; bounds are binding
//     2 (f16, read as words; zero or normal values, which unpackHalf2x16 converts exactly).
//     ne0 = hd (<= 256), ne1 = n_head, ne2 = n_blocks, ne3 = n_head_kv.
//   KB_SUM: one invocation per block: dst[b] = log sum_h exp(workspace[h][b]), from the
//     heads' largest, so a block every head puts far below its best keeps a finite score.
#include "common.glsl"

#if defined(KB_BOUNDS)
layout(binding = 0) writeonly buffer Dst { uint dstw[]; };
layout(binding = 4) readonly buffer Ids { int ids[]; };
#include "kv.glsl"

// The f16 bits of x rounded up (toward +inf) or down, as kernels/f16_bound.h: no subnormals
// (2^-14 or zero, whichever is outward), magnitudes above 65504 saturated.
uint f16_bound(float x, bool up) {
  const uint bits = floatBitsToUint(x), sign = (bits >> 16) & 0x8000u, a = bits & 0x7FFFFFFFu;
  if (a == 0u) return sign;
  const bool away = (sign == 0u) == up;
  const int e = int(a >> 23) - 127;
  uint mag;
  if (e < -14)
    mag = away ? 0x0400u : 0u;
  else if (e > 15)
    mag = 0x7BFFu;
  else {
    mag = (uint(e + 15) << 10) | ((a >> 13) & 0x3FFu);
    if (away && (a & 0x1FFFu) != 0u) ++mag;
    mag = min(mag, 0x7BFFu);
  }
  return sign | mag;
}

// Element j of a (block, KV head)'s bounds row: the min (j < hd) or max of dim j mod hd.
uint bound_half(uint j, uint g, uint b) {
  const uint hd = p.ne0, d = j < hd ? j : j - hd;
  const uint r0 = b * uint(p.i0), r1 = min(r0 + uint(p.i0), p.ne2);
  // From +-infinity, as the CPU: a NaN key fails both comparisons and is skipped, also as
  // the block's first row (started from it, the bounds would stay NaN).
  float lo = uintBitsToFloat(0x7F800000u), hi = -lo;
  const bool with_ids = (p.flags & 1u) != 0u;
  for (uint i = r0; i < r1; ++i) {
    const uint r = with_ids ? uint(ids[p.o_aux + i]) : i;
    const float x = load_k(p.o_s1 + g * p.s1_nb1 + r * p.s1_nb2, d);
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  return j < hd ? f16_bound(lo, false) : f16_bound(hi, true);
}

void main() {
  const uint idx = global_id();
  const uint hd = p.ne0, n_kv = p.ne1;  // a row is 2 hd halves = hd words
  if (idx >= p.ne3 * n_kv * hd) return;
  const uint w = idx % hd, g = (idx / hd) % n_kv, b = idx / (hd * n_kv);
  const uint o = p.o_dst + b * p.dst_nb2 + g * p.dst_nb1;  // in halves, even
  dstw[(o >> 1) + w] = bound_half(2u * w, g, b) | (bound_half(2u * w + 1u, g, b) << 16);
}

#else
layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Q { float q[]; };
layout(binding = 2) readonly buffer Bounds { uint boundsw[]; };
layout(binding = 3) buffer Logp { float logp[]; };

#if defined(KB_HEAD)
shared float qs[256];

// Element e (in halves) of the bounds.
float bound_at(uint e) { return unpackHalf2x16(boundsw[e >> 1] >> ((e & 1u) * 16u)).x; }
shared float red[64];

// The workgroup's max (max = true) or sum of v; every invocation gets it.
float reduce(float v, bool max_of) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint w = gl_WorkGroupSize.x / 2u; w > 0u; w >>= 1) {
    if (t < w) red[t] = max_of ? max(red[t], red[t + w]) : red[t] + red[t + w];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

void main() {
  const uint h = group_id(), t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint hd = p.ne0, nb = p.ne2, g = h / (p.ne1 / p.ne3);
  for (uint d = t; d < hd; d += wg) qs[d] = q[p.o_s0 + h * p.s0_nb1 + uint(p.i0) * p.s0_nb2 + d];
  barrier();
  const uint row = p.o_s2 + h * nb;
  float top = uintBitsToFloat(0xFF800000u);  // -inf
  for (uint b = t; b < nb; b += wg) {
    const uint o = p.o_s1 + b * p.s1_nb2 + g * p.s1_nb1;
    // Four partial sums (the CPU sums 16 lanes, then a tree: the parity tolerance covers the order).
    float s[4] = float[4](0.0, 0.0, 0.0, 0.0);
    uint d = 0u;
    for (; d + 4u <= hd; d += 4u)
      [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const float a = qs[d + j] * bound_at(o + d + j), c = qs[d + j] * bound_at(o + hd + d + j);
        s[j] += a > c ? a : c;
      }
    for (; d < hd; ++d) {
      const float a = qs[d] * bound_at(o + d), c = qs[d] * bound_at(o + hd + d);
      s[0] += a > c ? a : c;
    }
    const float u = p.f0 * ((s[0] + s[1]) + (s[2] + s[3]));
    logp[row + b] = u;
    top = max(top, u);
  }
  top = reduce(top, true);
  float sum = 0.0;
  for (uint b = t; b < nb; b += wg) sum += exp(logp[row + b] - top);  // this invocation's own entries
  const float lse = top + log(reduce(sum, false));
  for (uint b = t; b < nb; b += wg) logp[row + b] -= lse;
}

#else  // KB_SUM
void main() {
  const uint b = global_id(), nb = p.ne2, n_head = p.ne1;
  if (b >= nb) return;
  float top = uintBitsToFloat(0xFF800000u);
  for (uint h = 0u; h < n_head; ++h) top = max(top, logp[p.o_s2 + h * nb + b]);
  float sum = 0.0;
  for (uint h = 0u; h < n_head; ++h) sum += exp(logp[p.o_s2 + h * nb + b] - top);
  dst[p.o_dst + b] = top + log(sum);
}
#endif
#endif
