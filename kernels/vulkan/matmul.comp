#version 450
// dst[n, out] = x[n, k] (f32) . W[out, k]^T, W of the type chosen by a WTYPE_* define and
// dequantized as it is read; products and sums in f32 (the CPU's matmul_f32 semantics).
// ne0 = k, ne1 = n_out, ne2 = n rows. Every variant decodes each weight once per tile of
// kTileRows activation rows (common.glsl: 1 for a decode step, so no lane computes a row
// that is not there).
//   MM_SUBGROUP (devices with subgroup arithmetic; k % 8 == 0): a workgroup takes i0
//     consecutive outputs, one subgroup per output at a time; lanes stride over 8-weight
//     units and one subgroupAdd per row finishes the sum: no shared memory, no barrier.
//   MM_LANE (CPU devices, where a lane is a SIMD slot; k % 8 == 0, x rows on 16 bytes): each
//     lane owns kOuts outputs and walks all of k, a block's head loaded once. Nothing is
//     summed across lanes, and one load of x feeds kOuts weight rows: on lavapipe every
//     buffer load is a loop over the lanes, so loads per product decide the speed. On a
//     GPU the lanes' weight reads would not coalesce, so GPUs never get it.
//     With W_TEXEL (matmul_lt_*: quantized weights, both bindings with texel views) x and
//     the weights are read as 16-byte texels, and a decode step runs lanes along k
//     (lanes_along_k below) instead of rows per lane.
//   otherwise: one workgroup per (output, row tile); threads stride over k, then a tree
//     per row in shared memory.
#include "common.glsl"
#if defined(MM_SUBGROUP) || defined(W_TEXEL)
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif

layout(binding = 0) buffer Dst { float dst[]; };  // read too where kAccumulate (below)
#if !defined(W_TEXEL)
layout(binding = 1) readonly buffer X { float x[]; };
#endif
#define W_BINDING 2
#include "dequant.glsl"

#if !defined(MM_LANE)
// MatmulOp's one-row fusions (kernels/ops.h) in the subgroup and portable kernels (the lane
// kernels have none: BackendCaps::fused_matmul_k is 0 on CPU devices, where reading the
// norm's weights per column group cost more than the dispatches saved, vulkan.md), as
// specialization constant 5 (bits of kFuse), so a pipeline without them compiles them
// away: the input is x's rmsnorm (kNorm: weights at binding 3 from o_s2, eps f0) or
// silu(gate) * x (kGate: gate at binding 3); each product's bias (kBias: binding 4, product
// 0's at o_aux, 1's and 2's at i1, i2) is added; kAccumulate adds the result into dst.
// The host sets them only for a one-row call.
layout(constant_id = 5) const uint kFuse = 0u;
const bool kNorm = (kFuse & 1u) != 0u;
const bool kGate = (kFuse & 2u) != 0u;
const bool kBias = (kFuse & 4u) != 0u;
const bool kAccumulate = (kFuse & 8u) != 0u;
layout(binding = 3) readonly buffer In { float fin[]; };
layout(binding = 4) readonly buffer Bias { float bias[]; };

// 1 / rms of x's row for kNorm (set by each kernel from its own sum of squares), else 1.
float in_scale = 1.0;
void set_in_scale(float sum_sq) { in_scale = 1.0 / sqrt(sum_sq / float(p.ne0) + p.f0); }
// What the products read at element i of the row: x itself, or the fused op's output with
// the CPU's order of operations (rmsnorm.comp: x * scale * w; swiglu.comp's silu).
float x_in(float v, uint i) {
  if (kNorm) return v * in_scale * fin[p.o_s2 + i];
  if (kGate) {
    const float g = fin[p.o_s2 + i];
    return g / (1.0 + exp(clamp(-g, -87.0, 88.0))) * v;
  }
  return v;
}
// Four of them from x[xi], element e of the row.
vec4 x_in4(uint xi, uint e) {
  return vec4(x_in(x[xi], e), x_in(x[xi + 1u], e + 1u), x_in(x[xi + 2u], e + 2u), x_in(x[xi + 3u], e + 3u));
}
// dst element d of output o (of the product whose bias starts at b0) receives v.
void store(uint d, uint o, uint b0, float v) {
  if (kBias) v += bias[b0 + o];
  if (kAccumulate) v += dst[d];
  dst[d] = v;
}
#endif

