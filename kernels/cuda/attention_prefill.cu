// attention_prefill on CUDA: PLACEHOLDER (see attention_prefill.cuh), replaced by the cuda-cua branch.
#include "attention_prefill.cuh"

namespace wt::cuda {

Status attention_prefill(const OpCall&, const Launch&) { return error(WT_ERR_UNSUPPORTED, "cuda: attention_prefill: not written yet"); }
size_t attention_prefill_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
