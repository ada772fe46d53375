// matmul on CUDA (matmul.cuh). Two paths:
//  - warp kernel: one warp per output column o, kRows activation rows per weight decode;
//    the products of a call with w2 / w3 of the same weight type run as one grid;
//    each lane decodes 8-weight units (whole bytes of one block), multiplies them into its
//    kRows partial sums, and one shuffle reduction per row ends it. Eight warps per block.
//  - cuBLAS (prefill-sized calls, when the workspace holds a weight tile): tiles of
//    weight rows dequantized to f32 into the workspace (f32 weights are used in place),
//    then a TF32 tensor-core GEMM with f32 sums on the compute stream (l.cublas is bound to
//    it); tensor_core_paths.h says which calls.
#include <string>

#include "common.cuh"
#include "cublas_gemm.h"
#include "matmul.cuh"
#include "tensor_core_paths.h"
#include "pdl.cuh"
#include "swiglu.cuh"

namespace wt::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr size_t kGemmTileBytes = size_t{8} << 20;    // f32 weight tile in the workspace

// Up to three products of one x (MatmulOp's w, w2, w3) of one weight type: the warp kernel
// runs them as one grid, output columns of the products one after another.
struct MatmulSeg {
  float* y;
  size_t y_nb1;
  const uint8_t* w;
  size_t w_nb1;
  int64_t n_out;
  const float* bias;  // [n_out] or null (fused calls only)
};
struct MatmulArgs {
  float* y;
  size_t y_nb1;
  const float* x;
  size_t x_nb1;
  const uint8_t* w;
  size_t w_nb1;
  int64_t k, n_out, n_rows;
  int n_seg;            // the warp kernel: segments of seg (y, w, n_out above are seg[0]'s)
  MatmulSeg seg[3];
};

// The warp's product g and its unit u there (uniform over the warp): kCols output columns
// (the last unit of a product may hold fewer), or, for the first rope_segs products (a fused
// rope; kCols is 1 then), a pair of a head's columns (pair set). False past the last unit.
// Constant indices into a.seg keep the parameters out of local memory.
template <int kCols = 1>
__device__ __forceinline__ bool warp_unit(const MatmulArgs& a, int rope_segs, int64_t* u_out, MatmulSeg* g_out,
                                           bool* pair_out) {
  auto units = [](int64_t n_out, bool pair) { return pair ? n_out / 2 : (n_out + kCols - 1) / kCols; };
  int64_t u = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  MatmulSeg g = a.seg[0];
  bool pair = rope_segs > 0;
  int64_t n = units(g.n_out, pair);
  if (u >= n && a.n_seg > 1) {
    u -= n;
    g = a.seg[1];
    pair = rope_segs > 1;
    n = units(g.n_out, pair);
    if (u >= n && a.n_seg > 2) {
      u -= n;
      g = a.seg[2];
      pair = false;
      n = units(g.n_out, pair);
    }
  }
  *u_out = u;
  *g_out = g;
  *pair_out = pair;
  return u < n;
}

template <typename W, int kRows>
__global__ void matmul_warp(MatmulArgs a) {
  kernel_prologue();
  const int lane = threadIdx.x & 31;
  int64_t o;
  MatmulSeg g;
  bool pair;
  if (!warp_unit(a, 0, &o, &g, &pair)) return;  // the whole warp leaves together
  const uint8_t* wrow = g.w + o * static_cast<int64_t>(g.w_nb1);
  const int64_t n_units = a.k / 8;
  const int64_t n_tiles = (a.n_rows + kRows - 1) / kRows;
  for (int64_t tile = blockIdx.y; tile < n_tiles; tile += gridDim.y) {
    const int64_t r0 = tile * kRows;
    const float* xr[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) xr[r] = row_at<float>(a.x, r0 + r < a.n_rows ? r0 + r : r0, a.x_nb1);
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    for (int64_t u = lane; u < n_units; u += 32) {
      float wa[4], wb[4];
      int64_t ea, eb;
      W::load8(wrow, u, wa, wb, &ea, &eb);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float* xv = xr[r];
        acc[r] += wa[0] * xv[ea] + wa[1] * xv[ea + 1] + wa[2] * xv[ea + 2] + wa[3] * xv[ea + 3] + wb[0] * xv[eb] +
                  wb[1] * xv[eb + 1] + wb[2] * xv[eb + 2] + wb[3] * xv[eb + 3];
      }
    }
    // k % 8 tail: only f32 and f16 rows have one (quantized rows are whole 32-blocks).
    for (int64_t i = n_units * 8 + lane; i < a.k; i += 32) {
      const float wv = W::load1(wrow, i);
#pragma unroll
      for (int r = 0; r < kRows; ++r) acc[r] += wv * xr[r][i];
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float s = warp_sum(acc[r]);
      if (lane == 0 && r0 + r < a.n_rows) row_at<float>(g.y, r0 + r, g.y_nb1)[o] = s;
    }
  }
}

