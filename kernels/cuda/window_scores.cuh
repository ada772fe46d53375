// window_scores on CUDA: PLACEHOLDER until the cuda-cua branch's kernel is merged (it replaces
// this pair). Semantics in kernels/ops.def; interface in launch.cuh.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status window_scores(const OpCall& c, const Launch& l);
size_t window_scores_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