// A call's products (MatmulOp's w2/dst2 and w3/dst3: the same x, weight type and row
// stride) share the dispatch as segments of its column groups: product 0 at o_s1, o_dst,
// ne1 outputs and dst_nb1 as a lone product; products 1 and 2 (ne3 and dst_nb2 outputs, 0
// where absent) at their first weight elements s0_nb2, s1_nb2 and dst elements s2_nb1,
// s2_nb2, dst rows of stride dst_nb1 (flags bit 0: column ranges of one matrix) or
// contiguous. The segment is uniform in a workgroup: selects, not branches, pick its fields.
struct Segment {
  uint n_out, w0, d0, d_stride, group;  // group: the column group within the product
  uint b0;                              // the product's first bias element (kBias)
};
Segment segment(uint cg, uint per_group) {
  const uint c0 = (p.ne1 + per_group - 1u) / per_group, c1 = (p.ne3 + per_group - 1u) / per_group;
  const bool in1 = cg >= c0, in2 = cg >= c0 + c1;
  Segment s;
  s.n_out = in2 ? p.dst_nb2 : in1 ? p.ne3 : p.ne1;
  s.w0 = in2 ? p.s1_nb2 : in1 ? p.s0_nb2 : p.o_s1;
  s.d0 = in2 ? p.s2_nb2 : in1 ? p.s2_nb1 : p.o_dst;
  s.d_stride = (p.flags & 1u) != 0u ? p.dst_nb1 : in2 ? p.dst_nb2 : in1 ? p.ne3 : p.dst_nb1;
  s.group = cg - (in2 ? c0 + c1 : in1 ? c0 : 0u);
  s.b0 = in2 ? uint(p.i2) : in1 ? uint(p.i1) : p.o_aux;
  return s;
}
// Column groups of all products.
uint col_groups(uint per_group) {
  return (p.ne1 + per_group - 1u) / per_group + (p.ne3 + per_group - 1u) / per_group +
         (p.dst_nb2 + per_group - 1u) / per_group;
}

