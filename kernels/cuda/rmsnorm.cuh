// rmsnorm on CUDA: dst[n, d] = src0[n, d] * rsqrt(mean(src0^2) + f0) * src1[d]; one block per row, f32 sums.
// dst may alias src0.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status rmsnorm(const OpCall& c, const Launch& l);
size_t rmsnorm_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
