#version 450
// dst[n, f] = silu(gate) * up, silu(g) = g / (1 + exp(-g)); flags bit 0: gelu(gate) * up,
// gelu's tanh form written as g / (1 + exp(-2y)), y = sqrt(2/pi) (g + 0.044715 g^3), as the
// CPU's. One invocation per element; dst may alias gate.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Gate { float gate[]; };
layout(binding = 2) readonly buffer Up { float up[]; };

void main() {
  const uint idx = global_id();
  if (idx >= p.ne0 * p.ne1) return;
  const uint r = idx / p.ne0, i = idx % p.ne0;
  // exp(-g) is clamped as the CPU's fast_exp is, so a very negative g gives -0 * up, not NaN.
  const float g = gate[p.o_s0 + r * p.s0_nb1 + i];
  const float z = (p.flags & 1u) != 0u ? 1.5957691216057308 * (g + 0.044715 * g * g * g) : g;
  const float e = exp(clamp(-z, -87.0, 88.0));
  dst[p.o_dst + r * p.dst_nb1 + i] = g / (1.0 + e) * up[p.o_s1 + r * p.s1_nb1 + i];
}
