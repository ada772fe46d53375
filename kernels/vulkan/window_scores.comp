#version 450
// window_scores: how much each of the last W = i0 query rows of q[n, n_head, hd] (binding 1)
// attends to key columns 0..n_cols of k[n_keys, n_head_kv, hd] (binding 2); dst [n_out,
// n_head, n_cols] (binding 0). Window query i sits at key row i_vis - W + i (i_vis = i2,
// or n_keys when i2 <= 0) and sees keys up to there. Two kernels, like the CPU's phases:
//   WS_STATS: one workgroup per (head, window query): running max and sum of exp over every
//     visible key (scored or not), flash-style, into the workspace (binding 4) [head][W][2].
//   WS_SCORES: one invocation per (head, column): exp(s - m) / l per query (softmax mode,
//     flags bit 0; 0 where the key is not visible) or raw q.k (no scale, mask or softmax),
//     written per query (flags bit 1) or summed over the window in query order.
// ne0 = hd, ne1 = n_head, ne2 = n (q rows), ne3 = n_head_kv; i0 = W, i1 = n_cols, i2 = i_vis,
// i3 = n_keys; f0 = scale. k is a cache of f32, f16 or q8_0 (kv.glsl).
#include "common.glsl"
#include "kv.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Q { float q[]; };
layout(binding = 4) buffer Stats { float ml[]; };

int last_key(int i) { return min(p.i2 - p.i0 + i, p.i3 - 1); }
uint q_row(uint head, uint i) { return p.o_s0 + head * p.s0_nb1 + (p.ne2 - uint(p.i0) + i) * p.s0_nb2; }
uint k_row(uint g, uint j) { return p.o_s1 + g * p.s1_nb1 + j * p.s1_nb2; }

#if defined(WS_STATS)
shared float q_s[256];
shared float red[64];

float reduce(uint t, float x, bool is_max) {
  red[t] = x;
  barrier();
  for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
    if (t < h) red[t] = is_max ? max(red[t], red[t + h]) : red[t] + red[t + h];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

void main() {
  const uint unit = group_id();
  const uint W = uint(p.i0);
  if (unit >= p.ne1 * W) return;
  const uint head = unit / W, i = unit % W;
  const uint g = head / (p.ne1 / p.ne3);
  const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint q0 = q_row(head, i);
  for (uint d = t; d < p.ne0; d += wg) q_s[d] = q[q0 + d] * p.f0;
  barrier();
  const int last = last_key(int(i));
  const uint n_vis = last < 0 ? 0u : uint(last) + 1u;
  float m = -1e30, l = 0.0;
  for (uint j0 = 0u; j0 < n_vis; j0 += wg) {
    const uint j = j0 + t;
    float s = -1e30;
    if (j < n_vis) {
      const uint k0 = k_row(g, j);
      s = 0.0;
      for (uint d = 0u; d < p.ne0; ++d) s += q_s[d] * load_k(k0, d);
    }
    const float m_new = max(m, reduce(t, s, true));
    const float e = j < n_vis ? exp(s - m_new) : 0.0;
    l = l * exp(m - m_new) + reduce(t, e, false);
    m = m_new;
  }
  if (t == 0u) {
    ml[p.o_aux + (head * W + i) * 2u] = m;
    ml[p.o_aux + (head * W + i) * 2u + 1u] = l;
  }
}
#else
void main() {
  const uint idx = global_id();
  const uint n_cols = uint(p.i1);
  if (idx >= p.ne1 * n_cols) return;
  const uint head = idx / n_cols, j = idx % n_cols;
  const uint g = head / (p.ne1 / p.ne3);
  const uint W = uint(p.i0);
  const bool softmax = (p.flags & 1u) != 0u, per_query = (p.flags & 2u) != 0u;
  const uint k0 = k_row(g, j);
  float total = 0.0;
  for (uint i = 0u; i < W; ++i) {
    const uint q0 = q_row(head, i);
    float s = 0.0;
    if (softmax) {
      if (int(j) <= last_key(int(i))) {
        for (uint d = 0u; d < p.ne0; ++d) s += (q[q0 + d] * p.f0) * load_k(k0, d);
        const uint st = p.o_aux + (head * W + i) * 2u;
        s = exp(s - ml[st]) * (1.0 / ml[st + 1u]);  // ml[st + 1] >= 1: the max term is exp(0)
      }
    } else {
      for (uint d = 0u; d < p.ne0; ++d) s += q[q0 + d] * load_k(k0, d);
    }
    if (per_query) {
      dst[p.o_dst + head * p.dst_nb1 + i * p.dst_nb2 + j] = s;
    } else {
      total += s;
    }
  }
  if (!per_query) dst[p.o_dst + head * p.dst_nb1 + j] = total;
}
#endif
