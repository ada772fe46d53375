// window_scores (kernels/ops.def): the attention of the last W queries to each key column,
// per query or summed, as softmax probabilities or raw dot products.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status window_scores(const OpCall& c, const Launch& l);
size_t window_scores_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
