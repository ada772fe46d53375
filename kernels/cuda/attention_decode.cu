// attention_decode: one query row over the KV (0..pos0, a sliding window's last keys of them,
// or the key rows a policy or the pager passes), flash-decoding style. decode_split.h cuts the keys into splits so that the grid
// (splits, n_head_kv, head tiles) fills the GPU; a block takes one split for up to
// kDecodeHeads query heads of one KV head's group, so each K and V row it loads serves all
// those heads. Per tile of kTile keys:
//   1. scores: `lpk` lanes share a key row (4 values per load where the rows allow it,
//      each lane `kPer` dims), dot it with the block's pre-scaled queries (shared memory) and
//      reduce by shuffles; the scores of the tile land in shared memory;
//   2. one warp per head updates its running max and sum (online softmax) and turns the
//      tile's scores into weights;
//   3. the same lanes read the V rows and add weight x value to registers, rescaled first by
//      exp(old max - new max).
// The block's partial (max, sum, weighted values) per head goes to the workspace, and a
// merge kernel (one block per head) combines the splits. Rows of a key list are read through
// a copy of the tile's indices in shared memory (the list itself lives in mapped host memory).
// The cache is f32, f16 or q8_0 (kv_read.cuh), converted to the f32 the CPU computes with;
// f32 and f16 rows are read 4 values per load where aligned, q8_0 rows a value at a time.
#include <cmath>
#include <string>

#include "attention.cuh"
#include "decode_split.h"
#include "kv_read.cuh"
#include "warp.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 64;          // keys per tile (shared scores: kDecodeHeads x kTile floats)
constexpr int kMaxHeadDim = 256;
constexpr int kMergeThreads = 256;  // the merge: one block per head, its splits spread over the threads
constexpr int kMergeWarps = kMergeThreads / 32;

struct DecodeArgs {
  RowView dst, q, k, v;
  int hd;
  int group;            // G = n_head / n_head_kv
  int lpk;              // lanes per key row: a power of two, <= 32
  float scale;
  const int32_t* ids;   // key rows [n_keys], or null: keys key0..key0 + n_keys - 1
  int64_t n_keys;
  int64_t key0;         // a sliding window's first key (Gemma 3), else 0
  int64_t per_split;
  int n_splits;
  int n_head;
  float* partial;       // [n_splits][n_head][hd + 2]: max, sum, then hd weighted values
};

// A lane's dims: chunk c of `kVec` values at (c * lpk + sub) * kVec.
template <typename Kv, int kVec, int kPer>
__device__ __forceinline__ void load_row(const char* row, int hd, int lpk, int sub, float (&out)[kPer]) {
  static_assert(kVec == 1 || Kv::kVec4, "4-value loads of a type that has them");
#pragma unroll
  for (int c = 0; c < kPer / kVec; ++c) {
    const int d = (c * lpk + sub) * kVec;
    if constexpr (kVec == 4) {
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (d < hd) x = Kv::load4(row, d);  // hd % 4 == 0: the whole group is in the row
      out[c * 4 + 0] = x.x;
      out[c * 4 + 1] = x.y;
      out[c * 4 + 2] = x.z;
      out[c * 4 + 3] = x.w;
    } else {
      out[c] = d < hd ? Kv::at(row, d) : 0.0f;
    }
  }
}

template <int kVec>
__device__ __forceinline__ int dim_of(int i, int lpk, int sub) {
  return ((i / kVec) * lpk + sub) * kVec + i % kVec;
}

