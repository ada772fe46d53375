#version 450
// dst[n_sel, heads, d] from src[n_src, heads, d] by row ids (binding 4): shared (dst row r =
// src row ids[r]) or, flags bit 2, per head (dst[r, h] = src[ids[h * n_sel + r], h]).
// flags bit 0: src is 3-D (rows step by nb2, heads by nb1), bit 1: dst is 3-D.
// ne0 = d, ne1 = heads, ne2 = n_sel. One invocation per element.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Src { float src[]; };
layout(binding = 4) readonly buffer Ids { int ids[]; };

void main() {
  const uint idx = global_id();
  if (idx >= p.ne0 * p.ne1 * p.ne2) return;
  const uint i = idx % p.ne0;
  const uint h = (idx / p.ne0) % p.ne1;
  const uint r = idx / (p.ne0 * p.ne1);
  const bool per_head = (p.flags & 4u) != 0u;
  const uint s = uint(ids[p.o_aux + (per_head ? h * p.ne2 + r : r)]);
  const uint from = (p.flags & 1u) != 0u ? h * p.s0_nb1 + s * p.s0_nb2 : s * p.s0_nb1;
  const uint to = (p.flags & 2u) != 0u ? h * p.dst_nb1 + r * p.dst_nb2 : r * p.dst_nb1;
  dst[p.o_dst + to + i] = src[p.o_s0 + from + i];
}
