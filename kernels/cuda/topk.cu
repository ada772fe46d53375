// topk on CUDA: PLACEHOLDER (see topk.cuh), replaced by the cuda-cua branch.
#include "topk.cuh"

namespace wt::cuda {

Status topk(const OpCall&, const Launch&) { return error(WT_ERR_UNSUPPORTED, "cuda: topk: not written yet"); }
size_t topk_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
