#version 450
// f32 rows: dst rows [i0, i0 + n) = src rows [0, n). One invocation per element. Rows into a
// KV cache of f16 or q8_0 (and a cache's rows into one of its type) are kv_rows.comp's.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Src { float src[]; };

void main() {
  const uint idx = global_id();
  if (idx >= p.ne0 * p.ne1) return;
  const uint r = idx / p.ne0, i = idx % p.ne0;
  dst[p.o_dst + (uint(p.i0) + r) * p.dst_nb1 + i] = src[p.o_s0 + r * p.s0_nb1 + i];
}
