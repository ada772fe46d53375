#version 450
// dst rows [i0, i0 + n) = src rows [0, n), f32 -> dst type (DST_F16: f16, rounded by the
// conversion, which Vulkan implementations do to nearest). One invocation per element.
#include "common.glsl"

#if defined(DST_F16)
layout(binding = 0) writeonly buffer Dst { float16_t dst[]; };
#else
layout(binding = 0) writeonly buffer Dst { float dst[]; };
#endif
layout(binding = 1) readonly buffer Src { float src[]; };

void main() {
  const uint idx = global_id();
  if (idx >= p.ne0 * p.ne1) return;
  const uint r = idx / p.ne0, i = idx % p.ne0;
  const float v = src[p.o_s0 + r * p.s0_nb1 + i];
#if defined(DST_F16)
  dst[p.o_dst + (uint(p.i0) + r) * p.dst_nb1 + i] = float16_t(v);
#else
  dst[p.o_dst + (uint(p.i0) + r) * p.dst_nb1 + i] = v;
#endif
}
