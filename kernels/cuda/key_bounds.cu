// Quest's key bounds (cpu/key_bounds.cpp), three kernels.
//  key_bounds: one thread per (block, KV head, dim), the min and max of the block's keys in
//    that dim, rounded outward to f16 (kernels/f16_bound.h, the CPU's function); a min and a
//    max are exact, so the bounds are the CPU's bit for bit. The keys are a KV cache of f32,
//    f16 or q8_0 (kv_read.cuh), read as the CPU's f32 values; with key_ids, row r of the
//    blocks is row key_ids[r] (a pager's host tier, mapped pinned memory).
//  bound_scores, per head: one block (4 warps) per query head; the query row in shared
//    memory, each thread a block's upper bound at a time (four partial sums, not the CPU's
//    16-lane order: the parity test's tolerance covers it; the f16 bounds converted
//    exactly), then the head's log-softmax over the blocks into the
//    workspace [n_head][n_blocks].
//  bound_scores, per block: one thread per block, log sum_h exp of the heads' entries from
//    their largest, so a block far below every head's best keeps a finite score.
#include "key_bounds.cuh"

#include <cmath>

#include "kernels/f16_bound.h"
#include "kv_read.cuh"
#include "pdl.cuh"
#include "warp.cuh"

namespace wt::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;

struct KbArgs {
  RowView k;
  int hd;
  int64_t n_head_kv, n_rows, n_blocks, block;
  const int32_t* ids;  // null, or key row r is row ids[r] of k (device-visible: the ring)
  RowView dst;         // f16 [n_blocks][n_head_kv][2 hd]
};

template <typename Kv>
__global__ void __launch_bounds__(kThreads) key_bounds_kernel(KbArgs a) {
  kernel_prologue();
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= a.n_blocks * a.n_head_kv * a.hd) return;
  const int64_t d = e % a.hd, g = (e / a.hd) % a.n_head_kv, b = e / (a.hd * a.n_head_kv);
  const int64_t r0 = b * a.block, r1 = r0 + a.block < a.n_rows ? r0 + a.block : a.n_rows;
  // From +-infinity, as the CPU: a NaN key fails both comparisons and is skipped, also as
  // the block's first row (started from it, the bounds would stay NaN).
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t r = a.ids ? a.ids[i] : i;
    const float x = Kv::at(kv_row(a.k, g, r), static_cast<int>(d));
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  uint16_t* out = row_at<uint16_t>(a.dst.data, a.dst.nb1, a.dst.nb2, g, b);
  out[d] = f16_bound_bits(__float_as_uint(lo), /*up=*/false);
  out[a.hd + d] = f16_bound_bits(__float_as_uint(hi), /*up=*/true);
}

__global__ void __launch_bounds__(kThreads) bound_scores_head_kernel(RowView q, int64_t q_row, RowView bounds, int hd,
                                                                    int group, int64_t n_blocks, float scale,
                                                                    float* logp) {
  kernel_prologue();
  __shared__ float qs[kMaxHeadDim];
  const int64_t h = blockIdx.x, g = h / group;
  const float* qh = row_at(q.data, q.nb1, q.nb2, h, q_row);
  for (int d = threadIdx.x; d < hd; d += kThreads) qs[d] = qh[d];
  __syncthreads();
  float* u = logp + h * n_blocks;
  float top = -INFINITY;
  for (int64_t b = threadIdx.x; b < n_blocks; b += kThreads) {
    const __half* lo = row_at<__half>(bounds.data, bounds.nb1, bounds.nb2, g, b);
    const __half* hi = lo + hd;
    float s[4] = {};
    int d = 0;
    for (; d + 4 <= hd; d += 4)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        s[j] += fmaxf(qs[d + j] * __half2float(lo[d + j]), qs[d + j] * __half2float(hi[d + j]));
    for (; d < hd; ++d) s[0] += fmaxf(qs[d] * __half2float(lo[d]), qs[d] * __half2float(hi[d]));
    u[b] = scale * ((s[0] + s[1]) + (s[2] + s[3]));
    top = fmaxf(top, u[b]);
  }
  top = block_max(top);
  float sum = 0.0f;
  for (int64_t b = threadIdx.x; b < n_blocks; b += kThreads) sum += expf(u[b] - top);  // this thread's own entries
  const float lse = top + logf(block_sum(sum));
  for (int64_t b = threadIdx.x; b < n_blocks; b += kThreads) u[b] -= lse;
}

__global__ void __launch_bounds__(kThreads) bound_scores_sum_kernel(const float* logp, int64_t n_head, int64_t n_blocks,
                                                                   float* dst) {
  kernel_prologue();
  const int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (b >= n_blocks) return;
  float top = -INFINITY;
  for (int64_t h = 0; h < n_head; ++h) top = fmaxf(top, logp[h * n_blocks + b]);
  float sum = 0.0f;
  for (int64_t h = 0; h < n_head; ++h) sum += expf(logp[h * n_blocks + b] - top);
  dst[b] = top + logf(sum);
}

}  // namespace

size_t key_bounds_workspace_bytes(const OpCall&) { return 0; }

Status key_bounds(const OpCall& c, const Launch& l) {
  const KeyBoundsOp& kb = c.get<KeyBoundsOp>();
  KbArgs a{};
  a.k = view_of(kb.k);
  a.hd = static_cast<int>(kb.k.ne[0]);
  a.n_head_kv = kb.k.ne[1];
  a.n_rows = kb.key_count();
  a.ids = kb.key_ids;
  a.block = kb.block;
  a.n_blocks = (a.n_rows + a.block - 1) / a.block;
  a.dst = view_of(kb.dst);
  const int64_t n = a.n_blocks * a.n_head_kv * a.hd;
  if (n == 0) return Status::ok();
  return with_kv_reader(kb.k.type, "key_bounds", [&](auto kv) {
    return launch_kernel("key_bounds_kernel", l, key_bounds_kernel<decltype(kv)>,
                         static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, a);
  });
}

size_t bound_scores_workspace_bytes(const OpCall& c) {
  const BoundScoresOp& b = c.get<BoundScoresOp>();
  return sizeof(float) * static_cast<size_t>(b.q.ne[1] * b.dst.ne[0]);  // [n_head][n_blocks] log-softmax
}

Status bound_scores(const OpCall& c, const Launch& l) {
  const BoundScoresOp& bs = c.get<BoundScoresOp>();
  const int64_t hd = bs.q.ne[0], n_head = bs.q.ne[1], n_blocks = bs.dst.ne[0];
  if (hd > kMaxHeadDim) return error(WT_ERR_UNSUPPORTED, "cuda: bound_scores: head_dim must be <= 256");
  if (l.workspace_bytes < bound_scores_workspace_bytes(c))
    return error(WT_ERR_INTERNAL, "cuda: bound_scores: workspace too small");
  float* logp = static_cast<float*>(l.workspace);
  WT_TRY(launch_kernel("bound_scores_head_kernel", l, bound_scores_head_kernel, static_cast<unsigned>(n_head),
                       kThreads, 0, view_of(bs.q), bs.q.ne[2] - 1, view_of(bs.bounds), static_cast<int>(hd),
                       static_cast<int>(n_head / bs.bounds.ne[1]), n_blocks, bs.scale, logp));
  return launch_kernel("bound_scores_sum_kernel", l, bound_scores_sum_kernel,
                       static_cast<unsigned>((n_blocks + kThreads - 1) / kThreads), kThreads, 0,
                       static_cast<const float*>(logp), n_head, n_blocks, static_cast<float*>(bs.dst.data));
}

}  // namespace wt::cuda
