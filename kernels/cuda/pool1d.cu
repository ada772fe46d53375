// pool1d on CUDA: PLACEHOLDER (see pool1d.cuh), replaced by the cuda-cua branch.
#include "pool1d.cuh"

namespace wt::cuda {

Status pool1d(const OpCall&, const Launch&) { return error(WT_ERR_UNSUPPORTED, "cuda: pool1d: not written yet"); }
size_t pool1d_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
