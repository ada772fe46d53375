// attention_prefill on tensor cores (attention_mma.cuh): flash attention with mma.sync
// m16n8k16 (f16 operands, f32 sums), which sm_80-class GPUs run (Jetson Orin is sm_87).
//
// A block (4 warps) owns 64 rows of one KV head (attention_rows.cuh's numbering: L = t * G + h),
// 16 per warp, the query tile in shared memory as f16, pre-scaled by scale * log2(e) so the
// softmax runs on exp2. Keys stream through shared memory kBN at a time: K and V as
// [key][dim] f16, rows padded by 8 halves so a warp's fragment loads hit distinct banks; the
// tile is read 4 values per load where an f32 or f16 cache's rows allow it (kVec; kv_read.cuh;
// scalar otherwise and for q8_0; an f16 cache's values convert exactly, an f32 or q8_0
// cache's (d * q) are rounded to f16 here, within the parity tolerance), and
// V's fragments come through ldmatrix .trans (the P V product wants V's columns). Per tile each warp computes S = Q K^T (16 x kBN, f32 accumulators),
// masks the keys past each row's position, updates its rows' running max and sum (online
// softmax: every row lives in one quad of lanes, reduced by two shuffles), rescales its
// output accumulators and adds P V, with P taken from the S accumulators as f16 (the
// m16n8k16 accumulator layout of two key tiles is the A operand layout of one 16-key step).
// Nothing n x n is formed. Longest tiles first, as the f32 kernel.
#include "attention_mma.cuh"

#include <cuda_fp16.h>

#include <string>

#include "attention_rows.cuh"
#include "kv_read.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBM = kWarps * 16;  // rows per block
constexpr float kLog2e = 1.4426950408889634f;

// D += A B: A 16 x 16 (row-major fragments a0..a3), B 16 x 8 (column-major b0, b1), f32 D.
__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap();  // the host launches this kernel on compute capability >= 8 only
#endif
}

__device__ __forceinline__ uint32_t ld_h2(const __half* p) { return *reinterpret_cast<const uint32_t*>(p); }

// The B fragment (16 keys x 8 dims) of P V from V rows [key][dim] in shared memory: lanes
// 0-15 name rows k0 .. k0 + 15 at the fragment's first dim, .trans hands each lane its two
// keys of one dim.
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t& b0, uint32_t& b1, const __half* row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(b0), "=r"(b1) : "r"(a));
#else
  b0 = b1 = 0;
  __trap();
#endif
}

__device__ __forceinline__ uint32_t pack_h2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <int kHD, int kBN>
struct MmaShape {
  static constexpr int kQS = kHD + 8;  // row strides in halves: 16 bytes of padding per row
  static constexpr int kKS = kHD + 8;  // K and V rows alike
  static constexpr size_t kSmemBytes = sizeof(__half) * (size_t{kBM} * kQS + size_t{2 * kBN} * kKS);
};

// Keys [j0, j0 + kBN) of KV head g as f16 rows [key][dim] into ks and vs (zeros past jb and hd).
template <typename Kv, int kHD, int kBN, bool kVec>
__device__ __forceinline__ void load_kv_tile(const AttnArgs& a, int64_t g, int64_t j0, int64_t jb, __half* ks,
                                             __half* vs) {
  using S = MmaShape<kHD, kBN>;
  static_assert(!kVec || Kv::kVec4, "4-value loads of a type that has them");
  if constexpr (kVec) {  // hd % 4 == 0 and aligned rows: a group of 4 never straddles hd
    constexpr int kPer = kBN * kHD / 4 / kThreads;
    static_assert(kPer * kThreads * 4 == kBN * kHD, "the tile is a whole number of float4 per thread");
#pragma unroll
    for (int m = 0; m < 2; ++m) {  // K, then V: 4 * kPer floats in flight per thread
      const RowView& src = m == 0 ? a.k : a.v;
      __half* dst = m == 0 ? ks : vs;
      float4 x[kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int e = (i * kThreads + threadIdx.x) * 4, jj = e / kHD, d = e - jj * kHD;
        x[i] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (j0 + jj < jb && d < a.hd) x[i] = Kv::load4(kv_row(src, g, j0 + jj), d);
      }
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int e = (i * kThreads + threadIdx.x) * 4, jj = e / kHD, d = e - jj * kHD;
        const __half2 lo = __floats2half2_rn(x[i].x, x[i].y), hi = __floats2half2_rn(x[i].z, x[i].w);
        uint2 packed;
        packed.x = *reinterpret_cast<const uint32_t*>(&lo);
        packed.y = *reinterpret_cast<const uint32_t*>(&hi);
        *reinterpret_cast<uint2*>(dst + jj * S::kKS + d) = packed;
      }
    }
  } else {
    for (int e = threadIdx.x; e < kBN * kHD; e += kThreads) {
      const int jj = e / kHD, d = e - jj * kHD;
      float kx = 0.0f, vx = 0.0f;
      if (j0 + jj < jb && d < a.hd) {
        kx = Kv::at(kv_row(a.k, g, j0 + jj), d);
        vx = Kv::at(kv_row(a.v, g, j0 + jj), d);
      }
      ks[jj * S::kKS + d] = __float2half_rn(kx);
      vs[jj * S::kKS + d] = __float2half_rn(vx);
    }
  }
}

