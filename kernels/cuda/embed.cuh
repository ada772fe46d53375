// embed on CUDA: dst[n, d] f32 = rows ids[0..n) of the table src0 [d, n_vocab] (f32, f16, Q8_0, Q4_0, Q4_1).
// Ids outside the table give a zero row.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status embed(const OpCall& c, const Launch& l);
size_t embed_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
