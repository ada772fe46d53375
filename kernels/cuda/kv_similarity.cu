// kv_similarity: each (KV head, k or v) anchor is a sequential stream over the rows
// (cpu/kv_similarity.cpp), so one warp owns one stream: a block of 2 warps per KV head,
// warp 0 the keys, warp 1 the values. For head_dim <= 256 a lane keeps its dims of the
// anchor in registers (dims l, l + 32, ...) and loads the next row while it works on this
// one; the three sums (a.x, a.a, x.x) are warp sums, identical on every lane, so the
// zero-anchor test is warp-uniform. Wider heads take the same steps with the anchor in
// global memory, each lane touching only its own dims.
#include "kv_similarity.cuh"

#include <cmath>

#include "warp.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kMaxPer = 8;  // register path: head_dim <= 256

struct KvArgs {
  RowView dst, k, v, anchors;
  int hd;
  int64_t n;
  float decay;
};

__device__ __forceinline__ float cosine(float dot, float aa, float xx) {
  return aa > 0.0f && xx > 0.0f ? dot / (sqrtf(aa) * sqrtf(xx)) : 0.0f;
}

__global__ void __launch_bounds__(64) kv_similarity_kernel(KvArgs a) {
  kernel_prologue();
  const int lane = threadIdx.x & 31, which = threadIdx.x >> 5;
  const int64_t g = blockIdx.x;
  // Fields picked one by one: a reference to either parameter struct would copy both to
  // local memory.
  const RowView x{which == 0 ? a.k.data : a.v.data, which == 0 ? a.k.nb1 : a.v.nb1, which == 0 ? a.k.nb2 : a.v.nb2};
  float* anchor = row_at(a.anchors.data, a.anchors.nb1, a.anchors.nb2, g, which);
  const float keep = 1.0f - a.decay;
  float av[kMaxPer], xv[kMaxPer];
#pragma unroll
  for (int i = 0; i < kMaxPer; ++i) {
    const int d = i * 32 + lane;
    av[i] = d < a.hd ? anchor[d] : 0.0f;
    xv[i] = d < a.hd && a.n > 0 ? row_at(x.data, x.nb1, x.nb2, g, 0)[d] : 0.0f;
  }
  for (int64_t t = 0; t < a.n; ++t) {
    float nx[kMaxPer];  // the next row, loaded ahead
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      const int d = i * 32 + lane;
      nx[i] = d < a.hd && t + 1 < a.n ? row_at(x.data, x.nb1, x.nb2, g, t + 1)[d] : 0.0f;
    }
    float dot = 0.0f, aa = 0.0f, xx = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      dot += av[i] * xv[i];
      aa += av[i] * av[i];
      xx += xv[i] * xv[i];
    }
    dot = warp_sum(dot);
    aa = warp_sum(aa);
    xx = warp_sum(xx);
    if (lane == 0) row_at(a.dst.data, a.dst.nb1, a.dst.nb2, g, t)[which] = cosine(dot, aa, xx);
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      av[i] = aa == 0.0f ? xv[i] : a.decay * av[i] + keep * xv[i];
      xv[i] = nx[i];
    }
  }
#pragma unroll
  for (int i = 0; i < kMaxPer; ++i) {
    const int d = i * 32 + lane;
    if (d < a.hd) anchor[d] = av[i];
  }
}

__global__ void __launch_bounds__(64) kv_similarity_wide_kernel(KvArgs a) {
  kernel_prologue();
  const int lane = threadIdx.x & 31, which = threadIdx.x >> 5;
  const int64_t g = blockIdx.x;
  const RowView x{which == 0 ? a.k.data : a.v.data, which == 0 ? a.k.nb1 : a.v.nb1, which == 0 ? a.k.nb2 : a.v.nb2};
  float* anchor = row_at(a.anchors.data, a.anchors.nb1, a.anchors.nb2, g, which);
  const float keep = 1.0f - a.decay;
  for (int64_t t = 0; t < a.n; ++t) {
    const float* xr = row_at(x.data, x.nb1, x.nb2, g, t);
    float dot = 0.0f, aa = 0.0f, xx = 0.0f;
    for (int d = lane; d < a.hd; d += 32) {
      dot += anchor[d] * xr[d];
      aa += anchor[d] * anchor[d];
      xx += xr[d] * xr[d];
    }
    dot = warp_sum(dot);
    aa = warp_sum(aa);
    xx = warp_sum(xx);
    if (lane == 0) row_at(a.dst.data, a.dst.nb1, a.dst.nb2, g, t)[which] = cosine(dot, aa, xx);
    for (int d = lane; d < a.hd; d += 32) anchor[d] = aa == 0.0f ? xr[d] : a.decay * anchor[d] + keep * xr[d];
  }
}

}  // namespace

size_t kv_similarity_workspace_bytes(const OpCall&) { return 0; }

Status kv_similarity(const OpCall& c, const Launch& l) {
  const KvSimilarityOp& s = c.get<KvSimilarityOp>();
  const Tensor& k = s.k;
  const int64_t n_head_kv = k.ne[1];
  if (n_head_kv <= 0) return Status::ok();
  KvArgs a{view_of(s.dst), view_of(k), view_of(s.v), view_of(s.anchors), static_cast<int>(k.ne[0]), k.ne[2], s.decay};
  if (a.hd <= 32 * kMaxPer) {
    return launch_kernel("kv_similarity_kernel", l, kv_similarity_kernel, static_cast<unsigned>(n_head_kv), 64, 0, a);
  }
  return launch_kernel("kv_similarity_wide_kernel", l, kv_similarity_wide_kernel, static_cast<unsigned>(n_head_kv), 64,
                       0, a);
}

}  // namespace wt::cuda
