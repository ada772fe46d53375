// gather_rows on CUDA (GatherRowsOp): dst[n_sel, heads, d] f32 from src[n_src, heads, d] f32 (2-D: heads = 1);
// per_head false: dst row r = src row ids[r]; true: dst[r, h] = src[ids[h * n_sel + r], h]. Ids
// outside src give zeros.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status gather_rows(const OpCall& c, const Launch& l);
size_t gather_rows_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
