// The portable matmul path: plain C++ on the WBlock form of quant.h. It is the fallback on
// CPUs without a SIMD path and the readable statement of what the SIMD paths compute: for
// each chunk of the activation layout and each int32 lane L (one block, or half block),
//   y += isum[L] * (d_w dx16[L]) + m_w sx16[L]
// where isum[L] is the int8 x int8 dot product of the lane's elements. (Here q_w is the
// format's signed integer, so m_w is 0 for the symmetric formats.)
#include <algorithm>

#include "matmul_impl.h"
#include "quant.h"

namespace wt::cpu::mm {
namespace {

constexpr int64_t kPanelBlocks = 64;  // weight blocks unpacked at once (2.6 KiB of WBlocks)

void quantize_row(const float* x, int64_t k, ActKind kind, uint8_t* dst) { quantize_act_row_ref(x, k, kind, dst); }

void qmatmul(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const ActLayout l = act_layout(job.k, act_kind(job.wtype));
  const int64_t cpp = kPanelBlocks / l.full_blocks;  // chunks per panel
  WBlock wb[kPanelBlocks];
  for (int64_t i = i0; i < i1; ++i) {
    const uint8_t* wrow = job.w + i * job.w_stride;
    for (int64_t c0 = 0; c0 < l.n_chunks; c0 += cpp) {
      const int64_t c1 = std::min(l.n_chunks, c0 + cpp), b0 = c0 * l.full_blocks;
      const int64_t nb = std::min(kPanelBlocks, l.n_blocks - b0);
      // Unpack a panel of this weight row once, then reuse it for every activation row.
      for (int64_t b = 0; b < nb; ++b) unpack_block(job.wtype, wrow, b0 + b, &wb[b]);
      for (int64_t j = j0; j < j1; ++j) {
        const uint8_t* xr = job.xq + j * job.xq_stride;
        float acc = 0.0f;
        for (int64_t c = c0; c < c1; ++c) {
          const ChunkMap& m = chunk_map(l.kind, static_cast<int>(l.chunk_blocks(c)));
          const uint8_t* p = xr + c * l.chunk_bytes;
          const float* dx16 = reinterpret_cast<const float*>(p + 64 * m.n_vec);
          const float* sx16 = dx16 + 16;
          for (int L = 0; L < 16; ++L) {
            const int64_t b = c * l.full_blocks + m.block[L] - b0;  // block within the panel
            if (b >= nb) continue;                                    // padding
            const WBlock& w = wb[b];
            int32_t s = 0;
            for (int v = 0; v < m.n_vec; ++v) {
              const int8_t* a = reinterpret_cast<const int8_t*>(p + 64 * v + 4 * L);
              for (int t = 0; t < 4; ++t) s += w.q[m.elem[v][L] + t] * a[t];
            }
            acc += static_cast<float>(s) * (w.d[m.half[L]] * dx16[L]) + w.m * sx16[L];
          }
        }
        float* y = reinterpret_cast<float*>(job.y.row(j)) + i;
        *y = c0 == 0 ? acc : *y + acc;
      }
    }
  }
}

// Float weights: f32 dot products in a fixed order (8 interleaved partial sums, then a
// pairwise tree), converting F16/BF16 weights one panel at a time.
void fmatmul(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  constexpr int64_t kPanel = 512;
  float wbuf[kPanel];
  const size_t esize = job.wtype == DType::f32 ? 4 : 2;
  for (int64_t i = i0; i < i1; ++i) {
    const uint8_t* wrow = job.w + i * job.w_stride;
    for (int64_t p0 = 0; p0 < job.k; p0 += kPanel) {
      const int64_t n = std::min(kPanel, job.k - p0);
      dequantize(job.wtype, wrow + p0 * esize, wbuf, n);
      for (int64_t j = j0; j < j1; ++j) {
        const float* x = reinterpret_cast<const float*>(job.x.row(j)) + p0;
        float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t e = 0; e < n; ++e) s[e & 7] += wbuf[e] * x[e];
        const float acc = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
        float* y = reinterpret_cast<float*>(job.y.row(j)) + i;
        *y = p0 == 0 ? acc : *y + acc;
      }
    }
  }
}

}  // namespace

const Kernels kScalarKernels = {"scalar", quantize_row, qmatmul, fmatmul, nullptr, nullptr};

}  // namespace wt::cpu::mm
