// rope on CUDA (RopeOp): x[n, heads, head_dim] rotated in place at positions[0..n): n_rot, neox pairs,
// theta_base, position_scale (linear scaling), freq_divisors = optional [n_rot/2] per-frequency
// divisors. Each row's cos and sin read from RopeOp::angles where set (the engine's per-step
// table, made on the host as the CPU makes them), else computed in double, as on the CPU.
#pragma once

#include "launch.cuh"

namespace wt::cuda {

Status rope(const OpCall& c, const Launch& l);
size_t rope_workspace_bytes(const OpCall& c);

}  // namespace wt::cuda
