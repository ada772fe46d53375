#version 450
// dst[n, d] = x / sqrt(mean(x^2) + eps) * w. One workgroup per row: strided partial sums of
// squares, then a tree in shared memory (workgroup size a power of two, <= 256).
// flags bit 0: a residual (binding 3) is added into x first and x written back; each
// invocation writes of dst only the elements it read of the residual, so dst may alias it.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) buffer X { float x[]; };
layout(binding = 2) readonly buffer W { float w[]; };
layout(binding = 3) readonly buffer R { float res[]; };

shared float partial[256];

void main() {
  const uint r = group_id();
  if (r >= p.ne1) return;  // the whole workgroup leaves together
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint xr = p.o_s0 + r * p.s0_nb1, dr = p.o_dst + r * p.dst_nb1;
  float s = 0.0;
  if ((p.flags & 1u) != 0u) {
    const uint rr = p.o_s2 + r * p.s2_nb1;
    for (uint i = t; i < p.ne0; i += n) {
      const float v = x[xr + i] + res[rr + i];
      x[xr + i] = v;
      s += v * v;
    }
  } else {
    for (uint i = t; i < p.ne0; i += n) {
      const float v = x[xr + i];
      s += v * v;
    }
  }
  partial[t] = s;
  barrier();
  for (uint half_n = n / 2u; half_n > 0u; half_n >>= 1) {
    if (t < half_n) partial[t] += partial[t + half_n];
    barrier();
  }
  const float scale = 1.0 / sqrt(partial[0] / float(p.ne0) + p.f0);
  for (uint i = t; i < p.ne0; i += n) dst[dr + i] = x[xr + i] * scale * w[p.o_s1 + i];
}
