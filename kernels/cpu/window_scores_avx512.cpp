// window_scores_impl.h compiled for avx512; window_scores.cpp calls it when the CPU has it.
#include <cstdint>
#include <cstring>

#include "fast_math.h"
#include "ops_cpu.h"
#include "quant.h"

// The target is set after the includes so inline functions of the headers stay baseline
// code (the linker could otherwise pick a avx512 copy for the portable parts).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#endif

namespace wt::cpu::ws_avx512 {
#define WS_LANES 16  // native float vector width
#include "window_scores_impl.h"
#undef WS_LANES

void run(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k, const WindowScoresParams& p,
         void* workspace) {
  window_scores_impl(tc, dst, q, k, p, workspace);
}

}  // namespace wt::cpu::ws_avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
