// rmsnorm on CUDA (RmsnormOp): dst[n, d] = x[n, d] * rsqrt(mean(x^2) + eps) * weight[d]; one block per row,
// f32 sums. dst may alias x.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status rmsnorm(const OpCall& c, const Launch& l);
size_t rmsnorm_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
