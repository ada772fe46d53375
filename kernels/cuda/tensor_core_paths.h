// Which CUDA op calls run on tensor cores, where the inputs of the products are rounded
// below f32 (TF32 or f16, sums in f32). Host arithmetic only: the kernels, the parity cases
// (their tolerances for those calls) and the CPU unit tests read the same rules.
//
// The rounding stays inside what the CPU's own fast path already differs from f32 by (its
// int8 activations, kernels/cpu): about 2e-5 relative squared error per product against
// TF32's ~1e-7 and f16's ~1e-6. Short calls stay on the f32 kernels: there the tensor
// cores save nothing worth a rounding (the model tests' prompts are such calls).
#pragma once

#include <cstdint>

namespace wt::cuda {

// matmul: from this many activation rows, weight tiles and a cuBLAS TF32 GEMM (matmul.cu);
// fewer rows run the f32 warp kernel. Calls that ask for f32 (MatmulOp::f32_activations,
// AttentionPrefillOp::f32_inputs: the context's WT_MATMUL_F32) never take a tensor-core path.
inline constexpr int64_t kGemmMinRows = 64;
// attention_prefill: the mma.sync kernel (attention_mma.cu, f16 operands, f32 softmax and
// sums) needs sm_80-class hardware (Jetson Orin is 8.7), head_dim <= 128 and this many query
// positions; otherwise the f32 kernel (attention.cu).
inline constexpr int kMmaMinComputeMajor = 8;
inline constexpr int64_t kMmaPrefillMinRows = 64;
inline constexpr int64_t kMmaPrefillMaxHeadDim = 128;

inline bool matmul_on_tensor_cores(int64_t n_rows) { return n_rows >= kGemmMinRows; }

inline bool prefill_on_tensor_cores(int cc_major, int64_t head_dim, int64_t n_rows) {
  return cc_major >= kMmaMinComputeMajor && head_dim > 0 && head_dim <= kMmaPrefillMaxHeadDim &&
         n_rows >= kMmaPrefillMinRows;
}

}  // namespace wt::cuda
