// copy_rows on CUDA (CopyRowsOp): dst rows [row0, row0 + n) = src rows [0, n) (f32), dst f32 or f16 (round to
// nearest even).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status copy_rows(const OpCall& c, const Launch& l);
size_t copy_rows_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
