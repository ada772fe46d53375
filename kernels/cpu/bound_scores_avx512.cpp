// bound_scores_impl.h compiled for avx512, 16-lane vectors, the sums of up to 4 heads in registers;
// bound_scores.cpp calls it when the CPU has it.
#include "immintrin_quiet.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "bound_scores_steps.h"
#include "fast_math.h"
#include "kernels/f16_bound.h"
#include "kernels/tensor.h"

// The target is set after the includes so inline functions of the headers stay baseline
// code (the linker could otherwise pick a avx512 copy for the portable parts).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#endif

namespace wt::cpu::bs_avx512 {
#define BS_F16C 1  // the target has F16C
#define BS_LANES 16
#define BS_HEADS 4
#include "bound_scores_impl.h"
#undef BS_HEADS
#undef BS_LANES
#undef BS_F16C

BoundScoreSteps steps() { return {bound_dots, log_softmax_rows, block_log_sums}; }

}  // namespace wt::cpu::bs_avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