// MatmulOp's one-row fusions: what each warp makes of x before the products, and
// what they do with the sums after (MatmulSeg::bias, accumulate, rope).
// gate_staged: silu(gate) * x made once per block in shared memory (k floats), which the
// block's warps then read as a plain input: an exp per element per block, not per warp.
enum class RowInput { plain, norm, gate, gate_staged };
struct FusedArgs {
  const float* norm;  // RowInput::norm: the norm's weights
  float eps;
  const float* gate;  // RowInput::gate: silu(gate) * x
  bool accumulate;    // y += product
  // Rope over the first rope_segs products (0: none), at positions[0].
  int rope_segs;
  int32_t head_dim, n_rot;
  bool neox;
  float theta_base, position_scale, mscale;
  const int32_t* positions;
  const float* divisors;  // or null
  const float* angles;    // RopeOp::angles' row (cos, sin of each pair) or null: then computed
  // MatmulOp::glu: a warp per column u of the first two products (gate and up, one weight
  // type, kCols 1), y[u] = silu(gate) * up, y2[u] = up.
  bool glu;
};

// Pair u of a rotated product: head u / (head_dim / 2), index j in it. The first n_rot / 2
// pairs rotate (j, j + n_rot / 2) with neox, else (2j, 2j + 1); the rest are the head's
// unrotated columns two by two. Returns whether the pair rotates.
__device__ __forceinline__ bool rope_pair(const FusedArgs& f, int64_t u, int64_t* c0, int64_t* c1, int32_t* j_out) {
  const int32_t pairs = f.head_dim / 2, half = f.n_rot / 2;
  const int64_t base = (u / pairs) * f.head_dim;
  const int32_t j = static_cast<int32_t>(u % pairs);
  *j_out = j;
  if (j < half) {
    *c0 = base + (f.neox ? j : 2 * j);
    *c1 = base + (f.neox ? j + half : 2 * j + 1);
    return true;
  }
  *c0 = base + f.n_rot + 2 * (j - half);
  *c1 = *c0 + 1;
  return false;
}

// Element e of the fused input, as the warp reads it: x[e] (plain), x[e] * norm[e] (norm:
// the row's 1 / rms multiplies the sums at the end) or silu(gate[e]) * x[e] (gate).
template <RowInput kIn>
__device__ __forceinline__ float fused_in(const float* x, const FusedArgs& f, int64_t e) {
  if constexpr (kIn == RowInput::norm) return x[e] * f.norm[e];
  if constexpr (kIn == RowInput::gate) {
    const float g = f.gate[e];
    // exp(-g) clamped as swiglu's kernel (and the CPU's fast_exp) clamp it.
    return g / (1.0f + expf(fminf(fmaxf(-g, -87.0f), 88.0f))) * x[e];
  }
  return x[e];
}

