// block_scores on CUDA: PLACEHOLDER (see block_scores.cuh), replaced by the cuda-cua branch.
#include "block_scores.cuh"

namespace wt::cuda {

Status block_scores(const OpCall&, const Launch&) { return error(WT_ERR_UNSUPPORTED, "cuda: block_scores: not written yet"); }
size_t block_scores_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
