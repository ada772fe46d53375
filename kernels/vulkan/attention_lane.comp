#version 450
// Causal GQA attention for CPU devices (lavapipe): a lane owns whole scores instead of a
// workgroup sharing each one. On lavapipe every storage-buffer load is a loop over the
// subgroup's lanes and a barrier splits the shader in two (docs/results/vulkan.md), so what
// decides speed is loads per score: here a key row and a value row are read 16 bytes at a
// time, once for all kGroup query heads of their KV head, and the key loop has no barrier.
// Same bindings, push fields and scores ((q * scale) . k, online softmax) as attention.comp.
//   ATTN_PREFILL: a workgroup is wg consecutive query rows of one KV head, a lane one row:
//     row i at position i0 + i sees keys 0..i0 + i; flags bit 0: ids are per-row skip flags,
//     a flagged row's output is 0 (Token Filtering).
//   ATTN_DECODE: a workgroup is one KV head; lane t takes keys t, t + wg, ... of 0..i0, or
//     with flags bit 0 of the key rows ids[0..n_ids) (SlimInfer's active blocks), and the
//     lanes merge their partial sums in shared memory; no keys gives 0.
// The cache is f32, f16 or q8_0 (kv.glsl, KV_VEC4: its rows read 4 values at a time).
// ne1 = n_head, ne2 = n rows, ne3 = n_head_kv, f0 = scale; head_dim and the heads per KV
// head are specialization constants 3 and 4.
#include "common.glsl"
#define KV_V
#define KV_VEC4
#include "kv.glsl"

layout(constant_id = 3) const uint kHd = 64u;    // head_dim, a multiple of 4
layout(constant_id = 4) const uint kGroup = 1u;  // query heads per KV head
const uint kHd4 = kHd / 4u;
const uint kRow4 = kGroup * kHd4;  // one lane's q (or accumulator) for its KV head, in vec4s

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Q { float q_in[]; };
layout(binding = 4) readonly buffer Ids { int ids[]; };

#if defined(ATTN_DECODE)
shared float m_s[gl_WorkGroupSize.x * kGroup];
shared float l_s[gl_WorkGroupSize.x * kGroup];
shared vec4 acc_s[gl_WorkGroupSize.x * kRow4];
#endif

