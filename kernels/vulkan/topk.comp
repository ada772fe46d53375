#version 450
// For each row of x[rows, n] the indices of its k = i0 largest values (ties: lower index
// first; NaN ranks below every number), ascending, to out[r * k ..) in the readback ring;
// slots past n get -1. One workgroup per row. An element is kept when fewer than k others
// rank above it; the row is walked in chunks of the workgroup size so a prefix sum in
// shared memory gives each kept index its place without scratch memory. O(n^2 / wg) per
// row: a correct first version, not a fast one (a radix select is the next step).
// ne0 = n, ne1 = x ne1 (3-D rows: (r % ne1, r / ne1)), ne2 = rows.
#include "common.glsl"

layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 4) writeonly buffer Out { int result[]; };

shared uint scan[256];
shared uint base_count;

bool above(float va, uint a, float vb, uint b) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va > vb;
  return a < b;
}

void main() {
  const uint r = group_id();
  if (r >= p.ne2) return;
  const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint n = p.ne0, k = uint(p.i0);
  const uint row = p.o_s0 + (r % p.ne1) * p.s0_nb1 + (r / p.ne1) * p.s0_nb2;
  const uint out0 = p.o_aux + r * k;
  if (t == 0u) base_count = 0u;
  barrier();
  for (uint c0 = 0u; c0 < n; c0 += wg) {
    const uint i = c0 + t;
    uint keep = 0u;
    if (i < n) {
      const float vi = x[row + i];
      uint rank = 0u;
      for (uint j = 0u; j < n && rank < k; ++j) {
        if (j != i && above(x[row + j], j, vi, i)) ++rank;
      }
      keep = rank < k ? 1u : 0u;
    }
    // Inclusive scan of keep over the chunk (Hillis-Steele).
    scan[t] = keep;
    barrier();
    for (uint off = 1u; off < wg; off <<= 1) {
      const uint add = t >= off ? scan[t - off] : 0u;
      barrier();
      scan[t] += add;
      barrier();
    }
    if (keep != 0u) result[out0 + base_count + scan[t] - 1u] = int(i);
    barrier();
    if (t == 0u) base_count += scan[wg - 1u];
    barrier();
  }
  for (uint s = n + t; s < k; s += wg) result[out0 + s] = -1;
}
