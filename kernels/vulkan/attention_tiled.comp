#version 450
// attention_prefill on GPUs, in flash tiles: attention.comp gives every (query row, head) a
// workgroup that reads all the keys that row sees from memory; here a workgroup of 256
// invocations owns 16 rows of one KV head, numbered L = t * G + h (position t, head h of the
// head's group of G, as CUDA's attention.cu), so all its rows read the same keys, and the
// keys come through shared memory 16 at a time, each read from memory once per tile.
// Invocation (r, c) of a row's 16: scores key c of the step for row r (q from shared memory,
// pre-scaled; the dot over d in order, as attention.comp), then each of the row's 16 keeps
// the row's running max and sum (online softmax, the same values in all 16) and adds
// weight x value for its dims c, c + 16, ... The longest tiles go first.
// q/dst [n, n_head, hd] (bindings 1 / 0), k/v [rows, n_head_kv, hd] (2 / 3) of the cache's
// type (kv.glsl). ne0 = hd (<= 128, a multiple of 4), ne1 = n_head, ne2 = n, ne3 = n_head_kv,
// i0 = position of row 0, f0 = scale. No skip flags (the encoder sends those calls to
// attention.comp). Every loop but the one over the steps is unrolled to kMaxHD or kKeys with
// guards: llvmpipe ends any loop of an invocation after 65535 iterations in all (attention.comp),
// and the steps alone stay under it up to a million keys.
// Workgroup size 256; 25.8 KiB of shared memory (lavapipe has 32, GPUs 48 or more).
#include "common.glsl"
#define KV_V
#include "kv.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Q { float q[]; };

const uint kRows = 16u;   // (position, head) rows per workgroup
const uint kLanes = 16u;  // invocations per row
const uint kKeys = 16u;   // keys per step: one per lane
const uint kThreads = kRows * kLanes;
const uint kMaxHD = 128u;
const uint kDims = kMaxHD / kLanes;  // dims per invocation
const uint kStr = kMaxHD + 1u;       // rows padded: a step's key rows and the tile's q rows spread over banks
shared float qs[kRows * kStr];
shared float ks[kKeys * kStr];
shared float vs[kKeys * kStr];
shared float ss[kRows * (kKeys + 1u)];

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint r = lid / kLanes, c = lid % kLanes;
  const uint hd = p.ne0, group = p.ne1 / p.ne3;
  const uint n_all = p.ne2 * group;  // (position, head) rows of one KV head
  const uint n_tiles = (n_all + kRows - 1u) / kRows;
  const uint g = group_id() % p.ne3, back = group_id() / p.ne3;
  if (back >= n_tiles) return;  // a grid spilled into y: the whole workgroup leaves
  const uint L0 = (n_tiles - 1u - back) * kRows;  // the longest tiles first
  const uint L = L0 + r;
  const bool live = L < n_all;
  const uint t = live ? L / group : 0u, h = g * group + (live ? L % group : 0u);
  const uint last = uint(p.i0) + t;  // the last key row r sees
  const uint jb = uint(p.i0) + (min(L0 + kRows, n_all) - 1u) / group + 1u;  // keys [0, jb) of the tile

  [[unroll]] for (uint i = 0u; i < kRows * kMaxHD / kThreads; ++i) {
    const uint e = lid + i * kThreads, rr = e / hd, d = e % hd, LL = L0 + rr;
    if (e < kRows * hd)
      qs[rr * kStr + d] = LL < n_all
                              ? q[p.o_s0 + (g * group + LL % group) * p.s0_nb1 + (LL / group) * p.s0_nb2 + d] * p.f0
                              : 0.0;
  }
  float m = -1e30;  // finite, so exp(m_old - m_new) is defined on the first step
  float l = 0.0;
  float acc[kDims];
  [[unroll]] for (uint e = 0u; e < kDims; ++e) acc[e] = 0.0;

  for (uint j0 = 0u; j0 < jb; j0 += kKeys) {
    barrier();  // the step before is consumed (the first time: q is stored)
    [[unroll]] for (uint i = 0u; i < kKeys * kMaxHD / kThreads; ++i) {
      const uint e = lid + i * kThreads, jj = e / hd, d = e % hd, j = j0 + jj;
      if (e < kKeys * hd) {
        ks[jj * kStr + d] = j < jb ? load_k(p.o_s1 + g * p.s1_nb1 + j * p.s1_nb2, d) : 0.0;
        vs[jj * kStr + d] = j < jb ? load_v(p.o_s2 + g * p.s2_nb1 + j * p.s2_nb2, d) : 0.0;
      }
    }
    barrier();
    // Key c's score for row r, the dims in order.
    float s = 0.0;
    [[unroll]] for (uint d = 0u; d < kMaxHD; d += 4u) {
      if (d < hd) {
        s += qs[r * kStr + d] * ks[c * kStr + d];
        s += qs[r * kStr + d + 1u] * ks[c * kStr + d + 1u];
        s += qs[r * kStr + d + 2u] * ks[c * kStr + d + 2u];
        s += qs[r * kStr + d + 3u] * ks[c * kStr + d + 3u];
      }
    }
    ss[r * (kKeys + 1u) + c] = s;
    barrier();
    // Keys past the row's position or the tile's end weigh nothing.
    const uint n_valid = j0 > last ? 0u : min(kKeys, min(last + 1u, jb) - j0);
    float mx = -1e30;
    [[unroll]] for (uint jj = 0u; jj < kKeys; ++jj)
      if (jj < n_valid) mx = max(mx, ss[r * (kKeys + 1u) + jj]);
    const float m_new = max(m, mx);
    const float alpha = exp(m - m_new);
    [[unroll]] for (uint e = 0u; e < kDims; ++e) acc[e] *= alpha;
    float sum = 0.0;
    [[unroll]] for (uint jj = 0u; jj < kKeys; ++jj) {
      if (jj < n_valid) {
        const float pj = exp(ss[r * (kKeys + 1u) + jj] - m_new);
        sum += pj;
        [[unroll]] for (uint e = 0u; e < kDims; ++e) acc[e] += pj * vs[jj * kStr + c + e * kLanes];
      }
    }
    l = l * alpha + sum;
    m = m_new;
  }
  if (!live) return;
  const uint out0 = p.o_dst + h * p.dst_nb1 + t * p.dst_nb2;
  [[unroll]] for (uint e = 0u; e < kDims; ++e) {
    const uint d = c + e * kLanes;
    if (d < hd) dst[out0 + d] = acc[e] / l;
  }
}