// grid (n_splits, n_head_kv, head tiles), kThreads threads; kH heads per block (4 when the
// group has at most 4, else kDecodeHeads). Shared memory: queries [kH][hdp], scores
// [kH][kTile], running max / sum / rescale per head, the cross-warp sums [kWarps][kH][hdp],
// the tile's key rows [kTile].
template <typename Kv, int kVec, int kPer, int kH>
__global__ void __launch_bounds__(kThreads) attention_decode_kernel(DecodeArgs a) {
  kernel_prologue();
  extern __shared__ float smem[];
  const int hd = a.hd, lpk = a.lpk, hdp = lpk * kPer;
  float* qs = smem;                               // [kH][hdp]
  float* sc = qs + kH * hdp;            // [kH][kTile]
  float* m_run = sc + kH * kTile;       // [kH]
  float* l_run = m_run + kH;
  float* alpha = l_run + kH;
  float* red = alpha + kH;              // [kWarps][kH][hdp]
  int* rows = reinterpret_cast<int*>(red + kWarps * kH * hdp);  // [kTile]

  constexpr int kU = 16 / kPer;  // key rows per slot in flight at once (16 registers of them)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int slot = tid / lpk, sub = tid % lpk, n_slots = kThreads / lpk;
  const int64_t g = blockIdx.y;
  const int h0 = static_cast<int>(blockIdx.z) * kH;
  const int nh = a.group - h0 < kH ? a.group - h0 : kH;
  const int split = blockIdx.x;
  const int64_t ja = split * a.per_split;
  const int64_t jb = ja + a.per_split < a.n_keys ? ja + a.per_split : a.n_keys;

  for (int e = tid; e < kH * hdp; e += kThreads) {
    const int h = e / hdp, d = e - h * hdp;
    qs[e] = h < nh && d < hd ? row_at(a.q.data, a.q.nb1, a.q.nb2, g * a.group + h0 + h, 0)[d] * a.scale : 0.0f;
  }
  if (tid < kH) {
    m_run[tid] = -1e30f;  // finite, so exp(m_old - m_new) is defined on the first tile
    l_run[tid] = 0.0f;
  }
  float acc[kH][kPer];
#pragma unroll
  for (int h = 0; h < kH; ++h)
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[h][i] = 0.0f;

  for (int64_t t0 = ja; t0 < jb; t0 += kTile) {
    const int nk = jb - t0 < kTile ? static_cast<int>(jb - t0) : kTile;
    for (int jj = tid; jj < nk; jj += kThreads) rows[jj] = a.ids ? a.ids[t0 + jj] : static_cast<int>(a.key0 + t0 + jj);
    __syncthreads();  // rows, queries and (first tile) the running stats are in place

    // 1. Scores of the tile, kU key rows per slot loaded before any is used (the loads of a
    // block are then in flight together: decode is latency-bound, not bandwidth-bound).
    // The loop is uniform over the block (slots past nk load zeros): the shuffles need every lane.
    for (int j0 = 0; j0 < nk; j0 += n_slots * kU) {
      float kv[kU][kPer];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int jj = j0 + u * n_slots + slot;
        if (jj < nk) {
          load_row<Kv, kVec, kPer>(kv_row(a.k, g, rows[jj]), hd, lpk, sub, kv[u]);
        } else {
#pragma unroll
          for (int i = 0; i < kPer; ++i) kv[u][i] = 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int jj = j0 + u * n_slots + slot;
        float dot[kH];
#pragma unroll
        for (int h = 0; h < kH; ++h) {
          float s = 0.0f;
#pragma unroll
          for (int i = 0; i < kPer; ++i) s += qs[h * hdp + dim_of<kVec>(i, lpk, sub)] * kv[u][i];
          dot[h] = s;
        }
#pragma unroll
        for (int h = 0; h < kH; ++h)
          for (int off = lpk >> 1; off > 0; off >>= 1) dot[h] += __shfl_xor_sync(kFullMask, dot[h], off);
        if (sub == 0 && jj < nk)
#pragma unroll
          for (int h = 0; h < kH; ++h)
            if (h < nh) sc[h * kTile + jj] = dot[h];
      }
    }
    __syncthreads();

    // 2. Online softmax: weights of the tile, rescale of what came before.
    for (int h = warp; h < nh; h += kWarps) {
      float mx = -INFINITY;
      for (int jj = lane; jj < nk; jj += 32) mx = fmaxf(mx, sc[h * kTile + jj]);
      const float m_new = fmaxf(m_run[h], warp_max(mx));
      float sum = 0.0f;
      for (int jj = lane; jj < nk; jj += 32) {
        const float p = expf(sc[h * kTile + jj] - m_new);
        sc[h * kTile + jj] = p;
        sum += p;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float r = expf(m_run[h] - m_new);
        alpha[h] = r;
        l_run[h] = l_run[h] * r + sum;
        m_run[h] = m_new;
      }
    }
    __syncthreads();

    // 3. Weighted values.
#pragma unroll
    for (int h = 0; h < kH; ++h) {
      const float r = h < nh ? alpha[h] : 0.0f;
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[h][i] *= r;
    }
    for (int j0 = 0; j0 < nk; j0 += n_slots * kU) {
      float vv[kU][kPer];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int jj = j0 + u * n_slots + slot;
        if (jj < nk) {
          load_row<Kv, kVec, kPer>(kv_row(a.v, g, rows[jj]), hd, lpk, sub, vv[u]);
        } else {
#pragma unroll
          for (int i = 0; i < kPer; ++i) vv[u][i] = 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int jj = j0 + u * n_slots + slot;
#pragma unroll
        for (int h = 0; h < kH; ++h) {
          const float p = h < nh && jj < nk ? sc[h * kTile + jj] : 0.0f;
#pragma unroll
          for (int i = 0; i < kPer; ++i) acc[h][i] += p * vv[u][i];
        }
      }
    }
    __syncthreads();  // the next tile overwrites rows and scores
  }

  // Sum the slots: first the slots of a warp (lanes lpk apart), then the warps in shared memory.
#pragma unroll
  for (int h = 0; h < kH; ++h)
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      for (int off = 16; off >= lpk; off >>= 1) acc[h][i] += __shfl_xor_sync(kFullMask, acc[h][i], off);
  if (lane < lpk) {
#pragma unroll
    for (int h = 0; h < kH; ++h)
#pragma unroll
      for (int i = 0; i < kPer; ++i) red[(warp * kH + h) * hdp + dim_of<kVec>(i, lpk, sub)] = acc[h][i];
  }
  __syncthreads();
  const int stride = hd + 2;
  for (int e = tid; e < nh * hd; e += kThreads) {
    const int h = e / hd, d = e - h * hd;
    float s = 0.0f;
    for (int w = 0; w < kWarps; ++w) s += red[(w * kH + h) * hdp + d];
    a.partial[(static_cast<int64_t>(split) * a.n_head + g * a.group + h0 + h) * stride + 2 + d] = s;
  }
  if (tid < nh) {
    float* p = a.partial + (static_cast<int64_t>(split) * a.n_head + g * a.group + h0 + tid) * stride;
    p[0] = m_run[tid];
    p[1] = l_run[tid];
  }
}

