// kv_similarity on CUDA: PLACEHOLDER (see kv_similarity.cuh), replaced by the cuda-cua branch.
#include "kv_similarity.cuh"

namespace wt::cuda {

Status kv_similarity(const OpCall&, const Launch&) { return error(WT_ERR_UNSUPPORTED, "cuda: kv_similarity: not written yet"); }
size_t kv_similarity_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
