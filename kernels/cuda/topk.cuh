// topk on CUDA: PLACEHOLDER until the cuda-cua branch's kernel is merged (it replaces
// this pair). Semantics in kernels/ops.def; interface in launch.cuh.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status topk(const OpCall& c, const Launch& l);
size_t topk_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
