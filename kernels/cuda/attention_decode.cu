// attention_decode on CUDA: PLACEHOLDER (see attention_decode.cuh), replaced by the cuda-cua branch.
#include "attention_decode.cuh"

namespace wt::cuda {

Status attention_decode(const OpCall&, const Launch&) { return error(WT_ERR_UNSUPPORTED, "cuda: attention_decode: not written yet"); }
size_t attention_decode_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