// One block per head: the splits' partials combined (no splits: the output is 0). Every
// split's max and sum are read at once (a split's weight exp(max - global max) goes to shared
// memory); then thread groups take every groups-th split for a dim each, unrolled so that
// many loads are in flight, and the groups' sums meet in shared memory.
__global__ void __launch_bounds__(kMergeThreads) attention_decode_merge_kernel(DecodeArgs a) {
  kernel_prologue();
  __shared__ float weight[kDecodeMaxSplits];
  __shared__ float part[kMergeThreads];
  __shared__ float red[kMergeWarps];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int head = blockIdx.x;
  const int hd = a.hd, n_splits = a.n_splits;
  const int64_t stride = hd + 2;
  const float* base = a.partial + head * stride;
  const int64_t split_stride = static_cast<int64_t>(a.n_head) * stride;

  float m = -1e30f;
  for (int s = tid; s < n_splits; s += kMergeThreads) m = fmaxf(m, base[s * split_stride]);
  m = warp_max(m);
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
#pragma unroll
  for (int w = 1; w < kMergeWarps; ++w) m = fmaxf(m, red[w]);
  __syncthreads();  // red is reused for the sums
  float l = 0.0f;
  for (int s = tid; s < n_splits; s += kMergeThreads) {
    const float w = expf(base[s * split_stride] - m);
    weight[s] = w;
    l += base[s * split_stride + 1] * w;
  }
  l = warp_sum(l);
  if (lane == 0) red[warp] = l;
  __syncthreads();  // weights and the warps' sums are in place
  l = 0.0f;
#pragma unroll
  for (int w = 0; w < kMergeWarps; ++w) l += red[w];
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;

  const int groups = hd < kMergeThreads ? kMergeThreads / hd : 1;
  const int dims = kMergeThreads / groups;  // dims per pass: hd or more
  const int grp = tid / dims, dd = tid - grp * dims;
  float* out = row_at(a.dst.data, a.dst.nb1, a.dst.nb2, head, 0);
  for (int d0 = 0; d0 < hd; d0 += dims) {
    const int d = d0 + dd;
    float acc = 0.0f;
    if (d < hd && grp < groups) {
#pragma unroll 8
      for (int s = grp; s < n_splits; s += groups) acc += weight[s] * base[s * split_stride + 2 + d];
    }
    part[tid] = acc;
    __syncthreads();
    if (grp == 0 && d < hd) {
      float sum = 0.0f;
      for (int k = 0; k < groups; ++k) sum += part[k * dims + dd];
      out[d] = sum * inv;
    }
    __syncthreads();  // part is rewritten by the next pass
  }
}

// Whether K and V rows can be read 4 values per load (kv_read.cuh).
bool vector_rows(const AttentionDecodeOp& d) {
  return kv_rows_vec4(d.k.type, d.q.ne[0], view_of(d.k)) && kv_rows_vec4(d.v.type, d.q.ne[0], view_of(d.v));
}

int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

size_t shared_bytes(int hdp, int heads) {
  return sizeof(float) * static_cast<size_t>(heads * hdp + heads * kTile + 3 * heads + kWarps * heads * hdp) +
         sizeof(int) * kTile;
}

template <typename Kv, int kVec, int kPer, int kH>
Status launch_heads(const DecodeArgs& a, const DecodeSplit& s, int64_t n_head_kv, const Launch& l) {
  const size_t smem = shared_bytes(a.lpk * kPer, kH);
  if (smem > l.max_shared_per_block)
    return error(WT_ERR_UNSUPPORTED, "cuda: attention_decode: head_dim needs more shared memory than a block has");
  const dim3 grid(static_cast<unsigned>(s.n_splits), static_cast<unsigned>(n_head_kv),
                  static_cast<unsigned>(decode_head_tiles(a.group)));
  return launch_kernel("attention_decode_kernel", l, attention_decode_kernel<Kv, kVec, kPer, kH>, grid, kThreads, smem, a);
}

