#version 450
// x[n, heads, hd] (binding 0) rotated in place; row r at position ids[r] (binding 4).
// The per-pair frequencies theta^(-2i/n_rot) / divisor_i are computed once per launch on
// the host exactly as the CPU does (in double) and uploaded (binding 3). With ROPE_F64 the
// angle pos * freq is formed and reduced to [-pi, pi] in double, so long positions keep
// the CPU's accuracy; otherwise in float (devices without shaderFloat64).
// With ROPE_TABLE binding 3 holds RopeOp::angles instead: row r's cos and sin of pair i at
// o_s2 + r * s2_nb1 + 2i, made on the host in double (exact on every device, and nothing
// to compute per invocation).
// i0 = n_rot, i1 = neox, f0 = mscale (on cos and sin; the table has it already), f1 = position
// scale; ne0 = head_dim, ne1 = heads, ne2 = n.
// A second tensor x2 in the same binding (RopeOp::x2, a layer's keys beside its queries)
// rotates in the same dispatch: ne3 heads whose first element is s0_nb1, strides s1_nb1 /
// s1_nb2 (ne3 = 0 without). One invocation per (pair, head, row), x's heads then x2's.
#include "common.glsl"

layout(binding = 0) buffer X { float x[]; };
#if defined(ROPE_F64)
layout(binding = 3) readonly buffer Freq { double freq[]; };
#elif defined(ROPE_TABLE)
layout(binding = 3) readonly buffer Angles { float angles[]; };
#else
layout(binding = 3) readonly buffer Freq { float freq[]; };
#endif
layout(binding = 4) readonly buffer Pos { int pos[]; };

void main() {
  const uint half_rot = uint(p.i0) / 2u;
  const uint heads = p.ne1 + p.ne3;
  const uint idx = global_id();
  if (idx >= half_rot * heads * p.ne2) return;
  const uint i = idx % half_rot;
  const uint h = (idx / half_rot) % heads;
  const uint r = idx / (half_rot * heads);
#if defined(ROPE_TABLE)
  const uint t = p.o_s2 + r * p.s2_nb1 + 2u * i;
  const float c = angles[t], s = angles[t + 1u];
#else
#if defined(ROPE_F64)
  const double two_pi = 6.283185307179586LF;
  double angle = double(pos[p.o_aux + r]) * double(p.f1) * freq[p.o_s2 + i];
  angle -= two_pi * floor(angle / two_pi + 0.5LF);
  const float a = float(angle);
#else
  const float a = float(pos[p.o_aux + r]) * p.f1 * freq[p.o_s2 + i];
#endif
  const float c = cos(a) * p.f0, s = sin(a) * p.f0;
#endif
  const uint base = h < p.ne1 ? p.o_dst + h * p.dst_nb1 + r * p.dst_nb2
                              : p.s0_nb1 + (h - p.ne1) * p.s1_nb1 + r * p.s1_nb2;
  const uint ia = p.i1 != 0 ? i : 2u * i;
  const uint ib = p.i1 != 0 ? i + half_rot : 2u * i + 1u;
  const float x0 = x[base + ia], x1 = x[base + ib];
  x[base + ia] = x0 * c - x1 * s;
  x[base + ib] = x0 * s + x1 * c;
}
