// The upper-bound scores a decode step's query gives Quest's key bounds (ops.h:
// BoundScoresOp), in three phases: (1) blocks split over the workers, each scoring its
// blocks for every head (bound_scores_impl.h, compiled per ISA: the bounds of a block are
// read once for all the query heads of their KV head); (2) heads split, each turning its row
// of scores into a log-softmax over the blocks; (3) blocks split, each the log of the heads'
// summed softmax. Phases 2 and 3 are this file's baseline code for every ISA (4 lanes of
// vec_exp.h's exponential), so their bits do not depend on the ISA picked at run time either.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fast_math.h"
#include "kernels/f16_bound.h"
#include "ops_cpu.h"
#include "vector_isa.h"

namespace wt::cpu {
namespace bs_base {
#define BS_HEADS 1  // one head in a 4-lane vector (SSE2, NEON)
#include "bound_scores_impl.h"
#undef BS_HEADS
}  // namespace bs_base

#if defined(__x86_64__)
namespace bs_avx2 {
void run(const Tensor& q, const Tensor& bounds, float scale, int64_t n_blocks, int64_t b0, int64_t b1, float* qp,
         float* u);
}  // namespace bs_avx2
namespace bs_avx512 {
void run(const Tensor& q, const Tensor& bounds, float scale, int64_t n_blocks, int64_t b0, int64_t b1, float* qp,
         float* u);
}  // namespace bs_avx512
#endif

namespace {
IsaChoice g_isa;  // a test's choice

typedef float V4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));
#include "vec_exp.h"

V4 load4(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Packed query floats per worker: enough for the widest build (4 heads per vector).
int64_t pack_floats(int64_t head_dim, int64_t group) { return (group + 3) / 4 * 4 * head_dim; }
}  // namespace

bool set_bound_scores_isa_for_testing(const char* name) { return g_isa.set(name); }

size_t bound_scores_workspace_bytes(int64_t head_dim, int64_t n_head, int64_t n_head_kv, int64_t n_blocks,
                                    int n_threads) {
  const int64_t group = n_head_kv > 0 ? n_head / n_head_kv : 0;
  return sizeof(float) * static_cast<size_t>(n_head * n_blocks + n_threads * pack_floats(head_dim, group));
}

void bound_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& bounds, float scale,
                  void* workspace) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n_blocks = dst.ne[0];
  float* logp = static_cast<float*>(workspace);  // [n_head][n_blocks]
  float* qp = logp + n_head * n_blocks + tc.ith * pack_floats(hd, n_head / bounds.ne[1]);
  int64_t b0, b1;
  tc.split(n_blocks, &b0, &b1);
  const VecIsa isa = g_isa.get();
#if defined(__x86_64__)
  if (isa == VecIsa::avx512)
    bs_avx512::run(q, bounds, scale, n_blocks, b0, b1, qp, logp);
  else if (isa == VecIsa::avx2)
    bs_avx2::run(q, bounds, scale, n_blocks, b0, b1, qp, logp);
  else
#endif
    bs_base::bound_dots(q, bounds, scale, n_blocks, b0, b1, qp, logp);
  tc.sync();
  int64_t h0, h1;
  tc.split(n_head, &h0, &h1);
  for (int64_t h = h0; h < h1; ++h) {
    float* u = logp + h * n_blocks;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t b = 0; b < n_blocks; ++b) top = u[b] > top ? u[b] : top;
    V4 acc = {};
    int64_t b = 0;
    for (; b + 4 <= n_blocks; b += 4) acc += vec_exp<V4, I4>(load4(u + b) - top);
    float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; b < n_blocks; ++b) sum += fast_exp(u[b] - top);
    const float lse = top + std::log(sum);
    for (b = 0; b < n_blocks; ++b) u[b] -= lse;
  }
  tc.sync();
  // Four blocks at a time, each summing the heads in order.
  float* out = static_cast<float*>(dst.data);
  int64_t b = b0;
  for (; b + 4 <= b1; b += 4) {
    V4 top = load4(logp + b);
    for (int64_t h = 1; h < n_head; ++h) {
      const V4 x = load4(logp + h * n_blocks + b);
      top = x > top ? x : top;
    }
    V4 sum = {};
    for (int64_t h = 0; h < n_head; ++h) sum += vec_exp<V4, I4>(load4(logp + h * n_blocks + b) - top);
    for (int j = 0; j < 4; ++j) out[b + j] = top[j] + std::log(sum[j]);
  }
  for (; b < b1; ++b) {
    float top = logp[b];
    for (int64_t h = 1; h < n_head; ++h) top = logp[h * n_blocks + b] > top ? logp[h * n_blocks + b] : top;
    float sum = 0.0f;
    for (int64_t h = 0; h < n_head; ++h) sum += fast_exp(logp[h * n_blocks + b] - top);
    out[b] = top + std::log(sum);
  }
}

}  // namespace wt::cpu
