// topk (TopkOp, kernels/ops.h): per row of scores, the indices of the k largest values (ties:
// lower index first), ascending, into out (device-visible; the dispatcher synchronizes).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status topk(const OpCall& c, const Launch& l);
size_t topk_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
