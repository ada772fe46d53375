// swiglu on CUDA (SwigluOp): dst[n, f] = silu(gate[n, f]) * up[n, f] (exp clamped as the CPU's fast_exp). dst may
// alias gate.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status swiglu(const OpCall& c, const Launch& l);
size_t swiglu_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
