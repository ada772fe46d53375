#version 450
// A prompt's matmul on GPUs: dst[n, out] = x[n, k] (f32) . W[out, k]^T, W of the type a
// WTYPE_* define chooses, dequantized as it is read (dequant.glsl load_w); products and sums
// in f32 (the CPU's matmul_f32 semantics, summed over k in order per output). matmul.comp's
// kernels read every weight once per tile of at most 8 activation rows; here a workgroup of
// 256 invocations owns a tile of kBM rows x kBN outputs and walks k in steps of kBK: the
// step's x rows and dequantized weights go to shared memory once, and each invocation
// multiplies 4 rows by 4 outputs out of it, so a weight read from memory serves 64 rows.
// Rows and outputs of an invocation are 16 apart (ty + 16 i, tx + 16 j): neighbouring
// invocations read neighbouring shared words and write neighbouring dst elements.
// ne0 = k, ne1 = n_out, ne2 = n rows; x row r at o_s0 + r * s0_nb1, weight row o at
// o_s1 + o * s1_nb1 (elements, or bytes for quantized types), dst at o_dst + r * dst_nb1 + o.
// One product, no fusions (the encoder sends those to matmul.comp); workgroup size 256.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer X { float x[]; };
#define W_BINDING 2
#include "dequant.glsl"

const uint kBM = 64u, kBN = 64u, kBK = 16u;
const uint kThreads = 256u;
const uint kStride = 65u;  // a step's row of xs / ws, padded: the transposing stores spread over banks
shared float xs[kBK * kStride];  // [k][row]
shared float ws[kBK * kStride];  // [k][output]

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint tx = lid % 16u, ty = lid / 16u;
  const uint n_col = (p.ne1 + kBN - 1u) / kBN;
  const uint o0 = (group_id() % n_col) * kBN, r0 = (group_id() / n_col) * kBM;
  // A grid spilled into y has groups past the last row tile: the whole workgroup leaves.
  if (r0 >= p.ne2) return;
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < p.ne0; k0 += kBK) {
    // 64 x 16 values of each side, 4 per invocation; 16 neighbours read one row's 16 k.
    [[unroll]] for (uint e4 = 0u; e4 < 4u; ++e4) {
      const uint e = lid + e4 * kThreads, row = e / kBK, kk = e % kBK, kg = k0 + kk;
      const uint r = r0 + row, o = o0 + row;
      xs[kk * kStride + row] = r < p.ne2 && kg < p.ne0 ? x[p.o_s0 + r * p.s0_nb1 + kg] : 0.0;
      ws[kk * kStride + row] = o < p.ne1 && kg < p.ne0 ? load_w(p.o_s1 + o * p.s1_nb1, kg) : 0.0;
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < kBK; ++kk) {
      float a[4], b[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = xs[kk * kStride + ty + 16u * i];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = ws[kk * kStride + tx + 16u * j];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += a[i] * b[j];
    }
    barrier();  // the step is consumed before the next overwrites it
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint r = r0 + ty + 16u * i;
    if (r >= p.ne2) continue;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      const uint o = o0 + tx + 16u * j;
      if (o < p.ne1) dst[p.o_dst + r * p.dst_nb1 + o] = acc[i][j];
    }
  }
}
