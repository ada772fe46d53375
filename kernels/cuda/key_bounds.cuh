// key_bounds, bound_scores (KeyBoundsOp, BoundScoresOp, kernels/ops.h): Quest's per-block key
// bounds, and the log of the query heads' summed softmax over the upper bounds a decode
// step's query gives the blocks. head_dim <= 256 for bound_scores (above: WT_ERR_UNSUPPORTED).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status key_bounds(const OpCall& c, const Launch& l);
size_t key_bounds_workspace_bytes(const OpCall& c);
Status bound_scores(const OpCall& c, const Launch& l);
size_t bound_scores_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
