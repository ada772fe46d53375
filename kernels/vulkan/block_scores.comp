#version 450
// SlimInfer block scores over key rows 0..n_keys of k[rows, n_head_kv, hd] (binding 2; with
// flags bit 0, key row r is row ids[r], binding 4): blocks of i0 rows made of units of i1
// rows (the last ones may be partial); score = max over units of (1 / n_head) *
// sum_h |qbar_h . mean(unit keys of kv head h / G)|. Two kernels, like the CPU's phases:
//   BS_QBAR: qbar_h = mean of the last n_last rows of q[n, n_head, hd] (binding 1), summed
//     in row order and multiplied by f0 = 1 / n_last, into the workspace (binding 3).
//   BS_SCORES: one workgroup per block, threads over the head dimension; dst[n_blocks].
// ne0 = hd (<= 4 * workgroup size), ne1 = n_head, ne2 = n_keys, ne3 = n_head_kv;
// i0 = block, i1 = unit, i2 = n_last (q rows n - n_last .. n), i3 = n (q rows), f1 = 1 / n_head.
// k is a cache of f32, f16 or q8_0 (kv.glsl).
#include "common.glsl"
#include "kv.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Q { float q[]; };
layout(binding = 3) buffer Qbar { float qbar[]; };
layout(binding = 4) readonly buffer Ids { int ids[]; };

#if defined(BS_QBAR)
void main() {
  const uint idx = global_id();
  if (idx >= p.ne1 * p.ne0) return;
  const uint h = idx / p.ne0, d = idx % p.ne0;
  float s = 0.0;
  for (uint r = uint(p.i3 - p.i2); r < uint(p.i3); ++r) s += q[p.o_s0 + h * p.s0_nb1 + r * p.s0_nb2 + d];
  qbar[p.o_s2 + h * p.ne0 + d] = s * p.f0;
}
#else
const uint kMaxDimsPerThread = 4u;
shared float red[64];

void main() {
  const uint b = group_id();
  const uint block = uint(p.i0), unit = uint(p.i1), n_keys = p.ne2;
  if (b * block >= n_keys) return;
  const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint group = p.ne1 / p.ne3;
  const bool with_ids = (p.flags & 1u) != 0u;
  const uint block_end = min((b + 1u) * block, n_keys);
  float best = 0.0;  // scores are >= 0 and every block has a unit
  for (uint us = b * block; us < block_end; us += unit) {
    const uint ue = min(us + unit, block_end);
    const float inv = 1.0 / float(ue - us);
    float score = 0.0;
    for (uint g = 0u; g < p.ne3; ++g) {
      float ukey[kMaxDimsPerThread] = float[kMaxDimsPerThread](0.0, 0.0, 0.0, 0.0);
      [[unroll]] for (uint e = 0u; e < kMaxDimsPerThread; ++e) {
        const uint d = t + e * wg;
        if (d >= p.ne0) break;
        float s = 0.0;
        for (uint r = us; r < ue; ++r) {
          const uint kr = with_ids ? uint(ids[p.o_aux + r]) : r;
          s += load_k(p.o_s1 + g * p.s1_nb1 + kr * p.s1_nb2, d);
        }
        ukey[e] = s * inv;
      }
      for (uint h = 0u; h < group; ++h) {
        float part = 0.0;
        [[unroll]] for (uint e = 0u; e < kMaxDimsPerThread; ++e) {
          const uint d = t + e * wg;
          if (d < p.ne0) part += qbar[p.o_s2 + (g * group + h) * p.ne0 + d] * ukey[e];
        }
        red[t] = part;
        barrier();
        for (uint w = wg / 2u; w > 0u; w >>= 1) {
          if (t < w) red[t] += red[t + w];
          barrier();
        }
        score += abs(red[0]);
        barrier();
      }
    }
    best = max(best, score * p.f1);  // f1 = 1 / n_head, rounded on the host as on the CPU
  }
  if (t == 0u) dst[p.o_dst + b] = best;
}
#endif
