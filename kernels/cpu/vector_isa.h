// The vector ISA of the float kernels that are compiled once per ISA (attention,
// window_scores) and picked at run time: what this CPU (and its OS) can run.
#pragma once

namespace wt::cpu {

enum class VecIsa { base, avx2, avx512, count };

inline bool cpu_has(VecIsa isa) {
#if defined(__x86_64__)
  // __builtin_cpu_supports also checks that the OS saves the wider register state.
  if (isa == VecIsa::avx512) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  if (isa == VecIsa::avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return isa == VecIsa::base;
}

inline VecIsa best_vector_isa() {
  static const VecIsa isa = cpu_has(VecIsa::avx512) ? VecIsa::avx512
                            : cpu_has(VecIsa::avx2) ? VecIsa::avx2
                                                    : VecIsa::base;
  return isa;
}

}  // namespace wt::cpu
