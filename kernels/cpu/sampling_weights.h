// The sampler's weights over a whole vocabulary (runtime/engine/sampler.cpp), a host-side
// helper rather than an op: w[i] = exp((row[i] - max_logit) * inv_t) by fast_exp's steps,
// and 0 where that is under min_p, where (row[i] - max_logit) * inv_t is below -87 (exp's
// floor: a -inf logit weighs nothing) or NaN. Its ISA builds give the same bits, so a seed
// draws the same tokens on any CPU of an architecture. 16 lanes at a time on AVX-512 CPUs.
#pragma once

#include <cstdint>

namespace wt::cpu {

void sampling_weights(const float* row, int64_t n, float max_logit, float inv_t, float min_p, float* w);

}  // namespace wt::cpu
