// window_scores (WindowScoresOp, kernels/ops.h): the attention of the last `window` queries to
// each key column, per query or summed, as softmax probabilities or raw dot products.
// head_dim <= 256 (above: WT_ERR_UNSUPPORTED).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status window_scores(const OpCall& c, const Launch& l);
size_t window_scores_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
