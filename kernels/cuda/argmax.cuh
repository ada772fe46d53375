// argmax on CUDA (ArgmaxOp): *out = the index of the largest value of x's row 0 (the first on ties); out is
// the dispatcher's mapped slot (launch.cuh).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status argmax(const OpCall& c, const Launch& l);
size_t argmax_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
