// topk: one block per row, a radix select then an ordered write; no scratch memory.
//
// Each value becomes a 32-bit key whose unsigned order is the CPU's order (NaN lowest, -0
// equal to +0). Four passes of 8 bits each histogram the keys that match the prefix chosen
// so far and pick the byte holding the kk-th largest. The lanes of a warp whose keys fall in
// the same bin add to it once (__match_any_sync): score rows are mostly one sign and a few
// exponents, and max pooling copies each peak over its kernel, so a warp's 32 keys often
// share a bin, and same-address shared atomics serialize (a 7357-key row took 235 us per
// call on an H200 with one atomic per key). The result is the threshold key T and
// `need`, how many keys equal to T belong to the top kk (the others are above T). A last
// pass walks the row in index order and keeps every key above T and the first `need` keys
// equal to T (ties: lower index first); block-wide ballot counts give each kept index its
// place, so the output is ascending. Slots past the row length get -1 as on the CPU.
#include "topk.cuh"

#include <string>

#include "warp.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

// 1024 threads: a pass over an 8k row is 8 rounds of loads, not 32 (one block per row: the
// rows are the few KV heads of a layer).
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 256;
static_assert(kThreads >= kBins, "the first kBins threads clear the histogram");

__device__ __forceinline__ uint32_t order_key(float v) {
  uint32_t u = __float_as_uint(v);
  if (v != v) return 0u;         // NaN ranks below every number
  if (u == 0x80000000u) u = 0u;  // -0 ties with +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Block-wide count of `flag` over threads before this one (returned) and in all (*total).
__device__ __forceinline__ int block_count(bool flag, int* warp_counts, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned mask = __ballot_sync(kFullMask, flag);
  if (lane == 0) warp_counts[warp] = __popc(mask);
  __syncthreads();
  int before = __popc(mask & ((1u << lane) - 1u)), all = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += warp_counts[w];
    all += warp_counts[w];
  }
  __syncthreads();  // warp_counts is reused by the next call
  *total = all;
  return before;
}

__global__ void __launch_bounds__(kThreads) topk_kernel(RowView x, int64_t ne1, int64_t n, int k, int64_t kk,
                                                        int32_t* out) {
  kernel_prologue();
  __shared__ unsigned hist[kBins];
  __shared__ uint32_t s_prefix;
  __shared__ int64_t s_need;
  __shared__ int warp_counts[kWarps];
  const int tid = threadIdx.x, lane = tid & 31;
  const int64_t r = blockIdx.x;
  const float* v = row_at(x.data, x.nb1, x.nb2, r % ne1, r / ne1);
  int32_t* o = out + r * k;

  if (kk == n) {
    for (int64_t i = tid; i < n; i += kThreads) o[i] = static_cast<int32_t>(i);
  } else {
    uint32_t prefix = 0, mask = 0;
    int64_t need = kk;  // keys still to take among those matching prefix
    for (int shift = 24; shift >= 0; shift -= 8) {
      if (tid < kBins) hist[tid] = 0;
      __syncthreads();
      // The bound is the same for every lane, so whole warps reach __match_any_sync.
      for (int64_t c0 = 0; c0 < n; c0 += kThreads) {
        const int64_t i = c0 + tid;
        const uint32_t key = i < n ? order_key(v[i]) : 0u;
        const bool in = i < n && (key & mask) == prefix;
        const unsigned bin = in ? (key >> shift) & 255u : static_cast<unsigned>(kBins);  // kBins: not counted
        const unsigned peers = __match_any_sync(kFullMask, bin);
        if (in && __ffs(peers) - 1 == lane) atomicAdd(&hist[bin], static_cast<unsigned>(__popc(peers)));
      }
      __syncthreads();
      if (tid < 32) {
        // Lane l covers bins 255 - 8l down to 248 - 8l; an inclusive scan of the lane sums
        // (bins counted from the top) finds the lane, then the bin, where `need` is reached.
        const int top = 255 - 8 * lane;
        int64_t cnt = 0;
        for (int b = 0; b < 8; ++b) cnt += hist[top - b];
        int64_t incl = cnt;
        for (int off = 1; off < 32; off <<= 1) {
          const int64_t y = __shfl_up_sync(kFullMask, incl, off);
          if (lane >= off) incl += y;
        }
        int64_t c = incl - cnt;  // keys in the bins above this lane's
        if (c < need && need <= incl) {
          for (int b = 0; b < 8; ++b) {
            const int64_t h = hist[top - b];
            if (c + h >= need) {
              s_prefix = prefix | (static_cast<uint32_t>(top - b) << shift);
              s_need = need - c;
              break;
            }
            c += h;
          }
        }
      }
      __syncthreads();
      prefix = s_prefix;
      need = s_need;
      mask |= 255u << shift;
      __syncthreads();  // s_prefix / s_need / hist are rewritten by the next pass
    }
    const uint32_t t = prefix;
    int64_t eq_seen = 0, kept = 0;
    for (int64_t c0 = 0; c0 < n; c0 += kThreads) {
      const int64_t i = c0 + tid;
      const uint32_t key = i < n ? order_key(v[i]) : 0u;
      const bool above = i < n && key > t, eq = i < n && key == t;
      int n_eq, n_keep;
      const int eq_rank = block_count(eq, warp_counts, &n_eq);
      const bool keep = above || (eq && eq_seen + eq_rank < need);
      const int place = block_count(keep, warp_counts, &n_keep);
      if (keep) o[kept + place] = static_cast<int32_t>(i);
      eq_seen += n_eq;
      kept += n_keep;
    }
  }
  for (int64_t i = kk + tid; i < k; i += kThreads) o[i] = -1;
}

}  // namespace

size_t topk_workspace_bytes(const OpCall&) { return 0; }

Status topk(const OpCall& c, const Launch& l) {
  const TopkOp& a = c.get<TopkOp>();
  if (a.k <= 0) return Status::ok();  // nothing asked, nothing written (as on the CPU)
  const Tensor& x = a.scores;
  const int64_t n = x.ne[0] > 0 ? x.ne[0] : 0, rows = x.n_rows();
  if (rows <= 0) return Status::ok();
  const int k = a.k;
  const int64_t kk = k < n ? k : n;
  return launch_kernel("topk_kernel", l, topk_kernel, static_cast<unsigned>(rows), kThreads, 0, view_of(x), x.ne[1], n,
                       k, kk, a.out);
}

}  // namespace wt::cuda
