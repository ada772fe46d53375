// attention_prefill / attention_decode (kernels/ops.def): causal GQA attention, flash-style
// with an online softmax (no n x n matrix). One .cu for both, like cpu/attention.cpp.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status attention_prefill(const OpCall& c, const Launch& l);
size_t attention_prefill_workspace_bytes(const OpCall& c);

Status attention_decode(const OpCall& c, const Launch& l);
size_t attention_decode_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