template <typename Kv, int kHD, int kBN, bool kVec>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(AttnArgs a) {
  kernel_prologue();
  using S = MmaShape<kHD, kBN>;
  extern __shared__ __align__(16) unsigned char smem[];
  __half* qs = reinterpret_cast<__half*>(smem);  // [kBM][kQS]
  __half* ks = qs + kBM * S::kQS;                // [kBN][kKS]
  __half* vs = ks + kBN * S::kKS;                // [kBN][kKS]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gq = lane >> 2, cq = lane & 3;  // the quad (row of a fragment) and the lane in it
  const int64_t g = blockIdx.y;
  const int hd = a.hd;
  const int64_t group = a.group;

  const int64_t row_base = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kBM;  // long tiles first
  zero_skipped_rows(a, g, row_base, kBM);
  const int64_t n_rows = prefill_rows(a);
  if (row_base >= n_rows) return;  // block-uniform
  const int64_t last = (row_base + kBM < n_rows ? row_base + kBM : n_rows) - 1;
  const int64_t jb = a.pos0 + prefill_row_t(a, last) + 1;  // keys [0, jb)

  const float qscale = a.scale * kLog2e;
  for (int e = threadIdx.x; e < kBM * kHD; e += kThreads) {
    const int r = e / kHD, d = e - r * kHD;
    const int64_t L = row_base + r;
    float x = 0.0f;
    if (L < n_rows && d < hd) x = row_at(a.q.data, a.q.nb1, a.q.nb2, g * group + L % group, prefill_row_t(a, L))[d] * qscale;
    qs[r * S::kQS + d] = __float2half_rn(x);
  }

  // This lane's two rows (fragment rows gq and gq + 8 of the warp's 16) and their last keys.
  const int r0 = warp * 16 + gq, r1 = r0 + 8;
  const int64_t L0 = row_base + r0, L1 = row_base + r1;
  const int64_t lk0 = L0 < n_rows ? a.pos0 + prefill_row_t(a, L0) : -1;
  const int64_t lk1 = L1 < n_rows ? a.pos0 + prefill_row_t(a, L1) : -1;
  const int64_t Lw = row_base + warp * 16 + 15 < n_rows ? row_base + warp * 16 + 15 : n_rows - 1;
  const int64_t warp_last = Lw >= row_base + warp * 16 ? a.pos0 + prefill_row_t(a, Lw) : -1;  // rows ascend in t

  float o[kHD / 8][4];
#pragma unroll
  for (int i = 0; i < kHD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  float m0 = -1e30f, m1 = -1e30f, l0 = 0.0f, l1 = 0.0f;  // finite: exp2(m_old - m_new) is defined

  for (int64_t j0 = 0; j0 < jb; j0 += kBN) {
    __syncthreads();  // the previous tile is consumed (and, the first time, the queries are stored)
    load_kv_tile<Kv, kHD, kBN, kVec>(a, g, j0, jb, ks, vs);
    __syncthreads();
    if (warp_last < j0) continue;  // no row of this warp sees the tile (warp-uniform)

    float s[kBN / 8][4];
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
    const __half* qa = qs + r0 * S::kQS + 2 * cq;
#pragma unroll
    for (int kk = 0; kk < kHD / 16; ++kk) {
      const uint32_t a0 = ld_h2(qa + kk * 16), a1 = ld_h2(qa + 8 * S::kQS + kk * 16);
      const uint32_t a2 = ld_h2(qa + kk * 16 + 8), a3 = ld_h2(qa + 8 * S::kQS + kk * 16 + 8);
#pragma unroll
      for (int nt = 0; nt < kBN / 8; ++nt) {
        const __half* kb = ks + (nt * 8 + gq) * S::kKS + kk * 16 + 2 * cq;
        mma_16816(s[nt], a0, a1, a2, a3, ld_h2(kb), ld_h2(kb + 8));
      }
    }

    // Mask keys past each row's position (and rows past the end: lk = -1), then the online softmax.
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int64_t j = j0 + nt * 8 + 2 * cq + i;
        if (j > lk0) s[nt][i] = -INFINITY;
        if (j > lk1) s[nt][2 + i] = -INFINITY;
        mx0 = fmaxf(mx0, s[nt][i]);
        mx1 = fmaxf(mx1, s[nt][2 + i]);
      }
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(kFullMask, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(kFullMask, mx1, off));
    }
    const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
    const float al0 = exp2f(m0 - mn0), al1 = exp2f(m1 - mn1);
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
      s[nt][0] = exp2f(s[nt][0] - mn0);
      s[nt][1] = exp2f(s[nt][1] - mn0);
      s[nt][2] = exp2f(s[nt][2] - mn1);
      s[nt][3] = exp2f(s[nt][3] - mn1);
      sum0 += s[nt][0] + s[nt][1];
      sum1 += s[nt][2] + s[nt][3];
    }
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
      sum0 += __shfl_xor_sync(kFullMask, sum0, off);
      sum1 += __shfl_xor_sync(kFullMask, sum1, off);
    }
    l0 = l0 * al0 + sum0;
    l1 = l1 * al1 + sum1;
    m0 = mn0;
    m1 = mn1;
