// Baseline (SSE2 / NEON, 4 lanes) sampling_weights; AVX-512 CPUs take 16 lanes at a time
// (sampling_weights_avx512.cpp, the same bits). Qwen2.5's 151,936 exponentials took a fifth
// of a temperature-sampled token's 0.5 ms as scalar std::exp calls.
#include "sampling_weights.h"

#include <cstring>

#include "fast_math.h"
#include "vector_isa.h"

namespace wt::cpu {
namespace {
typedef float V4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));
#include "vec_exp.h"
#include "sampling_weights_steps.h"
}  // namespace

#if defined(__x86_64__)
namespace sampling_weights_avx512 {
int64_t lanes16(const float* row, int64_t n, float max_logit, float inv_t, float min_p, float* w);
}  // namespace sampling_weights_avx512
#endif

void sampling_weights(const float* row, int64_t n, float max_logit, float inv_t, float min_p, float* w) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (best_vector_isa() == VecIsa::avx512) i = sampling_weights_avx512::lanes16(row, n, max_logit, inv_t, min_p, w);
#endif
  i += weights_lanes<V4, I4>(row + i, n - i, max_logit, inv_t, min_p, w + i);
  for (; i < n; ++i) {
    const float x = (row[i] - max_logit) * inv_t, e = fast_exp(x);
    w[i] = x >= -87.0f && e >= min_p ? e : 0.0f;
  }
}

}  // namespace wt::cpu
