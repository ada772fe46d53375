// window_scores: the attention the last W queries pay to each key (cpu/window_scores.cpp).
//
// Softmax mode runs two kernels, as the CPU's two phases:
//  1. stats: the running max m and sum l of every (head, window query) over the keys it
//     sees, flash-style, into the workspace [chunk][n_head][W][2]. The keys are cut into
//     chunks (stats_chunks: a window of 32 queries is only 2 row tiles per KV head, so at 8k
//     keys one chunk left most SMs idle), each block one chunk of one row tile. A block (4
//     warps) owns up to 16 rows (query i, head h of KV head g's group), numbered
//     L = i * G + h and dealt to the warps round-robin; keys stream through shared memory
//     32 at a time, transposed and padded (kt[d][33]); lane j scores key j, the query in
//     registers broadcast by shuffles.
//  2. scores: a block per (head, 32 scored columns) loads those keys once; its warps take
//     the window queries round-robin, merge the query's chunk stats (lanes over chunks),
//     lane j scores column j and writes the normalized probability (per query) or adds it
//     to its sum, the warps' sums then added in shared memory. Raw mode is phase 2 alone
//     with q . k unscaled and unmasked.
// Scores are (q * scale) . k as on the CPU. The keys are a KV cache of f32, f16 or q8_0
// (kv_read.cuh; both kernels are templated on its reader).
#include "window_scores.cuh"

#include <cmath>
#include <string>

#include "kv_read.cuh"
#include "warp.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kSlots = 4;               // stats rows per warp
constexpr int kRows = kWarps * kSlots;  // stats rows per block
constexpr int kBK = 32;                 // keys per tile: one per lane
constexpr int kKtStride = kBK + 1;
constexpr int kMaxPer = 8;              // head dims per lane: head_dim <= 256
constexpr int kMaxHeadDim = 32 * kMaxPer;
constexpr int64_t kChunkKeys = 256;  // keys per stats chunk at least
constexpr int64_t kMaxChunks = 64;   // chunks at most (the merge: two per lane)
constexpr int64_t kChunkedRows = 4096;  // chunks x window at most: a full-prompt window has row tiles enough

// Stats chunks for n_keys keys and a window of w queries (1: phase 1 as one pass).
int64_t stats_chunks(int64_t n_keys, int64_t w) {
  int64_t c = (n_keys + kChunkKeys - 1) / kChunkKeys;
  if (c > kMaxChunks) c = kMaxChunks;
  if (w > 0 && c > kChunkedRows / w) c = kChunkedRows / w;
  return c < 1 ? 1 : c;
}

struct WsArgs {
  RowView dst, q, k;
  int hd;
  int group;
  int64_t w;        // window queries
  int64_t q_first;  // q row of window query 0
  int64_t i_vis;    // query i sees key rows 0..i_vis - w + i
  int64_t n_keys;
  int64_t n_cols;
  float scale;
  bool softmax;
  bool per_query;
  float* stats;  // [n_chunks][n_head][w][2]: max, sum of each chunk's keys
  int64_t n_chunks;
  int64_t chunk;  // keys per chunk
  int64_t n_head;
};

__device__ __forceinline__ int64_t last_key(const WsArgs& a, int64_t i) {
  const int64_t j = a.i_vis - a.w + i;
  return j < a.n_keys - 1 ? j : a.n_keys - 1;
}

// kt[d][jj] = k row j0 + jj of KV head g, zero past nk keys and past hd.
template <typename Kv>
__device__ __forceinline__ void load_keys(const WsArgs& a, int64_t g, int64_t j0, int nk, int hdp, float* kt) {
  for (int e = threadIdx.x; e < kBK * hdp; e += kThreads) {
    const int jj = e / hdp, d = e - jj * hdp;
    kt[d * kKtStride + jj] = jj < nk && d < a.hd ? Kv::at(kv_row(a.k, g, j0 + jj), d) : 0.0f;
  }
}