// One row of x (a decode step), fused. One warp per kCols output columns (matmul_warp's
// one, or several sharing the warp's input: an output head of 49152 columns made its input
// 49152 times with one), or per pair of a head's columns where rope rotates them (kCols 1;
// RopeOp::angles, else the angle in double as the CPU computes it). Each warp makes its input on the fly
// (no block-wide staging or barrier: the weights' loads start at once); with a norm it also
// sums x^2 over the elements it reads, which are every element once, and scales its sums by
// 1 / rms. Bias, accumulate, rope or glu at the end.
template <typename W, RowInput kStage, int kCols>
__global__ void matmul_row_fused(MatmulArgs a, FusedArgs f) {
  kernel_prologue();
  extern __shared__ float staged[];
  constexpr RowInput kIn = kStage == RowInput::gate_staged ? RowInput::plain : kStage;
  constexpr int kSlots = kCols > 2 ? kCols : 2;  // columns a warp reads: kCols, or a rope pair
  const float* x = a.x;
  if constexpr (kStage == RowInput::gate_staged) {
    for (int64_t i = threadIdx.x; i < a.k; i += blockDim.x) staged[i] = fused_in<RowInput::gate>(a.x, f, i);
    __syncthreads();
    x = staged;
  }
  const int lane = threadIdx.x & 31;
  int64_t u;
  MatmulSeg g;
  bool pair;
  const bool glu = kCols == 1 && f.glu;
  if (glu) {
    u = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    g = a.seg[0];
    pair = true;
    if (u >= g.n_out) return;
  } else if (!warp_unit<kCols>(a, f.rope_segs, &u, &g, &pair)) {
    return;
  }
  pair = kCols == 1 && pair;  // the host fuses rope and glu only with one column per warp
  int64_t col[kSlots];
  int n_col = kCols, n_store = kCols;  // columns read; columns stored (the last unit may hold fewer)
  int32_t j = 0;
  bool rotate = false;
  if (glu) {
    col[0] = col[1] = u;
    n_col = n_store = 2;
  } else if (pair) {
    rotate = rope_pair(f, u, &col[0], &col[1], &j);
    n_col = n_store = 2;
  } else {
    const int64_t c0 = u * kCols;
    if (g.n_out - c0 < kCols) n_store = static_cast<int>(g.n_out - c0);
#pragma unroll
    for (int c = 0; c < kSlots; ++c) col[c] = c0 + (c < n_store ? c : n_store - 1);  // past the end: the last again
  }
  const uint8_t* w[kSlots];
#pragma unroll
  for (int c = 0; c < kSlots; ++c) w[c] = g.w + col[c] * static_cast<int64_t>(g.w_nb1);
  if (glu) w[1] = a.seg[1].w + u * static_cast<int64_t>(a.seg[1].w_nb1);  // up's row
  const int64_t n_units = a.k / 8;
  float acc[kSlots], ss = 0.0f;
#pragma unroll
  for (int c = 0; c < kSlots; ++c) acc[c] = 0.0f;
  for (int64_t e = lane; e < n_units; e += 32) {
    float wa[kSlots][4], wb[kSlots][4], xa[4], xb[4];
    int64_t ea, eb;
#pragma unroll
    for (int c = 0; c < kSlots; ++c)  // the same element indices for every column: only the row differs
      if (c < n_col) W::load8(w[c], e, wa[c], wb[c], &ea, &eb);
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      xa[t] = fused_in<kIn>(x, f, ea + t);
      xb[t] = fused_in<kIn>(x, f, eb + t);
      if constexpr (kIn == RowInput::norm) ss += x[ea + t] * x[ea + t] + x[eb + t] * x[eb + t];
    }
#pragma unroll
    for (int c = 0; c < kSlots; ++c)
      if (c < n_col)
        acc[c] += wa[c][0] * xa[0] + wa[c][1] * xa[1] + wa[c][2] * xa[2] + wa[c][3] * xa[3] + wb[c][0] * xb[0] +
                  wb[c][1] * xb[1] + wb[c][2] * xb[2] + wb[c][3] * xb[3];
  }
  for (int64_t i = n_units * 8 + lane; i < a.k; i += 32) {  // k % 8: f32 and f16 rows only
    const float xi = fused_in<kIn>(x, f, i);
    if constexpr (kIn == RowInput::norm) ss += x[i] * x[i];
#pragma unroll
    for (int c = 0; c < kSlots; ++c)
      if (c < n_col) acc[c] += W::load1(w[c], i) * xi;
  }
  float s[kSlots];
