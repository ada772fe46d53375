// attention_prefill: causal GQA attention, flash-style (the design of cpu/attention_impl.h on
// a GPU). attention_decode is attention_decode.cu.
//
// A block (4 warps) owns up to 16 query rows of one KV head g: the rows are (position,
// head of g's group) pairs numbered L = t * G + h, dealt to the warps round-robin (row L of
// the tile goes to warp L % 4, slot L / 4), so every row of a block reads the same keys.
// Keys stream through shared memory 32 at a time, transposed (kt[d][key], padded to 33
// columns: conflict-free both when a warp writes a key row and when lane j reads key j).
// Lane j scores key j for the warp's rows, the query held in registers (lane l keeps dims
// l, l + 32, ...) and broadcast by shuffles; each row keeps a running max m, sum l and its
// accumulator (online softmax), scores (q * scale) . k as the CPU does. V rows are read from
// global memory (L1), once per warp for all its rows. The cache's rows are f32, f16 or q8_0
// (kv_read.cuh: the kernel is templated on the reader; every value is f32 once loaded).
//
// Prefill: the grid is (row tiles, n_head_kv), the last (longest) tiles first. Row t sits
// at position pos0 + t and sees keys 0..pos0 + t; with a sliding window (Gemma 3) only the
// last `window` of them: a tile reads keys from its first row's window on, each row masks
// the keys before its own (tensor cores take no window: such calls run here). With skip flags (skip_rows) a first kernel
// packs the kept rows into the workspace ([0] = count, then the rows), the tiles run over
// kept rows only, and each block also zeroes the flagged rows of its stretch of all rows.
#include "attention.cuh"

#include <cmath>
#include <string>

#include "attention_mma.cuh"
#include "attention_rows.cuh"
#include "kv_read.cuh"
#include "tensor_core_paths.h"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kSlots = 4;                    // rows per warp
constexpr int kRows = kWarps * kSlots;       // rows per block
constexpr int kBK = 32;                      // keys per tile: one per lane
constexpr int kKtStride = kBK + 1;
constexpr int kMaxPer = 8;                   // head dims per lane
constexpr int kMaxHeadDim = 32 * kMaxPer;    // 256

// Packs the rows whose flag is 0 (ascending) into kept[1..], their count into kept[0].
// One block of 1024 threads walks the flags a chunk at a time.
__global__ void __launch_bounds__(1024) attention_pack_rows_kernel(const int32_t* skip, int64_t n, int32_t* kept) {
  kernel_prologue();
  __shared__ int warp_counts[32];
  __shared__ int base;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, n_warps = blockDim.x >> 5;
  if (tid == 0) base = 0;
  __syncthreads();
  for (int64_t c0 = 0; c0 < n; c0 += blockDim.x) {
    const int64_t i = c0 + tid;
    const bool keep = i < n && skip[i] == 0;
    const unsigned mask = __ballot_sync(kFullMask, keep);
    if (lane == 0) warp_counts[warp] = __popc(mask);
    __syncthreads();
    int off = base;
    for (int w = 0; w < warp; ++w) off += warp_counts[w];
    if (keep) kept[1 + off + __popc(mask & ((1u << lane) - 1u))] = static_cast<int32_t>(i);
    __syncthreads();
    if (tid == 0)
      for (int w = 0; w < n_warps; ++w) base += warp_counts[w];
    __syncthreads();
  }
  if (tid == 0) kept[0] = base;
}

