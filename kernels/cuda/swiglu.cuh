// swiglu on CUDA: dst[n, f] = silu(src0[n, f]) * src1[n, f] (exp clamped as the CPU's fast_exp). dst may alias src0.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status swiglu(const OpCall& c, const Launch& l);
size_t swiglu_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
