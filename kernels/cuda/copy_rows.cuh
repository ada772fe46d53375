// copy_rows on CUDA: dst rows [i0, i0 + n) = src0 rows [0, n) (f32), dst f32 or f16 (round to nearest even).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status copy_rows(const OpCall& c, const Launch& l);
size_t copy_rows_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