// Phase 1. Grid: (row tiles of G * W rows, n_head_kv, chunks).
template <typename Kv>
__global__ void __launch_bounds__(kThreads) window_scores_stats_kernel(WsArgs a) {
  kernel_prologue();
  extern __shared__ float kt[];  // [hdp][kKtStride]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t g = blockIdx.y, group = a.group;
  const int hdp = (a.hd + 31) & ~31, nper = hdp / 32;
  const int64_t n_rows = a.w * group;
  const int64_t row_base = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t last = (row_base + kRows < n_rows ? row_base + kRows : n_rows) - 1;
  const int64_t ja = static_cast<int64_t>(blockIdx.z) * a.chunk;
  int64_t jb = last_key(a, last / group) + 1;
  if (jb > ja + a.chunk) jb = ja + a.chunk;

  bool active[kSlots];
  int64_t head[kSlots], lk[kSlots];
  float qr[kSlots][kMaxPer], m[kSlots], lsum[kSlots];
  int64_t warp_last = -1;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int64_t L = row_base + s * kWarps + warp, i = L / group;
    active[s] = L < n_rows;
    head[s] = g * group + L % group;
    lk[s] = active[s] ? last_key(a, i) : -1;
    if (lk[s] > warp_last) warp_last = lk[s];
    const float* q = active[s] ? row_at(a.q.data, a.q.nb1, a.q.nb2, head[s], a.q_first + i) : nullptr;
#pragma unroll
    for (int ii = 0; ii < kMaxPer; ++ii) {
      const int d = ii * 32 + lane;
      qr[s][ii] = active[s] && d < a.hd ? q[d] * a.scale : 0.0f;
    }
    m[s] = -1e30f;  // finite, so exp(m_old - m_new) is defined on the first tile
    lsum[s] = 0.0f;
  }

  for (int64_t j0 = ja; j0 < jb; j0 += kBK) {
    const int nk = jb - j0 < kBK ? static_cast<int>(jb - j0) : kBK;
    __syncthreads();  // the previous tile is consumed
    load_keys<Kv>(a, g, j0, nk, hdp, kt);
    __syncthreads();
    if (warp_last < j0) continue;  // warp-uniform
    float sc[kSlots] = {};
#pragma unroll
    for (int ii = 0; ii < kMaxPer; ++ii) {
      if (ii >= nper) break;
#pragma unroll
      for (int dd = 0; dd < 32; ++dd) {
        const float kv = kt[(ii * 32 + dd) * kKtStride + lane];
#pragma unroll
        for (int s = 0; s < kSlots; ++s) sc[s] += __shfl_sync(kFullMask, qr[s][ii], dd) * kv;
      }
    }
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (lk[s] < j0) continue;  // warp-uniform; inactive rows have lk = -1
      const bool valid = lane < nk && j0 + lane <= lk[s];
      const float m_new = fmaxf(m[s], warp_max(valid ? sc[s] : -INFINITY));
      const float p = valid ? expf(sc[s] - m_new) : 0.0f;
      lsum[s] = lsum[s] * expf(m[s] - m_new) + warp_sum(p);
      m[s] = m_new;
    }
  }

  if (lane == 0) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (!active[s]) continue;
      const int64_t i = (row_base + s * kWarps + warp) / group;
      float* st = a.stats + ((static_cast<int64_t>(blockIdx.z) * a.n_head + head[s]) * a.w + i) * 2;
      st[0] = m[s];
      st[1] = lsum[s];
    }
  }
}

// Phase 2. Grid: (column tiles of 32, n_head).
template <typename Kv>
__global__ void __launch_bounds__(kThreads) window_scores_kernel(WsArgs a) {
  kernel_prologue();
  extern __shared__ float kt[];  // [hdp][kKtStride], then the warps' sums [kWarps][32]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t head = blockIdx.y, g = head / a.group;
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kBK, j = j0 + lane;
  const int hdp = (a.hd + 31) & ~31, nper = hdp / 32;
  const int nk = a.n_cols - j0 < kBK ? static_cast<int>(a.n_cols - j0) : kBK;
  float* sums = kt + hdp * kKtStride;
  load_keys<Kv>(a, g, j0, nk, hdp, kt);
  __syncthreads();

  const float scale = a.softmax ? a.scale : 1.0f;
  float acc = 0.0f;
  for (int64_t i = warp; i < a.w; i += kWarps) {
    const float* q = row_at(a.q.data, a.q.nb1, a.q.nb2, head, a.q_first + i);
    float qr[kMaxPer];
#pragma unroll
    for (int ii = 0; ii < kMaxPer; ++ii) {
      const int d = ii * 32 + lane;
      qr[ii] = d < a.hd ? q[d] * scale : 0.0f;
    }
    float s = 0.0f;
#pragma unroll
    for (int ii = 0; ii < kMaxPer; ++ii) {
      if (ii >= nper) break;
#pragma unroll
      for (int dd = 0; dd < 32; ++dd) s += __shfl_sync(kFullMask, qr[ii], dd) * kt[(ii * 32 + dd) * kKtStride + lane];
    }
    if (a.softmax) {
      // The chunks' (max, sum) of this query, merged: lane c takes chunks c and c + 32.
      float cm[2], cl[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t c = lane + 32 * h;
        const float* st = a.stats + ((c * a.n_head + head) * a.w + i) * 2;
        cm[h] = c < a.n_chunks ? st[0] : -INFINITY;
        cl[h] = c < a.n_chunks ? st[1] : 0.0f;
      }
      const float m = warp_max(fmaxf(cm[0], cm[1]));
      const float l = warp_sum((cl[0] > 0.0f ? cl[0] * expf(cm[0] - m) : 0.0f) + (cl[1] > 0.0f ? cl[1] * expf(cm[1] - m) : 0.0f));
      // A visible column implies l >= 1 (the max term is exp(0)).
      s = j <= last_key(a, i) ? expf(s - m) * (1.0f / l) : 0.0f;
    }
    if (a.per_query) {
      if (lane < nk) row_at(a.dst.data, a.dst.nb1, a.dst.nb2, head, i)[j] = s;
    } else {
      acc += s;
    }
  }
  if (a.per_query) return;  // block-uniform
  sums[warp * 32 + lane] = acc;
  __syncthreads();
  if (warp == 0 && lane < nk) {
    float total = 0.0f;
    for (int w = 0; w < kWarps; ++w) total += sums[w * 32 + lane];
    row_at(a.dst.data, a.dst.nb1, a.dst.nb2, head, 0)[j] = total;
  }
}

