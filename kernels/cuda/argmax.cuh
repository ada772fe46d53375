// argmax on CUDA: out_i[0] = the index of the largest value of src0 row 0 (the first on ties); out_i is
// the dispatcher's mapped slot (launch.cuh).
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status argmax(const OpCall& c, const Launch& l);
size_t argmax_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
