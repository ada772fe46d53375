// embed on CUDA (EmbedOp): dst[n, d] f32 = rows ids[0..n) of table [n_vocab, d] (f32, f16, Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1; other weight types: WT_ERR_UNSUPPORTED). Ids outside the table give a zero row.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status embed(const OpCall& c, const Launch& l);
size_t embed_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
