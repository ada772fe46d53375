#version 450
// dst[rows, n] = src[rows, n] pooled along ne0: odd kernel i0, stride 1, i0/2 padding, same
// length; average (zero padding, divisor always i0) or, flags bit 0, max (padding ignored).
// Each output sums its clipped window in index order, the order the CPU uses, so the
// results are the same bits. Rows may be 3-D: row r is (r % ne1, r / ne1) in src and
// (r % ne3, r / ne3) in dst. ne0 = n, ne1 = src ne1, ne2 = rows, ne3 = dst ne1, f0 = 1 / kernel.
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
layout(binding = 1) readonly buffer Src { float src[]; };

void main() {
  const uint idx = global_id();
  if (idx >= p.ne0 * p.ne2) return;
  const uint j = idx % p.ne0, r = idx / p.ne0;
  const uint in_row = p.o_s0 + (r % p.ne1) * p.s0_nb1 + (r / p.ne1) * p.s0_nb2;
  const uint out_row = p.o_dst + (r % p.ne3) * p.dst_nb1 + (r / p.ne3) * p.dst_nb2;
  const int kk = max(p.i0, 1), half_k = kk / 2;
  const int lo = max(int(j) - half_k, 0), hi = min(int(j) - half_k + kk, int(p.ne0));
  const bool use_max = (p.flags & 1u) != 0u;
  float acc = src[in_row + uint(lo)];
  for (int t = lo + 1; t < hi; ++t) {
    const float v = src[in_row + uint(t)];
    acc = use_max ? max(acc, v) : acc + v;
  }
  dst[out_row + j] = use_max ? acc : acc * p.f0;  // f0 = 1 / kernel, rounded once on the host as on the CPU
}