template <typename Kv>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttnArgs a) {
  kernel_prologue();
  extern __shared__ float kt[];  // [hdp][kKtStride]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t g = blockIdx.y;
  const int hd = a.hd, hdp = (hd + 31) & ~31, nper = hdp / 32;
  const int64_t group = a.group;

  const int64_t row_base = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRows;  // long tiles first
  zero_skipped_rows(a, g, row_base, kRows);
  const int64_t n_rows = prefill_rows(a);
  if (row_base >= n_rows) return;  // block-uniform
  const int64_t last = (row_base + kRows < n_rows ? row_base + kRows : n_rows) - 1;
  const int64_t first_row_key = a.pos0 + prefill_row_t(a, row_base) - a.window + 1;
  const int64_t ja = a.window > 0 && first_row_key > 0 ? first_row_key : 0;
  const int64_t jb = a.pos0 + prefill_row_t(a, last) + 1;

  // This warp's rows: query registers (pre-scaled), last visible key, output state.
  bool active[kSlots];
  int64_t head[kSlots], qrow[kSlots], last_key[kSlots], first_key[kSlots];
  float qr[kSlots][kMaxPer], acc[kSlots][kMaxPer], m[kSlots], lsum[kSlots];
  int64_t warp_last = -1;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int64_t L = row_base + s * kWarps + warp;
    active[s] = L < n_rows;
    const int64_t t = active[s] ? prefill_row_t(a, L) : 0;
    head[s] = g * group + L % group;
    qrow[s] = t;
    last_key[s] = a.pos0 + t;
    first_key[s] = a.window > 0 ? last_key[s] - a.window + 1 : 0;
    if (active[s] && last_key[s] > warp_last) warp_last = last_key[s];
    const float* q = active[s] ? row_at(a.q.data, a.q.nb1, a.q.nb2, head[s], qrow[s]) : nullptr;
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      const int d = i * 32 + lane;
      qr[s][i] = active[s] && d < hd ? q[d] * a.scale : 0.0f;
      acc[s][i] = 0.0f;
    }
    m[s] = -1e30f;  // finite, so exp(m_old - m_new) is defined on the first tile
    lsum[s] = 0.0f;
  }

  for (int64_t j0 = ja; j0 < jb; j0 += kBK) {
    const int nk = jb - j0 < kBK ? static_cast<int>(jb - j0) : kBK;
    __syncthreads();  // the previous tile is consumed
    for (int e = threadIdx.x; e < kBK * hdp; e += kThreads) {
      const int jj = e / hdp, d = e - jj * hdp;
      float x = 0.0f;
      if (jj < nk && d < hd) x = Kv::at(kv_row(a.k, g, j0 + jj), d);
      kt[d * kKtStride + jj] = x;
    }
    __syncthreads();
    if (warp_last < j0) continue;  // no row of this warp sees the tile (warp-uniform)

    float sc[kSlots];
#pragma unroll
    for (int s = 0; s < kSlots; ++s) sc[s] = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      if (i >= nper) break;
#pragma unroll
      for (int dd = 0; dd < 32; ++dd) {
        const float kv = kt[(i * 32 + dd) * kKtStride + lane];
#pragma unroll
        for (int s = 0; s < kSlots; ++s) sc[s] += __shfl_sync(kFullMask, qr[s][i], dd) * kv;
      }
    }

    float p[kSlots];
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      p[s] = 0.0f;
      if (!active[s] || last_key[s] < j0) continue;  // warp-uniform
      const bool valid = lane < nk && j0 + lane <= last_key[s] && j0 + lane >= first_key[s];
      const float m_new = fmaxf(m[s], warp_max(valid ? sc[s] : -INFINITY));
      const float alpha = expf(m[s] - m_new);
      p[s] = valid ? expf(sc[s] - m_new) : 0.0f;
      lsum[s] = lsum[s] * alpha + warp_sum(p[s]);
      m[s] = m_new;
#pragma unroll
      for (int i = 0; i < kMaxPer; ++i) acc[s][i] *= alpha;
    }

    // Keys of the tile some row of the warp sees; the others have p = 0.
    const int nv = warp_last - j0 + 1 < nk ? static_cast<int>(warp_last - j0 + 1) : nk;
    for (int jj = 0; jj < nv; ++jj) {
      const char* vr = kv_row(a.v, g, j0 + jj);
      float vv[kMaxPer];
#pragma unroll
      for (int i = 0; i < kMaxPer; ++i) {
        const int d = i * 32 + lane;
        vv[i] = i < nper && d < hd ? Kv::at(vr, d) : 0.0f;
      }
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const float pj = __shfl_sync(kFullMask, p[s], jj);
#pragma unroll
        for (int i = 0; i < kMaxPer; ++i) acc[s][i] += pj * vv[i];
      }
    }
  }

#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    if (!active[s]) continue;
    float* out = row_at(a.dst.data, a.dst.nb1, a.dst.nb2, head[s], qrow[s]);
    const float inv = 1.0f / lsum[s];
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      const int d = i * 32 + lane;
      if (d < hd) out[d] = acc[s][i] * inv;
    }
  }
}