void main() {
  const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint g = group_id() % p.ne3;  // the KV head; query heads g * kGroup ...
  const uint h0 = g * kGroup;
#if defined(ATTN_PREFILL)
  const uint row = (group_id() / p.ne3) * wg + t;
  const uint r = min(row, p.ne2 - 1u);  // lanes past the last row read it and write nothing
  const bool skipped = (p.flags & 1u) != 0u && ids[p.o_aux + r] != 0;
  const uint n_keys = row < p.ne2 && !skipped ? uint(p.i0) + row + 1u : 0u;
#else
  const bool with_ids = (p.flags & 1u) != 0u;
  const uint r = 0u;
  const uint n_keys = with_ids ? p.n_ids : uint(p.i0) + 1u;
#endif
  vec4 q[kRow4];
  [[unroll]] for (uint hh = 0u; hh < kGroup; ++hh) {
    const uint q0 = p.o_s0 + (h0 + hh) * p.s0_nb1 + r * p.s0_nb2;  // read once: no alignment asked
    [[unroll]] for (uint d = 0u; d < kHd4; ++d) {
      const uint i = q0 + 4u * d;
      q[hh * kHd4 + d] = vec4(q_in[i], q_in[i + 1u], q_in[i + 2u], q_in[i + 3u]) * p.f0;
    }
  }
  float m[kGroup], l[kGroup];
  vec4 acc[kRow4];
  [[unroll]] for (uint hh = 0u; hh < kGroup; ++hh) {
    m[hh] = -1e30;  // finite, so exp(m_old - m_new) is defined on the first key
    l[hh] = 0.0;
  }
  [[unroll]] for (uint e = 0u; e < kRow4; ++e) acc[e] = vec4(0.0);
  const uint k_base = p.o_s1 + g * p.s1_nb1, v_base = p.o_s2 + g * p.s2_nb1;
#if defined(ATTN_PREFILL)
  for (uint j = 0u; j < n_keys; ++j) {
    const uint kr = j;
#else
  for (uint j = t; j < n_keys; j += wg) {
    const uint kr = with_ids ? uint(ids[p.o_aux + j]) : j;
#endif
    vec4 k[kHd4];
    [[unroll]] for (uint d = 0u; d < kHd4; ++d) k[d] = load_k4(k_base + kr * p.s1_nb2, 4u * d);
    float alpha[kGroup], pj[kGroup];
    [[unroll]] for (uint hh = 0u; hh < kGroup; ++hh) {
      float s = 0.0;
      [[unroll]] for (uint d = 0u; d < kHd4; ++d) s += dot(q[hh * kHd4 + d], k[d]);
      const float m_new = max(m[hh], s);
      alpha[hh] = exp(m[hh] - m_new);
      pj[hh] = exp(s - m_new);
      l[hh] = l[hh] * alpha[hh] + pj[hh];
      m[hh] = m_new;
    }
    [[unroll]] for (uint d = 0u; d < kHd4; ++d) {
      const vec4 v = load_v4(v_base + kr * p.s2_nb2, 4u * d);
      [[unroll]] for (uint hh = 0u; hh < kGroup; ++hh) acc[hh * kHd4 + d] = acc[hh * kHd4 + d] * alpha[hh] + pj[hh] * v;
    }
  }
#if defined(ATTN_PREFILL)
  if (row >= p.ne2) return;
  [[unroll]] for (uint hh = 0u; hh < kGroup; ++hh) {
    const uint out0 = p.o_dst + (h0 + hh) * p.dst_nb1 + row * p.dst_nb2;
    const float inv = n_keys == 0u ? 0.0 : 1.0 / l[hh];
    [[unroll]] for (uint d = 0u; d < kHd4; ++d) {
      const vec4 o = acc[hh * kHd4 + d] * inv;
      dst[out0 + 4u * d] = o.x;
      dst[out0 + 4u * d + 1u] = o.y;
      dst[out0 + 4u * d + 2u] = o.z;
      dst[out0 + 4u * d + 3u] = o.w;
    }
  }
#else
  // Merge: out = sum_u acc_u e^(m_u - M) / sum_u l_u e^(m_u - M), M the lanes' max. A lane
  // without keys has l = 0 and acc = 0; with no keys at all the sum is 0 and so is out.
  [[unroll]] for (uint hh = 0u; hh < kGroup; ++hh) {
    m_s[t * kGroup + hh] = m[hh];
    l_s[t * kGroup + hh] = l[hh];
  }
  [[unroll]] for (uint e = 0u; e < kRow4; ++e) acc_s[t * kRow4 + e] = acc[e];
  barrier();
  for (uint e = t; e < kRow4; e += wg) {
    const uint hh = e / kHd4, d = e % kHd4;
    float mx = -1e30;
    for (uint u = 0u; u < wg; ++u) mx = max(mx, m_s[u * kGroup + hh]);
    float sum = 0.0;
    vec4 o = vec4(0.0);
    for (uint u = 0u; u < wg; ++u) {
      const float w = exp(m_s[u * kGroup + hh] - mx);
      sum += l_s[u * kGroup + hh] * w;
      o += acc_s[u * kRow4 + e] * w;
    }
    o = sum > 0.0 ? o / sum : vec4(0.0);
    const uint out0 = p.o_dst + (h0 + hh) * p.dst_nb1 + 4u * d;
    dst[out0] = o.x;
    dst[out0 + 1u] = o.y;
    dst[out0 + 2u] = o.z;
    dst[out0 + 3u] = o.w;
  }
#endif
}