#pragma unroll
  for (int c = 0; c < kSlots; ++c) s[c] = c < n_col ? warp_sum(acc[c]) : 0.0f;
  if constexpr (kIn == RowInput::norm) {
    const float scale = 1.0f / sqrtf(warp_sum(ss) / static_cast<float>(a.k) + f.eps);
#pragma unroll
    for (int c = 0; c < kSlots; ++c) s[c] *= scale;
  }
  if (lane != 0) return;
  if (glu) {
    const MatmulSeg& up = a.seg[1];
    if (g.bias) s[0] += g.bias[u];
    if (up.bias) s[1] += up.bias[u];
    // exp(-g) clamped as swiglu's kernel (and the CPU's fast_exp) clamp it.
    g.y[u] = s[0] / (1.0f + expf(fminf(fmaxf(-s[0], -87.0f), 88.0f))) * s[1];
    up.y[u] = s[1];
    return;
  }
#pragma unroll
  for (int c = 0; c < kSlots; ++c)
    if (c < n_store && g.bias) s[c] += g.bias[col[c]];
  if (!pair) {
#pragma unroll
    for (int c = 0; c < kSlots; ++c)
      if (c < n_store) g.y[col[c]] = f.accumulate ? g.y[col[c]] + s[c] : s[c];
    return;
  }
  if (rotate) {
    float c, sn;
    if (f.angles) {
      c = f.angles[2 * j];
      sn = f.angles[2 * j + 1];
    } else {
      const double pos = static_cast<double>(f.positions[0]) * f.position_scale;
      double freq = pow(static_cast<double>(f.theta_base), -2.0 * j / f.n_rot);
      if (f.divisors) freq /= f.divisors[j];
      c = static_cast<float>(cos(pos * freq)) * f.mscale;
      sn = static_cast<float>(sin(pos * freq)) * f.mscale;
    }
    const float x0 = s[0], x1 = s[1];
    s[0] = x0 * c - x1 * sn;
    s[1] = x0 * sn + x1 * c;
  }
  g.y[col[0]] = s[0];
  g.y[col[1]] = s[1];
}

// Rows [o0, o0 + n) of the weights as f32, row-major [n, k], into dst.
template <typename W>
__global__ void dequantize_tile(float* dst, const uint8_t* w, size_t w_nb1, int64_t o0, int64_t n, int64_t k) {
  kernel_prologue();
  const int64_t total = n * k;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / k, i = idx % k;
    dst[idx] = W::load1(w + (o0 + r) * static_cast<int64_t>(w_nb1), i);
  }
}

// Weight rows per cuBLAS tile for this call (0: the call does not take the cuBLAS path).
int64_t gemm_tile_rows(const MatmulOp& m) {
  const int64_t k = m.w.ne[0], n_out = m.w.ne[1];
  if (!matmul_on_tensor_cores(m.x.n_rows()) || k <= 0 || n_out <= 0) return 0;
  int64_t rows = static_cast<int64_t>(kGemmTileBytes / (sizeof(float) * static_cast<size_t>(k)));
  if (rows < 32) rows = 32;
  return rows < n_out ? rows : n_out;
}

Status cublas_check(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return error(s == CUBLAS_STATUS_ALLOC_FAILED ? WT_ERR_OUT_OF_MEMORY : WT_ERR_BACKEND,
               std::string("cuda: matmul: ") + what + " failed (cuBLAS status " + std::to_string(static_cast<int>(s)) +
                   ")");
}

