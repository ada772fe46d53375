// rope on CUDA: src0[n, heads, head_dim] rotated in place at positions ids[0..n): i0 = n_rot, i1 = 1 for
// neox pairs, f0 = theta base, f1 = position scale (linear scaling), src1 = optional
// [n_rot/2] per-frequency divisors. Angles in double, as on the CPU, once per row.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status rope(const OpCall& c, const Launch& l);
size_t rope_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
