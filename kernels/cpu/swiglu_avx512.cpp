// swiglu's rows 16 lanes at a time for CPUs with AVX-512; swiglu.cpp calls it when the CPU
// has it. A prompt's FFN rows are large (Qwen2.5-0.5B: 4864 per token), and with SSE2's 4
// lanes swiglu took 6% of a 3616-token prefill. Built with -ffp-contract=off
// (kernels/CMakeLists.txt): no multiply of vec_exp is fused into an add, so every lane has
// the baseline build's bits, which are the scalar silu's (test_cpu_ops.cpp checks them).
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

namespace wt::cpu::swiglu_avx512 {
namespace {
typedef float V16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
#include "vec_exp.h"
}  // namespace

// out[i] = silu(g[i]) * u[i] for the first n - n % 16 values; returns how many it wrote.
int64_t rows16(const float* g, const float* u, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V16 gv, uv;
    std::memcpy(&gv, g + i, sizeof gv);
    std::memcpy(&uv, u + i, sizeof uv);
    const V16 s = gv / (1.0f + vec_exp<V16, I16>(-gv)) * uv;
    std::memcpy(out + i, &s, sizeof s);
  }
  return i;
}

}  // namespace wt::cpu::swiglu_avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
