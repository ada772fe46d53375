#version 450
// Index of the largest value of row 0 of x (the first on ties), written to binding 4, a
// slot of the backend's readback ring. One workgroup: each thread keeps its first maximum
// over a strided slice, then a tree where ties go to the lower index.
#include "common.glsl"

layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 4) writeonly buffer Out { int result[]; };

shared float best_v[256];
shared uint best_i[256];

void main() {
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  float bv = 0.0;
  uint bi = 0xFFFFFFFFu;  // no element yet
  for (uint i = t; i < p.ne0; i += n) {
    const float v = x[p.o_s0 + i];
    if (bi == 0xFFFFFFFFu || v > bv) {
      bv = v;
      bi = i;
    }
  }
  best_v[t] = bv;
  best_i[t] = bi;
  barrier();
  for (uint half_n = n / 2u; half_n > 0u; half_n >>= 1) {
    if (t < half_n) {
      const float ov = best_v[t + half_n];
      const uint oi = best_i[t + half_n];
      const uint mi = best_i[t];
      if (oi != 0xFFFFFFFFu && (mi == 0xFFFFFFFFu || ov > best_v[t] || (ov == best_v[t] && oi < mi))) {
        best_v[t] = ov;
        best_i[t] = oi;
      }
    }
    barrier();
  }
  if (t == 0u) result[p.o_aux] = int(best_i[0] == 0xFFFFFFFFu ? 0u : best_i[0]);
}
