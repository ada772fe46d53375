// block_scores (BlockScoresOp, kernels/ops.h): SlimInfer block scores, max over a block's units
// of the mean |qbar_h . unit key| over query heads. head_dim <= 256 (above: WT_ERR_UNSUPPORTED).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status block_scores(const OpCall& c, const Launch& l);
size_t block_scores_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
