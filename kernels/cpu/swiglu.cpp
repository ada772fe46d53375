#include <cstdint>
#include <cstring>

#include "fast_math.h"
#include "ops_cpu.h"

#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace wt::cpu {
namespace {
// 16 lanes (GCC/clang vector extension): vec_exp does fast_exp's steps lane by lane, so
// silu(g) * u has the scalar loop's bits, 16 at a time. GCC left the scalar loop
// unvectorized (fast_exp's floor and clamps), which made SwiGLU ~6% of a prefill.
typedef float V16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
#include "vec_exp.h"
}  // namespace

void swiglu(const ThreadCtx& tc, const Tensor& dst, const Tensor& gate, const Tensor& up) {
  const int64_t f = gate.ne[0];
  int64_t begin, end;
  tc.split(gate.n_rows(), &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    const float* g = gate.row<float>(r);
    const float* u = up.row<float>(r);
    float* out = dst.row<float>(r);
    int64_t i = 0;
    for (; i + 16 <= f; i += 16) {
      V16 gv, uv;
      std::memcpy(&gv, g + i, sizeof gv);
      std::memcpy(&uv, u + i, sizeof uv);
      const V16 s = gv / (1.0f + vec_exp<V16, I16>(-gv)) * uv;  // silu(g) * u
      std::memcpy(out + i, &s, sizeof s);
    }
    for (; i < f; ++i) out[i] = silu(g[i]) * u[i];
  }
}

}  // namespace wt::cpu