// Small groups (G <= 4: SmolLM2's 3, Llama 3's 4) get 4-head blocks, so no work is spent on
// heads the group does not have; larger groups tile by kDecodeHeads.
template <typename Kv, int kVec, int kPer>
Status launch_split(const DecodeArgs& a, const DecodeSplit& s, int64_t n_head_kv, const Launch& l) {
  static_assert(kDecodeHeads == 8, "the head tiles below are 4 and kDecodeHeads");
  if (a.group <= 4) return launch_heads<Kv, kVec, kPer, 4>(a, s, n_head_kv, l);
  return launch_heads<Kv, kVec, kPer, kDecodeHeads>(a, s, n_head_kv, l);
}

}  // namespace

size_t decode_partial_bytes(int64_t keys, int64_t n_head, int64_t head_dim) {
  const int64_t splits = decode_max_splits(keys);
  if (splits <= 0 || n_head <= 0) return 0;
  return sizeof(float) * static_cast<size_t>(splits * n_head * (head_dim + 2));
}

size_t attention_decode_workspace_bytes(const OpCall& c) {
  // Sized for the larger of this call's key count and the cache's rows, so a call over a
  // longer cache never outgrows a workspace planned from it.
  const AttentionDecodeOp& d = c.get<AttentionDecodeOp>();
  const int64_t n_keys = d.key_rows ? d.n_key_rows : static_cast<int64_t>(d.pos0) + 1;
  return decode_partial_bytes(n_keys > d.k.ne[2] ? n_keys : d.k.ne[2], d.q.ne[1], d.q.ne[0]);
}

Status attention_decode(const OpCall& c, const Launch& l) {
  const AttentionDecodeOp& d = c.get<AttentionDecodeOp>();
  if (d.q.ne[0] > kMaxHeadDim) return error(WT_ERR_UNSUPPORTED, "cuda: attention_decode: head_dim must be <= 256");
  const int64_t n_head = d.q.ne[1], n_head_kv = d.k.ne[1];
  if (n_head <= 0) return Status::ok();
  DecodeArgs a{};
  a.dst = view_of(d.dst);
  a.q = view_of(d.q);
  a.k = view_of(d.k);
  a.v = view_of(d.v);
  a.hd = static_cast<int>(d.q.ne[0]);
  a.group = static_cast<int>(n_head / n_head_kv);
  a.scale = d.scale;
  a.ids = d.key_rows;
  // A window (no key rows: validate_op) starts the keys at pos0 - window + 1.
  a.key0 = !d.key_rows && d.window > 0 && d.pos0 + 1 > d.window ? d.pos0 + 1 - d.window : 0;
  a.n_keys = d.key_rows ? d.n_key_rows : static_cast<int64_t>(d.pos0) + 1 - a.key0;
  a.n_head = static_cast<int>(n_head);
  a.partial = static_cast<float*>(l.workspace);
  const DecodeSplit s = decode_split(a.n_keys, n_head_kv, a.group, l.sm_count);
  a.n_splits = static_cast<int>(s.n_splits);
  a.per_split = s.per_split;
  if (s.n_splits > 0) {
    const size_t need = sizeof(float) * static_cast<size_t>(s.n_splits * n_head * (a.hd + 2));
    if (!a.partial || l.workspace_bytes < need)
      return error(WT_ERR_INTERNAL, "cuda: attention_decode: workspace too small");
    // Vectorized: lpk lanes of 4 floats cover the row (hd <= 128: kPer 4; up to 256: 8).
    // Scalar: a warp per key row, 4 dims per lane up to hd 128, else 8.
    const bool vec = vector_rows(d);
    const int vecs = a.hd / 4;
    a.lpk = vec ? pow2_at_least(vecs < 32 ? vecs : 32) : 32;
    WT_TRY(with_kv_reader(d.k.type, "attention_decode", [&](auto kv) -> Status {
      using Kv = decltype(kv);
      if constexpr (Kv::kVec4) {
        if (vec) return a.lpk * 4 >= a.hd ? launch_split<Kv, 4, 4>(a, s, n_head_kv, l) : launch_split<Kv, 4, 8>(a, s, n_head_kv, l);
      }
      return a.hd <= 32 * 4 ? launch_split<Kv, 1, 4>(a, s, n_head_kv, l) : launch_split<Kv, 1, 8>(a, s, n_head_kv, l);
    }));
  }
  return launch_kernel("attention_decode_merge_kernel", l, attention_decode_merge_kernel, static_cast<unsigned>(n_head),
                       kMergeThreads, 0, a);
}

}  // namespace wt::cuda
