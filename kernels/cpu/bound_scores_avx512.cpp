// bound_scores_impl.h compiled for avx512, four heads in a 16-lane vector;
// bound_scores.cpp calls it when the CPU has it.
#include "immintrin_quiet.h"

#include <cstdint>
#include <cstring>

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
#define BS_HEADS 4
#include "bound_scores_impl.h"
#undef BS_HEADS
#undef BS_F16C

void run(const Tensor& q, const Tensor& bounds, float scale, int64_t n_blocks, int64_t b0, int64_t b1, float* qp,
         float* u) {
  bound_dots(q, bounds, scale, n_blocks, b0, b1, qp, u);
}

}  // namespace wt::cpu::bs_avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
