// gather_rows on CUDA: dst[n_sel, heads, d] f32 from src0[n_src, heads, d] f32 (2-D: heads = 1); i0 = 0: dst row r
// = src0 row ids[r]; i0 = 1: per head, dst[r, h] = src0[ids[h * n_sel + r], h]. Ids outside
// src0 give zeros.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status gather_rows(const OpCall& c, const Launch& l);
size_t gather_rows_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
