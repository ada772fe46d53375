#version 450
// dst[n, out] = x[n, k] (f32) . W[out, k]^T, W of the type chosen by a WTYPE_* define and
// dequantized as it is read; products and sums in f32 (the CPU's matmul_f32 semantics).
// One workgroup per (output column, tile of kRows activation rows): each weight element is
// decoded once per tile, threads stride over k, then a tree per row in shared memory.
// ne0 = k, ne1 = n_out, ne2 = n rows.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer X { float x[]; };
#define W_BINDING 2
#include "dequant.glsl"

const uint kRows = 4u;
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