#pragma unroll
    for (int i = 0; i < kHD / 8; ++i) {
      o[i][0] *= al0;
      o[i][1] *= al0;
      o[i][2] *= al1;
      o[i][3] *= al1;
    }

    // O += P V, 16 keys per step: key tiles 2 kt and 2 kt + 1 of S are the A fragment.
#pragma unroll
    for (int kt = 0; kt < kBN / 16; ++kt) {
      const uint32_t a0 = pack_h2(s[2 * kt][0], s[2 * kt][1]), a1 = pack_h2(s[2 * kt][2], s[2 * kt][3]);
      const uint32_t a2 = pack_h2(s[2 * kt + 1][0], s[2 * kt + 1][1]), a3 = pack_h2(s[2 * kt + 1][2], s[2 * kt + 1][3]);
      const __half* vrow = vs + (kt * 16 + (lane & 15)) * S::kKS;
#pragma unroll
      for (int dt = 0; dt < kHD / 8; ++dt) {
        uint32_t b0, b1;
        ldmatrix_x2_trans(b0, b1, vrow + dt * 8);
        mma_16816(o[dt], a0, a1, a2, a3, b0, b1);
      }
    }
  }

  // Row r0 holds o[.][0..1], row r1 o[.][2..3]: dims dt * 8 + 2 cq and the next.
  const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
  float* out0 = lk0 >= 0 ? row_at(a.dst.data, a.dst.nb1, a.dst.nb2, g * group + L0 % group, prefill_row_t(a, L0)) : nullptr;
  float* out1 = lk1 >= 0 ? row_at(a.dst.data, a.dst.nb1, a.dst.nb2, g * group + L1 % group, prefill_row_t(a, L1)) : nullptr;
#pragma unroll
  for (int dt = 0; dt < kHD / 8; ++dt) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int d = dt * 8 + 2 * cq + i;
      if (d >= hd) continue;
      if (out0) out0[d] = o[dt][i] * inv0;
      if (out1) out1[d] = o[dt][2 + i] * inv1;
    }
  }
}

template <int kHD, int kBN>
Status launch(const AttnArgs& a, DType kv_type, int64_t n_head_kv, const Launch& l) {
  constexpr size_t smem = MmaShape<kHD, kBN>::kSmemBytes;
  if (smem > l.max_shared_per_block)
    return error(WT_ERR_UNSUPPORTED, "cuda: attention_prefill: the tensor-core tile needs more shared memory than a block has");
  const int64_t tiles = (a.n * a.group + kBM - 1) / kBM;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(n_head_kv));
  return with_kv_reader(kv_type, "attention_prefill", [&](auto kv) {
    using Kv = decltype(kv);
    if constexpr (Kv::kVec4) {
      if (kv_rows_vec4(kv_type, a.hd, a.k) && kv_rows_vec4(kv_type, a.hd, a.v))
        return launch_kernel("attention_mma_kernel", l, attention_mma_kernel<Kv, kHD, kBN, true>, grid, kThreads, smem, a);
    }
    return launch_kernel("attention_mma_kernel", l, attention_mma_kernel<Kv, kHD, kBN, false>, grid, kThreads, smem, a);
  });
}

}  // namespace

Status attention_prefill_mma(const AttnArgs& a, DType kv_type, int64_t n_head_kv, const Launch& l) {
  // Head dims padded to 64 or 128 (zeros add nothing to the scores); 32 keys per tile at 128
  // keep the block under the 48 KiB of shared memory every GPU gives without opting in.
  if (a.hd <= 64) return launch<64, 64>(a, kv_type, n_head_kv, l);
  if (a.hd <= 128) return launch<128, 32>(a, kv_type, n_head_kv, l);
  return error(WT_ERR_INTERNAL, "cuda: attention_prefill: the tensor-core kernel takes head_dim <= 128, got " +
                                    std::to_string(a.hd));
}

}  // namespace wt::cuda
