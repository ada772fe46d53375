#version 450
// dst[n, out] = x[n, k] (f32) . W[out, k]^T, W of the type chosen by a WTYPE_* define and
// dequantized as it is read; products and sums in f32 (the CPU's matmul_f32 semantics).
// ne0 = k, ne1 = n_out, ne2 = n rows. Both variants decode each weight once per tile of
// kRows activation rows.
// flags bit 0: every quantized block starts on a word (plain loads, dequant.glsl).
//   MM_SUBGROUP (devices with subgroup arithmetic; k % 8 == 0): a workgroup takes i0
//     consecutive outputs, one subgroup per output at a time; lanes stride over 8-weight
//     units and one subgroupAdd per row finishes the sum: no shared memory, no barrier.
//   otherwise: one workgroup per (output, row tile); threads stride over k, then a tree
//     per row in shared memory.
#include "common.glsl"
#if defined(MM_SUBGROUP)
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer X { float x[]; };
#define W_BINDING 2
#include "dequant.glsl"

const uint kRows = 4u;

#if defined(MM_SUBGROUP)
void main() {
  const uint per_group = uint(p.i0);
  const uint n_col_groups = (p.ne1 + per_group - 1u) / per_group;
  const uint o0 = (group_id() % n_col_groups) * per_group;
  const uint r0 = (group_id() / n_col_groups) * kRows;
  const uint n_rows = min(kRows, p.ne2 - r0);
  const uint n_units = p.ne0 / 8u;
  w_aligned = (p.flags & 1u) != 0u;
  // Subgroups loop over the outputs, so any subgroup size the device picks is correct.
  for (uint oi = gl_SubgroupID; oi < per_group && o0 + oi < p.ne1; oi += gl_NumSubgroups) {
    const uint o = o0 + oi;
    const uint wrow = p.o_s1 + o * p.s1_nb1;
    float acc[kRows] = float[kRows](0.0, 0.0, 0.0, 0.0);
    for (uint u = gl_SubgroupInvocationID; u < n_units; u += gl_SubgroupSize) {
      vec4 wa, wb;
      uint ea, eb;
      load_w8(wrow, u, wa, wb, ea, eb);
      [[unroll]] for (uint j = 0u; j < kRows; ++j) {
        if (j < n_rows) {
          const uint xa = p.o_s0 + (r0 + j) * p.s0_nb1 + ea, xb = p.o_s0 + (r0 + j) * p.s0_nb1 + eb;
          acc[j] += dot(wa, vec4(x[xa], x[xa + 1u], x[xa + 2u], x[xa + 3u])) +
                    dot(wb, vec4(x[xb], x[xb + 1u], x[xb + 2u], x[xb + 3u]));
        }
      }
    }
    [[unroll]] for (uint j = 0u; j < kRows; ++j) {
      const float s = subgroupAdd(acc[j]);
      if (j < n_rows && subgroupElect()) dst[p.o_dst + (r0 + j) * p.dst_nb1 + o] = s;
    }
  }
}
#else
shared float partial[kRows][256];

void main() {
  const uint o = group_id() % p.ne1;
  const uint r0 = (group_id() / p.ne1) * kRows;
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint n_rows = min(kRows, p.ne2 - r0);
  const uint wrow = p.o_s1 + o * p.s1_nb1;
  float acc[kRows] = float[kRows](0.0, 0.0, 0.0, 0.0);
  for (uint i = t; i < p.ne0; i += n) {
    const float wv = load_w(wrow, i);
    [[unroll]] for (uint j = 0u; j < kRows; ++j) {
      if (j < n_rows) acc[j] += wv * x[p.o_s0 + (r0 + j) * p.s0_nb1 + i];
    }
  }
  [[unroll]] for (uint j = 0u; j < kRows; ++j) partial[j][t] = acc[j];
  barrier();
  for (uint half_n = n / 2u; half_n > 0u; half_n >>= 1) {
    if (t < half_n) {
      [[unroll]] for (uint j = 0u; j < kRows; ++j) partial[j][t] += partial[j][t + half_n];
    }
    barrier();
  }
  if (t < n_rows) dst[p.o_dst + (r0 + t) * p.dst_nb1 + o] = partial[t][0];
}
#endif
