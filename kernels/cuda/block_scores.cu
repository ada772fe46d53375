// block_scores: SlimInfer block scores (cpu/block_scores.cpp), two kernels.
//  1. qbar[h][d] = mean of the last n_last rows of q: one thread per (head, dim), rows
//     summed in order then scaled by 1 / n_last, as the CPU.
//  2. one block (4 warps) per key block; its warps take the block's units round-robin. For
//     a unit, per KV head, each lane averages its dims of the unit's key rows (ukey in
//     registers), then each query head of the group adds |qbar_h . ukey| (a warp sum); the
//     unit's score is that total / n_head, the block's the max over units (warps' maxima
//     combined in shared memory).
// The keys are a KV cache of f32, f16 or q8_0 (kv_read.cuh), read as the CPU's f32 values.
#include "block_scores.cuh"

#include <cmath>

#include "kv_read.cuh"
#include "warp.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxPer = 8;  // head dims per lane: head_dim <= 256
constexpr int kMaxHeadDim = 32 * kMaxPer;

__global__ void __launch_bounds__(kThreads) block_scores_qbar_kernel(RowView q, int hd, int64_t n_head, int64_t n,
                                                                     int64_t n_last, float* qbar) {
  kernel_prologue();
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= n_head * hd) return;
  const int64_t h = e / hd, d = e - h * hd;
  float s = 0.0f;
  for (int64_t r = n - n_last; r < n; ++r) s += row_at(q.data, q.nb1, q.nb2, h, r)[d];
  qbar[e] = s * (1.0f / static_cast<float>(n_last));
}

struct BsArgs {
  RowView k;
  int hd;
  int group;
  int64_t n_head_kv;
  int64_t n_keys;
  int64_t block, unit;
  const int32_t* ids;  // key row r is ids[r] (or null)
  const float* qbar;   // [n_head][hd]
  float* dst;          // [n_blocks]
};

template <typename Kv>
__global__ void __launch_bounds__(kThreads) block_scores_kernel(BsArgs a) {
  kernel_prologue();
  __shared__ float best_of[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t b = blockIdx.x;
  const int64_t block_end = (b + 1) * a.block < a.n_keys ? (b + 1) * a.block : a.n_keys;
  const float inv_heads = 1.0f / static_cast<float>(a.n_head_kv * a.group);
  float best = 0.0f;  // scores are >= 0 and every block has a unit
  for (int64_t us = b * a.block + warp * a.unit; us < block_end; us += kWarps * a.unit) {
    const int64_t ue = us + a.unit < block_end ? us + a.unit : block_end;
    const float inv = 1.0f / static_cast<float>(ue - us);
    float score = 0.0f;
    for (int64_t g = 0; g < a.n_head_kv; ++g) {
      float uk[kMaxPer] = {};
      for (int64_t r = us; r < ue; ++r) {
        const char* kr = kv_row(a.k, g, a.ids ? a.ids[r] : r);
#pragma unroll
        for (int i = 0; i < kMaxPer; ++i) {
          const int d = i * 32 + lane;
          if (d < a.hd) uk[i] += Kv::at(kr, d);
        }
      }
#pragma unroll
      for (int i = 0; i < kMaxPer; ++i) uk[i] *= inv;
      for (int64_t h = 0; h < a.group; ++h) {
        const float* qb = a.qbar + (g * a.group + h) * a.hd;
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < kMaxPer; ++i) {
          const int d = i * 32 + lane;
          if (d < a.hd) dot += qb[d] * uk[i];
        }
        score += fabsf(warp_sum(dot));
      }
    }
    score *= inv_heads;
    best = score > best ? score : best;
  }
  if (lane == 0) best_of[warp] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = best_of[0];
    for (int w = 1; w < kWarps; ++w) m = best_of[w] > m ? best_of[w] : m;
    a.dst[b] = m;
  }
}

}  // namespace

size_t block_scores_workspace_bytes(const OpCall& c) {
  const BlockScoresOp& b = c.get<BlockScoresOp>();
  return sizeof(float) * static_cast<size_t>(b.q.ne[0] * b.q.ne[1]);  // qbar [n_head][hd]
}

Status block_scores(const OpCall& c, const Launch& l) {
  const BlockScoresOp& bs = c.get<BlockScoresOp>();
  const Tensor &dst = bs.dst, &q = bs.q, &k = bs.k;
  if (q.ne[0] > kMaxHeadDim) return error(WT_ERR_UNSUPPORTED, "cuda: block_scores: head_dim must be <= 256");
  const int64_t hd = q.ne[0], n_head = q.ne[1], n = q.ne[2];
  BsArgs a{};
  a.k = view_of(k);
  a.hd = static_cast<int>(hd);
  a.group = static_cast<int>(n_head / k.ne[1]);
  a.n_head_kv = k.ne[1];
  a.n_keys = bs.key_count();
  a.block = bs.block > 0 ? bs.block : 1;
  a.unit = bs.unit > 0 ? bs.unit : 1;
  a.ids = bs.key_ids;
  a.qbar = static_cast<const float*>(l.workspace);
  a.dst = static_cast<float*>(dst.data);
  const int64_t n_last = bs.query_rows > 0 && bs.query_rows <= n ? bs.query_rows : n;
  const int64_t n_blocks = a.n_keys > 0 ? (a.n_keys + a.block - 1) / a.block : 0;
  if (n_blocks == 0) return Status::ok();
  if (l.workspace_bytes < block_scores_workspace_bytes(c))
    return error(WT_ERR_INTERNAL, "cuda: block_scores: workspace too small");
  if (n_head * hd > 0) {
    WT_TRY(launch_kernel("block_scores_qbar_kernel", l, block_scores_qbar_kernel,
                         static_cast<unsigned>((n_head * hd + kThreads - 1) / kThreads), kThreads, 0, view_of(q), a.hd,
                         n_head, n, n_last, static_cast<float*>(l.workspace)));
  }
  return with_kv_reader(k.type, "block_scores", [&](auto kv) {
    return launch_kernel("block_scores_kernel", l, block_scores_kernel<decltype(kv)>, static_cast<unsigned>(n_blocks),
                         kThreads, 0, a);
  });
}

}  // namespace wt::cuda
