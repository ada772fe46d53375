#version 450
// dst[n, kv_heads, 2]: per row t of k (binding 1) and v (binding 2) [n, kv_heads, hd], in
// row order, cos(x_t, A) against the anchors [2, kv_heads, hd] (binding 3, read and
// updated in place), then A = f0 A + (1 - f0) x; an all-zero anchor takes x as it is
// (cos 0). Each (kv head, k or v) anchor is a sequential stream: one workgroup per stream,
// threads over the head dimension, the three sums reduced in shared memory per row.
// ne0 = hd, ne1 = kv_heads, ne2 = n.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer K { float kx[]; };
layout(binding = 2) readonly buffer V { float vx[]; };
layout(binding = 3) buffer Anchors { float anchor[]; };

shared vec3 partial[256];

void main() {
  const uint s = group_id();
  if (s >= 2u * p.ne1) return;
  const uint g = s / 2u, which = s % 2u;
  const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint a0 = p.o_s2 + g * p.s2_nb1 + which * p.s2_nb2;
  const float decay = p.f0, keep = 1.0 - p.f0;
  for (uint row = 0u; row < p.ne2; ++row) {
    vec3 acc = vec3(0.0);  // dot, |A|^2, |x|^2
    for (uint d = t; d < p.ne0; d += wg) {
      const float xv = which == 0u ? kx[p.o_s0 + g * p.s0_nb1 + row * p.s0_nb2 + d]
                                   : vx[p.o_s1 + g * p.s1_nb1 + row * p.s1_nb2 + d];
      const float av = anchor[a0 + d];
      acc += vec3(av * xv, av * av, xv * xv);
    }
    partial[t] = acc;
    barrier();
    for (uint h = wg / 2u; h > 0u; h >>= 1) {
      if (t < h) partial[t] += partial[t + h];
      barrier();
    }
    const vec3 sums = partial[0];
    if (t == 0u) {
      const float c = sums.y > 0.0 && sums.z > 0.0 ? sums.x / (sqrt(sums.y) * sqrt(sums.z)) : 0.0;
      dst[p.o_dst + g * p.dst_nb1 + row * p.dst_nb2 + which] = c;
    }
    for (uint d = t; d < p.ne0; d += wg) {
      const float xv = which == 0u ? kx[p.o_s0 + g * p.s0_nb1 + row * p.s0_nb2 + d]
                                   : vx[p.o_s1 + g * p.s1_nb1 + row * p.s1_nb2 + d];
      anchor[a0 + d] = sums.y == 0.0 ? xv : decay * anchor[a0 + d] + keep * xv;
    }
    barrier();  // partial[] is reused by the next row
  }
}
