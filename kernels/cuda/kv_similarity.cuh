// kv_similarity (KvSimilarityOp, kernels/ops.h): per row, cosine of k and v with running EMA
// anchors per KV head (anchors read and updated in place, decay the EMA weight).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status kv_similarity(const OpCall& c, const Launch& l);
size_t kv_similarity_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
