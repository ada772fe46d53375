#version 450
// f32 rows: dst rows [i0, i0 + n) = src rows [0, n). One invocation per element. Rows into a
// KV cache of f16 or q8_0 (and a cache's rows into one of its type) are kv_rows.comp's.
// ne0 = row width, ne1 = n, ne2 = copies: 2 when a second copy (CopyRowsOp::dst2 / src2, a
// layer's values beside its keys) shares the bindings, its first elements s1_nb1 (dst) and
// s1_nb2 (src), its row strides s2_nb1 and s2_nb2.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Src { float src[]; };

void main() {
  const uint per_copy = p.ne0 * p.ne1;
  const uint idx = global_id();
  if (idx >= per_copy * p.ne2) return;
  const bool second = idx >= per_copy;
  const uint e = second ? idx - per_copy : idx;
  const uint r = e / p.ne0, i = e % p.ne0, row = uint(p.i0) + r;
  const uint d = second ? p.s1_nb1 + row * p.s2_nb1 : p.o_dst + row * p.dst_nb1;
  const uint s = second ? p.s1_nb2 + r * p.s2_nb2 : p.o_s0 + r * p.s0_nb1;
  dst[d + i] = src[s + i];
}