int64_t window_of(const WindowScoresOp& ws) {
  const int64_t n = ws.q.ne[2];
  return ws.window < n ? (ws.window > 0 ? ws.window : 0) : n;
}

}  // namespace

size_t window_scores_workspace_bytes(const OpCall& c) {
  // The stats of softmax mode; reserved in raw mode too (a sizing call may not ask for
  // softmax), and for all of q's rows when the window is unset, as the CPU does.
  const WindowScoresOp& ws = c.get<WindowScoresOp>();
  const int64_t rows = ws.q.ne[2] > 0 ? ws.q.ne[2] : 0;
  const int64_t w = ws.window > 0 && ws.window < rows ? ws.window : rows;
  const int64_t keys = ws.k.ne[2] > 0 ? ws.k.ne[2] : 0;
  return sizeof(float) * 2 * static_cast<size_t>(stats_chunks(keys, w) * ws.q.ne[1] * w);
}

namespace {

template <typename Kv>
Status launch_window_scores(const WindowScoresOp& ws, const Launch& l) {
  const Tensor &dst = ws.dst, &q = ws.q, &k = ws.k;
  if (q.ne[0] > kMaxHeadDim) return error(WT_ERR_UNSUPPORTED, "cuda: window_scores: head_dim must be <= 256");

  WsArgs a{};
  a.dst = view_of(dst);
  a.q = view_of(q);
  a.k = view_of(k);
  a.hd = static_cast<int>(q.ne[0]);
  a.group = static_cast<int>(q.ne[1] / k.ne[1]);
  a.n_keys = k.ne[2];
  a.n_cols = dst.ne[0] < a.n_keys ? dst.ne[0] : a.n_keys;
  a.w = window_of(ws);
  a.q_first = q.ne[2] - a.w;
  a.i_vis = ws.n_visible > 0 ? ws.n_visible : a.n_keys;
  a.scale = ws.scale;
  a.softmax = ws.softmax;
  a.per_query = ws.per_query;
  a.stats = static_cast<float*>(l.workspace);
  const int64_t n_head = q.ne[1], n_head_kv = k.ne[1];
  if (n_head <= 0) return Status::ok();
  const size_t kt_bytes = sizeof(float) * static_cast<size_t>((a.hd + 31) / 32 * 32) * kKtStride;

  a.n_head = n_head;
  a.n_chunks = 1;
  a.chunk = a.n_keys;
  if (a.softmax && a.w > 0) {
    const size_t per_chunk = sizeof(float) * 2 * static_cast<size_t>(n_head * a.w);
    if (l.workspace_bytes < per_chunk) return error(WT_ERR_INTERNAL, "cuda: window_scores: workspace too small");
    // As many chunks as this call's keys want and the workspace holds (it was sized for the
    // cache, whose chunks are at least this call's, unless the window differs).
    a.n_chunks = stats_chunks(a.n_keys, a.w);
    if (static_cast<size_t>(a.n_chunks) > l.workspace_bytes / per_chunk)
      a.n_chunks = static_cast<int64_t>(l.workspace_bytes / per_chunk);
    a.chunk = (a.n_keys + a.n_chunks - 1) / a.n_chunks;
    a.chunk = (a.chunk + kBK - 1) / kBK * kBK;  // whole key tiles
    const int64_t tiles = (a.w * a.group + kRows - 1) / kRows;
    WT_TRY(launch_kernel(
        "window_scores_stats_kernel", l, window_scores_stats_kernel<Kv>,
        dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(n_head_kv), static_cast<unsigned>(a.n_chunks)),
        kThreads, kt_bytes, a));
  }
  if (a.n_cols <= 0) return Status::ok();
  const size_t smem = kt_bytes + sizeof(float) * kWarps * 32;
  if (smem > l.max_shared_per_block)
    return error(WT_ERR_UNSUPPORTED, "cuda: window_scores: head_dim needs more shared memory than a block has");
  const int64_t col_tiles = (a.n_cols + kBK - 1) / kBK;
  return launch_kernel("window_scores_kernel", l, window_scores_kernel<Kv>,
                       dim3(static_cast<unsigned>(col_tiles), static_cast<unsigned>(n_head)), kThreads, smem, a);
}

}  // namespace

Status window_scores(const OpCall& c, const Launch& l) {
  const WindowScoresOp& ws = c.get<WindowScoresOp>();
  return with_kv_reader(ws.k.type, "window_scores", [&](auto kv) { return launch_window_scores<decltype(kv)>(ws, l); });
}

}  // namespace wt::cuda
