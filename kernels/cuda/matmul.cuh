// matmul on CUDA (MatmulOp): dst[n, out] = x[n, k] f32 . w[out, k]^T, weights f32, f16, bf16,
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K or Q6_K (others: WT_ERR_UNSUPPORTED). A warp per
// output column (one-row calls with MatmulOp's fusions: several columns per warp for an
// output head) with f32 sums, or for prompts a TF32 tensor-core GEMM over weight tiles
// dequantized to f32 in the workspace (matmul.cu says which).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status matmul(const OpCall& c, const Launch& l);
size_t matmul_workspace_bytes(const OpCall& c);
// Whether the call may take the cuBLAS path (many rows): the backend does not capture those
// in a step graph (cuBLAS may set itself up on first use, which a capture forbids).
bool matmul_may_use_cublas(const OpCall& c);

}  // namespace wt::cuda
