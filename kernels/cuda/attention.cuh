// attention_prefill / attention_decode (AttentionPrefillOp / AttentionDecodeOp, kernels/ops.h):
// causal GQA attention, flash-style with an online softmax (no n x n matrix). One .cu for both,
// like cpu/attention.cpp. head_dim <= 256 (above: WT_ERR_UNSUPPORTED).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status attention_prefill(const OpCall& c, const Launch& l);
size_t attention_prefill_workspace_bytes(const OpCall& c);

Status attention_decode(const OpCall& c, const Launch& l);
size_t attention_decode_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
