// The vector ISA of the float kernels that are compiled once per ISA (attention,
// window_scores, bound_scores) and picked at run time: what this CPU (and its OS) can run.
#pragma once

#include <atomic>
#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace wt::cpu {

enum class VecIsa { base, avx2, avx512, count };

#if defined(__x86_64__)
// CPUID.1:ECX[29]: the wide builds convert f16 KV rows and key bounds with F16C (clang 14's
// __builtin_cpu_supports has no "f16c"). Every AVX2 CPU has it; checked all the same.
inline bool cpu_has_f16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

inline bool cpu_has(VecIsa isa) {
#if defined(__x86_64__)
  // __builtin_cpu_supports also checks that the OS saves the wider register state.
  if (isa == VecIsa::avx512)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && cpu_has_f16c();
  if (isa == VecIsa::avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
#endif
  return isa == VecIsa::base;
}

inline VecIsa best_vector_isa() {
  static const VecIsa isa = cpu_has(VecIsa::avx512) ? VecIsa::avx512
                            : cpu_has(VecIsa::avx2) ? VecIsa::avx2
                                                    : VecIsa::base;
  return isa;
}

// A kernel's ISA as a test may force it (an IsaChoice per kernel): "base", "avx2" or
// "avx512"; nullptr restores the run-time choice. set() is false for an unknown name or an
// ISA this CPU lacks.
class IsaChoice {
 public:
  bool set(const char* name) {
    if (!name) {
      forced_.store(VecIsa::count);
      return true;
    }
    const char* names[] = {"base", "avx2", "avx512"};
    for (int i = 0; i < 3; ++i) {
      if (std::strcmp(name, names[i]) != 0) continue;
      if (!cpu_has(static_cast<VecIsa>(i))) return false;
      forced_.store(static_cast<VecIsa>(i));
      return true;
    }
    return false;
  }
  VecIsa get() const {
    const VecIsa forced = forced_.load(std::memory_order_relaxed);
    return forced == VecIsa::count ? best_vector_isa() : forced;
  }

 private:
  std::atomic<VecIsa> forced_{VecIsa::count};  // count: none
};

}  // namespace wt::cpu
