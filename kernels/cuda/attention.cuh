// attention_prefill / attention_decode (AttentionPrefillOp / AttentionDecodeOp, kernels/ops.h):
// causal GQA attention with an online softmax (no n x n matrix). Prefill is attention.cu
// (flash-style row tiles), decode attention_decode.cu (flash-decoding: the keys split over
// the SMs, then a merge). head_dim <= 256 (above: WT_ERR_UNSUPPORTED).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status attention_prefill(const OpCall& c, const Launch& l);
size_t attention_prefill_workspace_bytes(const OpCall& c);

Status attention_decode(const OpCall& c, const Launch& l);
size_t attention_decode_workspace_bytes(const OpCall& c);

// Workspace of decode's partial results over at most `keys` keys, on any device
// (decode_split.h's most splits). The engine sizes one workspace from a prefill call, so
// attention_prefill_workspace_bytes includes this for its cache.
size_t decode_partial_bytes(int64_t keys, int64_t n_head, int64_t head_dim);

}  // namespace wt::cuda
