// kv_similarity on CUDA: PLACEHOLDER until the cuda-cua branch's kernel is merged (it replaces
// this pair). Semantics in kernels/ops.def; interface in launch.cuh.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status kv_similarity(const OpCall& c, const Launch& l);
size_t kv_similarity_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