// What this backend cannot run (validate_op has checked the rest: types, matching head_dim,
// n_head a multiple of n_head_kv).
Status check_head_dim(const Tensor& q, const char* op) {
  if (q.ne[0] > kMaxHeadDim)
    return error(WT_ERR_UNSUPPORTED, std::string("cuda: ") + op + ": head_dim must be <= 256");
  return Status::ok();
}

template <typename Attention>
AttnArgs base_args(const Attention& op) {
  AttnArgs a{};
  a.dst = view_of(op.dst);
  a.q = view_of(op.q);
  a.k = view_of(op.k);
  a.v = view_of(op.v);
  a.hd = static_cast<int>(op.q.ne[0]);
  a.group = static_cast<int>(op.q.ne[1] / op.k.ne[1]);
  a.scale = op.scale;
  return a;
}

size_t kt_bytes(int hd) { return sizeof(float) * static_cast<size_t>((hd + 31) / 32 * 32) * kKtStride; }

// The decode partials a cache of this call's rows needs (attention_decode.cu): the engine
// sizes one workspace from a prefill call for both ops.
size_t prefill_decode_bytes(const AttentionPrefillOp& op) {
  const int64_t keys = static_cast<int64_t>(op.pos0) + op.q.ne[2];  // what the last query row sees
  return decode_partial_bytes(keys > op.k.ne[2] ? keys : op.k.ne[2], op.q.ne[1], op.q.ne[0]);
}

// The packed kept rows for skip flags: one int per query row and the count.
size_t prefill_kept_bytes(const AttentionPrefillOp& op) {
  const int64_t n = op.q.ne[2] > 0 ? op.q.ne[2] : 0;
  return sizeof(int32_t) * static_cast<size_t>(n + 1);
}

}  // namespace

size_t attention_prefill_workspace_bytes(const OpCall& c) {
  // The kept rows, reserved with or without skip flags (a sizing call may leave them unset).
  // The engine sizes its workspace from an attention_prefill call only (the CPU's
  // attention_workspace_bytes serves both ops), so this also covers the decode partials
  // over the same cache.
  const AttentionPrefillOp& p = c.get<AttentionPrefillOp>();
  const size_t kept = prefill_kept_bytes(p), decode = prefill_decode_bytes(p);
  return kept > decode ? kept : decode;
}

Status attention_prefill(const OpCall& c, const Launch& l) {
  const AttentionPrefillOp& p = c.get<AttentionPrefillOp>();
  WT_TRY(check_head_dim(p.q, "attention_prefill"));
  const int64_t n = p.q.ne[2], n_head_kv = p.k.ne[1];
  if (n <= 0) return Status::ok();
  AttnArgs a = base_args(p);
  a.n = n;
  a.pos0 = p.pos0;
  a.window = p.window;
  if (p.skip_rows) {
    if (l.workspace_bytes < prefill_kept_bytes(p))
      return error(WT_ERR_INTERNAL, "cuda: attention_prefill: workspace too small for the skip flags");
    a.ids = p.skip_rows;
    a.kept = static_cast<const int32_t*>(l.workspace);
    WT_TRY(launch_kernel("attention_pack_rows_kernel", l, attention_pack_rows_kernel, 1, 1024, 0, p.skip_rows, n,
                         static_cast<int32_t*>(l.workspace)));
  }
  if (!p.f32_inputs && p.window == 0 && prefill_on_tensor_cores(l.cc_major, a.hd, n))
    return attention_prefill_mma(a, p.k.type, n_head_kv, l);
  const int64_t tiles = (n * a.group + kRows - 1) / kRows;
  const size_t smem = kt_bytes(a.hd);
  if (smem > l.max_shared_per_block)
    return error(WT_ERR_UNSUPPORTED, "cuda: attention_prefill: head_dim needs more shared memory than a block has");
  return with_kv_reader(p.k.type, "attention_prefill", [&](auto kv) {
    return launch_kernel("attention_kernel<prefill>", l, attention_kernel<decltype(kv)>,
                         dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(n_head_kv)), kThreads, smem, a);
  });
}

}  // namespace wt::cuda
