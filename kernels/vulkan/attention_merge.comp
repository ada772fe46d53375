#version 450
// The second half of a split attention_decode (attention.comp ATTN_SPLIT, flash-decoding):
// one workgroup per head combines the i2 splits' partial softmax sums, read from the
// workspace (binding 1) at (split * n_head + head) * (hd + 2) as (m, l, hd sums), into
//   dst[head][d] = sum_s acc_s[d] e^(m_s - M) / sum_s l_s e^(m_s - M),  M = max_s m_s.
// Every split holds at least one key (the encoder), so the sum of weights is > 0.
// ne0 = hd, ne1 = n_head, i2 = splits; dst rows of one query [n_head, hd] (dst_nb1).
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Part { float part[]; };

void main() {
  const uint head = group_id();
  if (head >= p.ne1) return;
  const uint hd = p.ne0, stride = hd + 2u, n_splits = uint(p.i2);
  float mx = -1e30;
  for (uint s = 0u; s < n_splits; ++s) mx = max(mx, part[p.o_s0 + (s * p.ne1 + head) * stride]);
  float sum = 0.0;
  for (uint s = 0u; s < n_splits; ++s) {
    const uint base = p.o_s0 + (s * p.ne1 + head) * stride;
    sum += part[base + 1u] * exp(part[base] - mx);
  }
  for (uint d = gl_LocalInvocationID.x; d < hd; d += gl_WorkGroupSize.x) {
    float a = 0.0;
    for (uint s = 0u; s < n_splits; ++s) {
      const uint base = p.o_s0 + (s * p.ne1 + head) * stride;
      a += part[base + 2u + d] * exp(part[base] - mx);
    }
    dst[p.o_dst + head * p.dst_nb1 + d] = a / sum;
  }
}
