// add on CUDA (AddOp): dst[n, d] = a[n, d] + b (b [n, d], or one row [d] broadcast to every row).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status add(const OpCall& c, const Launch& l);
size_t add_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