template <typename W>
Status run_gemm(const MatmulArgs& a, const Launch& l, int64_t tile_rows, bool tf32) {
  const CublasGemm& blas = *l.cublas;
  const float one = 1.0f, zero = 0.0f;
  // Column-major view: Y^T [n_out, n_rows] (ld y_nb1/4) = W [k, n_out]^T . X^T [k, n_rows] (ld x_nb1/4).
  const int ldx = static_cast<int>(a.x_nb1 / sizeof(float)), ldy = static_cast<int>(a.y_nb1 / sizeof(float));
  for (int64_t o0 = 0; o0 < a.n_out; o0 += tile_rows) {
    const int64_t n = a.n_out - o0 < tile_rows ? a.n_out - o0 : tile_rows;
    const float* wt = nullptr;
    int ldw = static_cast<int>(a.k);
    if constexpr (W::kBlockBytes == 4 && W::kBlockElems == 1) {
      wt = reinterpret_cast<const float*>(a.w + o0 * static_cast<int64_t>(a.w_nb1));
      ldw = static_cast<int>(a.w_nb1 / sizeof(float));
    } else {
      float* ws = static_cast<float*>(l.workspace);
      WT_TRY(launch_kernel("matmul dequantize_tile", l, dequantize_tile<W>, grid_for(n * a.k, l), kBlock, 0, ws, a.w,
                           a.w_nb1, o0, n, a.k));
      wt = ws;
    }
    // TF32 tensor cores with f32 sums (tensor_core_paths.h: within the CPU fast path's
    // rounding), or plain f32 when the call asks for f32 activations.
    const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    WT_TRY(cublas_check(blas.gemm_ex(blas.handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                                     static_cast<int>(a.n_rows), static_cast<int>(a.k), &one, wt, CUDA_R_32F, ldw,
                                     a.x, CUDA_R_32F, ldx, &zero, a.y + o0, CUDA_R_32F, ldy, compute,
                                     CUBLAS_GEMM_DEFAULT),
                        tf32 ? "cublasGemmEx (TF32)" : "cublasGemmEx (f32)"));
  }
  return Status::ok();
}

// Output columns per warp of a fused one-row call: 1 with rope (a warp per pair); else
// Launch::row_cols where set (WT_CUDA_ROW_COLS, an A/B on one build), else 4 from 8192
// columns (an output head), where the warps are many and each made the whole input alone.
int fused_row_cols(const MatmulArgs& a, int rope_segs, const Launch& l) {
  if (rope_segs > 0) return 1;
  if (l.row_cols > 0) return l.row_cols;
  int64_t outs = 0;
  for (int s = 0; s < a.n_seg; ++s) outs += a.seg[s].n_out;
  return outs >= 8192 ? 4 : 1;
}

// kCols > 1 only for calls without rope, gate or glu (fused_row_cols and run_fused see to it):
// units count rope products in pairs and the gate kernels exist for one column per warp.
template <typename W, int kCols>
Status launch_fused(const MatmulOp& m, const MatmulArgs& a, const FusedArgs& f, const Launch& l) {
  if constexpr (kCols > 1) {
    if (f.rope_segs > 0 || f.glu || !m.gate.empty())
      return error(WT_ERR_INTERNAL, "matmul: several columns per warp with rope, gate or glu");
  }
  int64_t units = 0;  // warps: kCols columns each, a pair of them where rope rotates the product
  for (int s = 0; s < a.n_seg; ++s)
    units += s < f.rope_segs ? a.seg[s].n_out / 2 : (a.seg[s].n_out + kCols - 1) / kCols;
  if (f.glu) units = a.seg[0].n_out;  // a column of gate and of up each
  const unsigned gx = static_cast<unsigned>((units + kWarpsPerBlock - 1) / kWarpsPerBlock);
  constexpr int kThreads = 32 * kWarpsPerBlock;
  if (!m.norm.empty())
    return launch_kernel("matmul", l, matmul_row_fused<W, RowInput::norm, kCols>, dim3(gx), kThreads, 0, a, f);
  if constexpr (kCols == 1) {  // the down projection's few columns: one per warp
    const size_t staged = sizeof(float) * static_cast<size_t>(a.k);
    if (!m.gate.empty() && staged + 1024 <= l.max_shared_per_block)
      return launch_kernel("matmul", l, matmul_row_fused<W, RowInput::gate_staged, 1>, dim3(gx), kThreads, staged, a,
                           f);
    if (!m.gate.empty())
      return launch_kernel("matmul", l, matmul_row_fused<W, RowInput::gate, 1>, dim3(gx), kThreads, 0, a, f);
  }
  return launch_kernel("matmul", l, matmul_row_fused<W, RowInput::plain, kCols>, dim3(gx), kThreads, 0, a, f);
}

