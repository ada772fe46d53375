#version 450
// Causal GQA attention, flash-style: no score matrix, each (query row, head) workgroup
// streams its keys in blocks of the workgroup size with a running max m, sum l and
// accumulator (online softmax). q/dst [n, n_head, hd] (bindings 1 / 0), k/v [rows,
// n_head_kv, hd] (2 / 3). Scores are (q * scale) . k, as on the CPU.
//   ATTN_PREFILL: query row i sits at position i0 + i and sees keys 0..i0 + i; flags bit 0:
//     ids (binding 4) are per-row skip flags, a flagged row's output is 0 (Token Filtering).
//   ATTN_DECODE: one row at position i0 sees keys 0..i0, or with flags bit 0 exactly the
//     key rows ids[0..n_ids) (SlimInfer's active blocks); no keys gives 0.
//   Both, without ids: i3 > 0 is a sliding window, a row sees only its last i3 keys
//     (Gemma 3); the encoder sends such calls here, not to the split, lane or tiled kernels.
//   ATTN_SPLIT (with ATTN_DECODE; GPUs, flash-decoding): the keys are cut into i2 splits of
//     i1 keys (the last may be shorter), one workgroup per (head, split), each writing its
//     partial softmax to dst (the workspace) at (split * n_head + head) * (hd + 2): the max m,
//     the sum l, then the hd unnormalized sums; attention_merge.comp combines them.
// The cache is f32, f16 or q8_0 (kv.glsl; its strides in that type's units).
// ne0 = hd (<= 4 * workgroup size), ne1 = n_head, ne2 = n, ne3 = n_head_kv, f0 = scale.
#include "common.glsl"
#define KV_V
#include "kv.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Q { float q[]; };
layout(binding = 4) readonly buffer Ids { int ids[]; };

const uint kMaxDimsPerThread = 4u;

// Element d of KV head g's value row of key j (j counts the keys this row sees, in order).
float value_at(uint g, uint j, uint d) {
#if defined(ATTN_DECODE)
  const uint vr = (p.flags & 1u) != 0u ? uint(ids[p.o_aux + j]) : j;
#else
  const uint vr = j;
#endif
  return load_v(p.o_s2 + g * p.s2_nb1 + vr * p.s2_nb2, d);
}
shared float q_s[256];
shared float p_s[64];
shared float red[64];

float reduce_max(uint t, float x) {
  red[t] = x;
  barrier();
  for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
    if (t < h) red[t] = max(red[t], red[t + h]);
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}
float reduce_sum(uint t, float x) {
  red[t] = x;
  barrier();
  for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
    if (t < h) red[t] += red[t + h];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

void main() {
  const uint unit = group_id();
#if defined(ATTN_SPLIT)
  if (unit >= p.ne1 * uint(p.i2)) return;
  const uint head = unit % p.ne1, row = 0u, split = unit / p.ne1;
#else
  if (unit >= p.ne1 * p.ne2) return;
  const uint head = unit % p.ne1, row = unit / p.ne1;
#endif
  const uint g = head / (p.ne1 / p.ne3);
  const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint hd = p.ne0;
#if defined(ATTN_SPLIT)
  const uint out0 = p.o_dst + (split * p.ne1 + head) * (hd + 2u);
#else
  const uint out0 = p.o_dst + head * p.dst_nb1 + row * p.dst_nb2;
#endif
  const bool with_ids = (p.flags & 1u) != 0u;
#if defined(ATTN_PREFILL)
  const uint n_keys = uint(p.i0) + row + 1u;
  if (with_ids && ids[p.o_aux + row] != 0) {
    for (uint d = t; d < hd; d += wg) dst[out0 + d] = 0.0;
    return;
  }
#else
  const uint n_keys = with_ids ? p.n_ids : uint(p.i0) + 1u;
#endif
#if defined(ATTN_SPLIT)
  const uint ja = split * uint(p.i1), jb = min(n_keys, ja + uint(p.i1));
#else
  const uint window = with_ids ? 0u : uint(max(p.i3, 0));
  const uint ja = window > 0u && n_keys > window ? n_keys - window : 0u, jb = n_keys;
#endif
  const uint q0 = p.o_s0 + head * p.s0_nb1 + row * p.s0_nb2;
  for (uint d = t; d < hd; d += wg) q_s[d] = q[q0 + d] * p.f0;
  barrier();

  float m = -1e30;  // finite, so exp(m_old - m_new) is defined on the first block
  float l = 0.0;
  float acc[kMaxDimsPerThread] = float[kMaxDimsPerThread](0.0, 0.0, 0.0, 0.0);
  for (uint j0 = ja; j0 < jb; j0 += wg) {
    const uint j = j0 + t;
    float s = -1e30;
    if (j < jb) {
#if defined(ATTN_DECODE)
      const uint kr = with_ids ? uint(ids[p.o_aux + j]) : j;
#else
      const uint kr = j;
#endif
      const uint k0 = p.o_s1 + g * p.s1_nb1 + kr * p.s1_nb2;
      s = 0.0;
      // Four terms per iteration, added in order (the same sum): llvmpipe ends every loop of
      // an invocation after 65535 iterations in all (gallivm's loop limiter), which one term
      // per iteration reached at ~30k keys, and the rows came back wrong.
      uint d = 0u;
      for (; d + 4u <= hd; d += 4u) {
        s += q_s[d] * load_k(k0, d);
        s += q_s[d + 1u] * load_k(k0, d + 1u);
        s += q_s[d + 2u] * load_k(k0, d + 2u);
        s += q_s[d + 3u] * load_k(k0, d + 3u);
      }
      for (; d < hd; ++d) s += q_s[d] * load_k(k0, d);
    }
    const float m_new = max(m, reduce_max(t, s));
    const float alpha = exp(m - m_new);
    const float pj = j < jb ? exp(s - m_new) : 0.0;
    p_s[t] = pj;
    l = l * alpha + reduce_sum(t, pj);  // reduce_sum's barriers also publish p_s
    m = m_new;
    const uint nb = min(wg, jb - j0);
    [[unroll]] for (uint e = 0u; e < kMaxDimsPerThread; ++e) {
      const uint d = t + e * wg;
      if (d >= hd) break;
      float a = acc[e] * alpha;
      uint jj = 0u;
      for (; jj + 4u <= nb; jj += 4u) {  // four keys per iteration, in order (the limiter above)
        a += p_s[jj] * value_at(g, j0 + jj, d);
        a += p_s[jj + 1u] * value_at(g, j0 + jj + 1u, d);
        a += p_s[jj + 2u] * value_at(g, j0 + jj + 2u, d);
        a += p_s[jj + 3u] * value_at(g, j0 + jj + 3u, d);
      }
      for (; jj < nb; ++jj) a += p_s[jj] * value_at(g, j0 + jj, d);
      acc[e] = a;
    }
    barrier();  // p_s is rewritten by the next block
  }
#if defined(ATTN_SPLIT)
  if (t == 0u) {
    dst[out0] = m;
    dst[out0 + 1u] = l;
  }
  [[unroll]] for (uint e = 0u; e < kMaxDimsPerThread; ++e) {
    const uint d = t + e * wg;
    if (d < hd) dst[out0 + 2u + d] = acc[e];
  }
#else
  [[unroll]] for (uint e = 0u; e < kMaxDimsPerThread; ++e) {
    const uint d = t + e * wg;
    if (d < hd) dst[out0 + d] = n_keys == 0u ? 0.0 : acc[e] / l;
  }
#endif
}
