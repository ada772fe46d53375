// block_scores on CUDA: PLACEHOLDER until the cuda-cua branch's kernel is merged (it replaces
// this pair). Semantics in kernels/ops.def; interface in launch.cuh.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status block_scores(const OpCall& c, const Launch& l);
size_t block_scores_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