#if defined(MM_SUBGROUP)
void main() {
  const uint per_group = uint(p.i0);
  const uint n_col_groups = col_groups(per_group);
  const Segment sg = segment(group_id() % n_col_groups, per_group);
  const uint o0 = sg.group * per_group;
  const uint r0 = (group_id() / n_col_groups) * kTileRows;
  // A grid spilled into y has groups past the last row tile: they write nothing (the whole
  // workgroup leaves, so no subgroup operation is split).
  if (r0 >= p.ne2) return;
  const uint n_rows = min(kTileRows, p.ne2 - r0);
  const uint n_units = p.ne0 / 8u;
  if (kNorm) {  // each subgroup sums the one row's squares itself: no barrier
    float ss = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < p.ne0; i += gl_SubgroupSize) {
      const float v = x[p.o_s0 + r0 * p.s0_nb1 + i];
      ss += v * v;
    }
    set_in_scale(subgroupAdd(ss));
  }
  // Subgroups loop over the outputs, so any subgroup size the device picks is correct.
  for (uint oi = gl_SubgroupID; oi < per_group && o0 + oi < sg.n_out; oi += gl_NumSubgroups) {
    const uint o = o0 + oi;
    const uint wrow = sg.w0 + o * p.s1_nb1;
    float acc[kTileRows];
    [[unroll]] for (uint j = 0u; j < kTileRows; ++j) acc[j] = 0.0;
    for (uint u = gl_SubgroupInvocationID; u < n_units; u += gl_SubgroupSize) {
      vec4 wa, wb;
      uint ea, eb;
      load_w8(wrow, u, wa, wb, ea, eb);
      [[unroll]] for (uint j = 0u; j < kTileRows; ++j) {
        if (j < n_rows) {
          const uint xa = p.o_s0 + (r0 + j) * p.s0_nb1 + ea, xb = p.o_s0 + (r0 + j) * p.s0_nb1 + eb;
          acc[j] += dot(wa, x_in4(xa, ea)) + dot(wb, x_in4(xb, eb));
        }
      }
    }
    [[unroll]] for (uint j = 0u; j < kTileRows; ++j) {
      const float s = subgroupAdd(acc[j]);
      if (j < n_rows && subgroupElect()) store(sg.d0 + (r0 + j) * sg.d_stride + o, o, sg.b0, s);
    }
  }
}
#elif defined(MM_LANE)
#if defined(W_TEXEL)
// W_TEXEL (the matmul_lt_* kernels: quantized weights where x's and the weights' bindings
// have texel views, backends/vulkan/memory.h): both read as 16-byte texels, which lavapipe
// fetches with one gather or vector load per component, where a storage load is a loop
// over the lanes with a bounds check each.
layout(binding = 1) uniform usamplerBuffer x_tex;
vec4 x_vec4(uint i) { return uintBitsToFloat(texelFetch(x_tex, int(i))); }
#else
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };  // x again, 16 bytes at a time
vec4 x_vec4(uint i) { return x4[i]; }
#endif
// Rows per lane: each lane owns kOuts outputs and walks all of k. One load of x feeds kOuts
// weight rows; a prefill tile's rows reuse each decoded weight.
const uint kOuts = 16u;  // 8 to 16: 7% faster on lavapipe (x loads shared by more rows)
void rows_per_lane() {
  const uint per_group = gl_WorkGroupSize.x * kOuts;
  const uint n_col_groups = col_groups(per_group);
  const Segment sg = segment(group_id() % n_col_groups, per_group);
  const uint o0 = sg.group * per_group + gl_LocalInvocationID.x;
  const uint r0 = (group_id() / n_col_groups) * kTileRows;
  // No branch decides what is loaded (a CPU device would run both sides): outputs past the
  // last read the last weight row, rows past the last the last x row, and are not stored.
  uint wrow[kOuts];
  [[unroll]] for (uint q = 0u; q < kOuts; ++q)
    wrow[q] = sg.w0 + min(o0 + q * gl_WorkGroupSize.x, sg.n_out - 1u) * p.s1_nb1;
  uint xrow[kTileRows];
  [[unroll]] for (uint j = 0u; j < kTileRows; ++j) xrow[j] = (p.o_s0 + min(r0 + j, p.ne2 - 1u) * p.s0_nb1) / 4u;
  float acc[kTileRows][kOuts];
  [[unroll]] for (uint j = 0u; j < kTileRows; ++j) {
    [[unroll]] for (uint q = 0u; q < kOuts; ++q) acc[j][q] = 0.0;
  }
  const uint n_units = p.ne0 / 8u;  // a multiple of kHeadUnits: rows hold whole blocks
  for (uint u0 = 0u; u0 < n_units; u0 += kHeadUnits) {
    WHead head[kOuts];
    [[unroll]] for (uint q = 0u; q < kOuts; ++q) head[q] = load_head(wrow[q], u0);
    for (uint u = u0; u < u0 + kHeadUnits; ++u) {
      vec4 wa[kOuts], wb[kOuts];
      uint ea, eb;  // the same for every output: they depend on u alone
      [[unroll]] for (uint q = 0u; q < kOuts; ++q) load_w8h(head[q], wrow[q], u, wa[q], wb[q], ea, eb);
      [[unroll]] for (uint j = 0u; j < kTileRows; ++j) {
        const vec4 va = x_vec4(xrow[j] + ea / 4u), vb = x_vec4(xrow[j] + eb / 4u);
        [[unroll]] for (uint q = 0u; q < kOuts; ++q) acc[j][q] += dot(wa[q], va) + dot(wb[q], vb);
      }
    }
  }
  [[unroll]] for (uint q = 0u; q < kOuts; ++q) {
    const uint o = o0 + q * gl_WorkGroupSize.x;
    [[unroll]] for (uint j = 0u; j < kTileRows; ++j) {
      if (o < sg.n_out && r0 + j < p.ne2) dst[sg.d0 + (r0 + j) * sg.d_stride + o] = acc[j][q];
    }
  }
}
#if defined(W_TEXEL)
// Lanes along k (a decode step, texel reads): a workgroup of one subgroup (the encoder's
// size) takes column groups of kRowsK consecutive outputs in turn; lane l walks blocks l,
// l + n, l + 2n... of a group's rows, a block's head once, and one subgroupAdd per output
// finishes. At each step the lanes read neighbouring blocks of the same rows, so the rows
// stream through the cache in order; with a row per lane, a workgroup walks 128 rows at
// once, more streams than a CPU's prefetchers follow. Decode after 64 tokens on lavapipe (docs/results/vulkan.md): 66 ms
// per token with storage loads, 61 with texels of one word, 52 lanes along k, 46 with
// 16-byte texels, 36 with whole blocks decoded from registers (W_BLOCKS, dequant.glsl).
const uint kRowsK = 16u;  // 4: 65 ms, 8: 56, 16: 52, 32: 52 (x read once for more rows)
void lanes_along_k() {
  const uint n_col_groups = col_groups(kRowsK);
  const uint xrow = p.o_s0 / 4u;  // a decode step's one x row
  const uint n_blocks = p.ne0 / (8u * kHeadUnits);  // rows hold whole blocks
  // i0 column groups per workgroup, one after another: lavapipe pays per workgroup (under
  // AddressSanitizer 20 s and 6 GB more for one model test with a workgroup per group).
  const uint cg_end = min((group_id() + 1u) * uint(p.i0), n_col_groups);
  for (uint cg = group_id() * uint(p.i0); cg < cg_end; ++cg) {
    const Segment sg = segment(cg, kRowsK);
    const uint o0 = sg.group * kRowsK;
    uint wrow[kRowsK];
    [[unroll]] for (uint q = 0u; q < kRowsK; ++q) wrow[q] = sg.w0 + min(o0 + q, sg.n_out - 1u) * p.s1_nb1;
    float acc[kRowsK];
    [[unroll]] for (uint q = 0u; q < kRowsK; ++q) acc[q] = 0.0;
#if defined(W_BLOCKS)
    // x of the block once (8 texels), then each row's block from blkw (load_block).
    for (uint blk = gl_LocalInvocationID.x; blk < n_blocks; blk += gl_WorkGroupSize.x) {
      vec4 xb[8];
      [[unroll]] for (uint i = 0u; i < 8u; ++i) xb[i] = x_vec4(xrow + 8u * blk + i);
      [[unroll]] for (uint q = 0u; q < kRowsK; ++q) {
        load_block(wrow[q] + blk * kBlockBytes);
        const WHead head = load_head(0u, 0u);
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
          vec4 wa, wb;
          uint ea, eb;
          load_w8h(head, 0u, u, wa, wb, ea, eb);
          acc[q] += dot(wa, xb[ea / 4u]) + dot(wb, xb[eb / 4u]);
        }
      }
    }
#else
    for (uint blk = gl_LocalInvocationID.x; blk < n_blocks; blk += gl_WorkGroupSize.x) {
      const uint u0 = blk * kHeadUnits;
      WHead head[kRowsK];
      [[unroll]] for (uint q = 0u; q < kRowsK; ++q) head[q] = load_head(wrow[q], u0);
      for (uint u = u0; u < u0 + kHeadUnits; ++u) {
        vec4 wa[kRowsK], wb[kRowsK];
        uint ea, eb;
        [[unroll]] for (uint q = 0u; q < kRowsK; ++q) load_w8h(head[q], wrow[q], u, wa[q], wb[q], ea, eb);
        const vec4 va = x_vec4(xrow + ea / 4u), vb = x_vec4(xrow + eb / 4u);
        [[unroll]] for (uint q = 0u; q < kRowsK; ++q) acc[q] += dot(wa[q], va) + dot(wb[q], vb);
      }
    }
#endif
    [[unroll]] for (uint q = 0u; q < kRowsK; ++q) {
      const float v = subgroupAdd(acc[q]);
      if (subgroupElect() && o0 + q < sg.n_out) dst[sg.d0 + o0 + q] = v;
    }
  }
}
#endif
void main() {
#if defined(W_TEXEL)
  // A constant when the pipeline is made: the other body is compiled away.
  if (kTileRows == 1u) {
    lanes_along_k();
    return;
  }
#endif
  rows_per_lane();
}
#else
shared float partial[kTileRows][256];