template <typename W>
Status run_fused(const MatmulOp& m, const MatmulArgs& a, const Launch& l) {
  const RopeOp& r = m.rope;
  FusedArgs f{};
  f.norm = static_cast<const float*>(m.norm.data);
  f.eps = m.norm_eps;
  f.gate = static_cast<const float*>(m.gate.data);
  f.accumulate = m.accumulate;
  f.rope_segs = r.x.empty() ? 0 : r.x2.empty() ? 1 : 2;
  f.head_dim = static_cast<int32_t>(r.x.ne[0]);
  f.n_rot = r.n_rot;
  f.neox = r.neox;
  f.theta_base = r.theta_base;
  f.position_scale = r.position_scale;
  f.mscale = r.mscale;
  f.positions = r.positions;
  f.divisors = static_cast<const float*>(r.freq_divisors.data);
  f.angles = static_cast<const float*>(r.angles.data);
  f.glu = m.glu;
  switch (m.gate.empty() && !m.glu ? fused_row_cols(a, f.rope_segs, l) : 1) {
    case 2: return launch_fused<W, 2>(m, a, f, l);
    case 4: return launch_fused<W, 4>(m, a, f, l);
    case 8: return launch_fused<W, 8>(m, a, f, l);
    default: return launch_fused<W, 1>(m, a, f, l);
  }
}

template <typename W>
Status run(const MatmulOp& m, const MatmulArgs& a, const Launch& l) {
  if (matmul_fused(m)) return run_fused<W>(m, a, l);
  const int64_t tile_rows = gemm_tile_rows(m);
  const bool f32_weights = W::kBlockBytes == 4 && W::kBlockElems == 1;
  bool strides_fit = a.x_nb1 / sizeof(float) <= INT32_MAX && a.k <= INT32_MAX && a.n_rows <= INT32_MAX;
  int64_t all_out = 0;
  for (int s = 0; s < a.n_seg; ++s) {
    strides_fit = strides_fit && a.seg[s].y_nb1 / sizeof(float) <= INT32_MAX &&
                  (!f32_weights || a.seg[s].w_nb1 % sizeof(float) == 0);
    all_out += a.seg[s].n_out;
  }
  bool workspace_fits = true;  // f32 weights need no tile
  if constexpr (!(W::kBlockBytes == 4 && W::kBlockElems == 1))
    workspace_fits = l.workspace && l.workspace_bytes >= sizeof(float) * static_cast<size_t>(tile_rows * a.k);
  if (tile_rows > 0 && l.cublas && strides_fit && workspace_fits) {
    for (int s = 0; s < a.n_seg; ++s) {  // one after another through the one weight tile
      MatmulArgs b = a;
      b.y = a.seg[s].y;
      b.y_nb1 = a.seg[s].y_nb1;
      b.w = a.seg[s].w;
      b.w_nb1 = a.seg[s].w_nb1;
      b.n_out = a.seg[s].n_out;
      WT_TRY(run_gemm<W>(b, l, tile_rows, !m.f32_activations));
    }
    return Status::ok();
  }
  const unsigned gx = static_cast<unsigned>((all_out + kWarpsPerBlock - 1) / kWarpsPerBlock);
  if (a.n_rows == 1) return launch_kernel("matmul", l, matmul_warp<W, 1>, dim3(gx, 1), 32 * kWarpsPerBlock, 0, a);
  constexpr int kRows = 4;
  const int64_t tiles = (a.n_rows + kRows - 1) / kRows;
  const unsigned gy = static_cast<unsigned>(tiles < 65535 ? tiles : 65535);
  return launch_kernel("matmul", l, matmul_warp<W, kRows>, dim3(gx, gy), 32 * kWarpsPerBlock, 0, a);
}

}  // namespace

