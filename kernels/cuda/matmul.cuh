// matmul on CUDA (MatmulOp): dst[n, out] = x[n, k] f32 . w[out, k]^T, weights f32, f16, Q8_0, Q4_0, Q4_1,
// Q5_0 or Q5_1 (others: WT_ERR_UNSUPPORTED) with f32 activations whatever f32_activations says (the CPU's
// matmul_f32: dequantize, f32 sums). One warp
// per output, lanes over 8-weight units, shuffle reduction, 4 activation rows per weight
// decode. Many rows (a prefill) go to cuBLAS instead when the workspace allows: weight
// tiles dequantized to f32 in the workspace, then cublasSgemm.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status matmul(const OpCall& c, const Launch& l);
size_t matmul_workspace_bytes(const OpCall& c);
// Whether the call may take the cuBLAS path (many rows): the backend does not capture those
// in a step graph (cuBLAS may set itself up on first use, which a capture forbids).
bool matmul_may_use_cublas(const OpCall& c);

}  // namespace wt::cuda