void main() {
  const uint o = group_id() % p.ne1;
  const uint r0 = (group_id() / p.ne1) * kTileRows;
  if (r0 >= p.ne2) return;  // past the last row tile of a spilled grid; the whole workgroup leaves
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint n_rows = min(kTileRows, p.ne2 - r0);
  const uint wrow = p.o_s1 + o * p.s1_nb1;
  if (kNorm) {  // the one row's sum of squares by the same tree as the products'
    float ss = 0.0;
    for (uint i = t; i < p.ne0; i += n) {
      const float v = x[p.o_s0 + r0 * p.s0_nb1 + i];
      ss += v * v;
    }
    partial[0][t] = ss;
    barrier();
    for (uint half_n = n / 2u; half_n > 0u; half_n >>= 1) {
      if (t < half_n) partial[0][t] += partial[0][t + half_n];
      barrier();
    }
    set_in_scale(partial[0][0]);
    barrier();  // every invocation has read the sum before the products reuse partial
  }
  float acc[kTileRows];
  [[unroll]] for (uint j = 0u; j < kTileRows; ++j) acc[j] = 0.0;
  for (uint i = t; i < p.ne0; i += n) {
    const float wv = load_w(wrow, i);
    [[unroll]] for (uint j = 0u; j < kTileRows; ++j) {
      if (j < n_rows) acc[j] += wv * x_in(x[p.o_s0 + (r0 + j) * p.s0_nb1 + i], i);
    }
  }
  [[unroll]] for (uint j = 0u; j < kTileRows; ++j) partial[j][t] = acc[j];
  barrier();
  for (uint half_n = n / 2u; half_n > 0u; half_n >>= 1) {
    if (t < half_n) {
      [[unroll]] for (uint j = 0u; j < kTileRows; ++j) partial[j][t] += partial[j][t + half_n];
    }
    barrier();
  }
  if (t < n_rows) store(p.o_dst + (r0 + t) * p.dst_nb1 + o, o, p.o_aux, partial[t][0]);
}
#endif