Status matmul(const OpCall& c, const Launch& l) {
  // Activations stay f32 (int8 activation quantization is a CPU speed path); f32_activations
  // (WT_MATMUL_F32) also keeps the cuBLAS path off TF32 tensor cores.
  const MatmulOp& m = c.get<MatmulOp>();
  const Tensor& w = m.w;
  if (!weight_type_ok(w.type))
    return unread_weight_type("matmul", w.type);
  const MatmulProducts p = matmul_products(m);
  bool one_type = true;
  for (int i = 1; i < p.n; ++i) {
    if (!weight_type_ok(p.w[i]->type))
      return unread_weight_type("matmul", p.w[i]->type);
    one_type = one_type && p.w[i]->type == w.type;
  }
  if (!one_type) {  // mixed weight types (a Q4_K_M file's V may be Q6_K): one launch per product
    for (int i = 0; i < p.n; ++i) {
      MatmulOp one = m;  // the fusions too: each launch makes its own input
      one.glu = false;   // swiglu after both (below)
      one.dst = *p.dst[i];
      one.w = *p.w[i];
      one.bias = *p.bias[i];
      one.dst2 = one.w2 = one.dst3 = one.w3 = one.bias2 = one.bias3 = Tensor{};
      one.rope.x = i == 0 ? m.rope.x : i == 1 ? m.rope.x2 : Tensor{};  // rope's x2 is dst2's heads
      one.rope.x2 = Tensor{};
      WT_TRY(matmul(OpCall(one), l));
    }
    if (m.glu) return swiglu(OpCall(SwigluOp{.dst = m.dst, .gate = m.dst, .up = m.dst2}), l);
    return Status::ok();
  }
  MatmulArgs a;
  a.x = static_cast<const float*>(m.x.data);
  a.x_nb1 = m.x.nb[1];
  a.k = w.ne[0];
  a.n_rows = m.x.n_rows();
  a.n_seg = 0;
  for (int i = 0; i < p.n; ++i) {
    if (p.w[i]->ne[1] == 0) continue;
    a.seg[a.n_seg++] = MatmulSeg{static_cast<float*>(p.dst[i]->data), p.dst[i]->nb[1],
                                 static_cast<const uint8_t*>(p.w[i]->data), p.w[i]->nb[1], p.w[i]->ne[1],
                                 static_cast<const float*>(p.bias[i]->data)};
  }
  if (a.n_seg == 0 || a.n_rows == 0) return Status::ok();
  a.y = a.seg[0].y;
  a.y_nb1 = a.seg[0].y_nb1;
  a.w = a.seg[0].w;
  a.w_nb1 = a.seg[0].w_nb1;
  a.n_out = a.seg[0].n_out;
  switch (w.type) {
    case DType::f32: return run<WF32>(m, a, l);
    case DType::f16: return run<WF16>(m, a, l);
    case DType::q8_0: return run<WQ8_0>(m, a, l);
    case DType::q4_0: return run<WQ4_0>(m, a, l);
    case DType::q4_1: return run<WQ4_1>(m, a, l);
    case DType::q5_0: return run<WQ5_0>(m, a, l);
    case DType::q5_1: return run<WQ5_1>(m, a, l);
    case DType::bf16: return run<WBF16>(m, a, l);
    case DType::q4_k: return run<WQ4_K>(m, a, l);
    case DType::q5_k: return run<WQ5_K>(m, a, l);
    default: return run<WQ6_K>(m, a, l);
  }
}

size_t matmul_workspace_bytes(const OpCall& c) {
  // The cuBLAS path's weight tile (the engine sizes the workspace from this); f32 weights
  // are read in place. Given less, the call runs the warp kernel instead.
  const MatmulOp& m = c.get<MatmulOp>();
  if (m.w.type == DType::f32) return 0;
  return sizeof(float) * static_cast<size_t>(gemm_tile_rows(m) * m.w.ne[0]);
}

bool matmul_may_use_cublas(const OpCall& c) { return gemm_tile_rows(c.get<MatmulOp>()) > 0; }

}  // namespace wt::cuda
