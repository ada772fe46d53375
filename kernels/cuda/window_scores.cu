// window_scores on CUDA: PLACEHOLDER (see window_scores.cuh), replaced by the cuda-cua branch.
#include "window_scores.cuh"

namespace wt::cuda {

Status window_scores(const OpCall&, const Launch&) { return error(WT_ERR_UNSUPPORTED, "cuda: window_scores: not written yet"); }
size_t window_scores_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
