// pool1d (Pool1dOp, kernels/ops.h): same-length average or max pooling along ne0, odd kernel.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status pool1d(const OpCall& c, const Launch& l);
size_t pool1d_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
