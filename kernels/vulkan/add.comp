#version 450
// dst[n, d] = a[n, d] + b (b: [n, d], or one row [d] broadcast when flags bit 0 is set).
// One invocation per element. dst may alias a (the residual add runs in place).
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer A { float a[]; };
layout(binding = 2) readonly buffer B { float b[]; };

void main() {
  const uint idx = global_id();
  if (idx >= p.ne0 * p.ne1) return;
  const uint r = idx / p.ne0, i = idx % p.ne0;
  const uint rb = (p.flags & 1u) != 0u ? 0u : r;
  dst[p.o_dst + r * p.dst_nb1 + i] = a[p.o_s0 + r * p.s0_nb1 + i] + b[p.o_s1 + rb * p.s1_nb1 + i];
}
