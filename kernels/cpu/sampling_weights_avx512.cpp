// sampling_weights 16 lanes at a time for CPUs with AVX-512; sampling_weights.cpp calls it
// when the CPU has it. Built with -ffp-contract=off (kernels/CMakeLists.txt): no multiply
// is fused into an add, so every lane has the baseline build's bits.
#include "immintrin_quiet.h"

#include <cstdint>
#include <cstring>

#include "fast_math.h"

// The target is set after the includes so inline functions of the headers stay baseline
// code (the linker could otherwise pick an avx512 copy for the portable parts).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#endif

namespace wt::cpu::sampling_weights_avx512 {
namespace {
typedef float V16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
#include "vec_exp.h"
#include "sampling_weights_steps.h"
}  // namespace

int64_t lanes16(const float* row, int64_t n, float max_logit, float inv_t, float min_p, float* w) {
  return weights_lanes<V16, I16>(row, n, max_logit, inv_t, min_p, w);
}

}  // namespace wt::cpu::sampling_weights_avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
