// topk (kernels/ops.def): per row, the indices of the i0 largest values (ties: lower index
// first), ascending, into out_i (device-visible; the dispatcher synchronizes).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status topk(const OpCall& c, const Launch& l);
size_t topk_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
