// The upper-bound scores a decode step's query gives Quest's key bounds (ops.h:
// BoundScoresOp), in three phases: (1) blocks split over the workers, each scoring its
// blocks for every head (bound_scores_impl.h, compiled per ISA: the bounds of a block are
// read once for all the query heads of their KV head); (2) heads split, each turning its row
// of scores into a log-softmax over the blocks; (3) blocks split, each the log of the heads'
// summed softmax. All three are compiled per ISA (bound_scores_impl.h) and give the same bits
// in every build: the same operations lane by lane, in the same order, none fused (CMake
// builds these files with -ffp-contract=off), so the selection does not depend on the ISA
// picked at run time.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "bound_scores_steps.h"
#include "fast_math.h"
#include "kernels/f16_bound.h"
#include "kernels/tensor.h"
#include "ops_cpu.h"
#include "vector_isa.h"

#if defined(__SSE__)
#include <xmmintrin.h>  // the baseline's maxps (bound_scores_impl.h: max_ae)
#endif

namespace wt::cpu {
namespace bs_base {
#define BS_LANES 4  // SSE2, NEON
#if defined(__aarch64__)
#define BS_HEADS 4  // NEON's 32 registers hold four heads' sums
#else
#define BS_HEADS 1  // SSE2's 16 registers: one head's sums and a block's bounds
#endif
#include "bound_scores_impl.h"
#undef BS_HEADS
#undef BS_LANES
}  // namespace bs_base

#if defined(__x86_64__)
namespace bs_avx2 {
BoundScoreSteps steps();
}  // namespace bs_avx2
namespace bs_avx512 {
BoundScoreSteps steps();
}  // namespace bs_avx512
#endif

namespace {
IsaChoice g_isa;  // a test's choice

const BoundScoreSteps kBase = {bs_base::bound_dots, bs_base::log_softmax_rows, bs_base::block_log_sums};

// Each worker's floats of the dot products' workspace (the same in every build).
int64_t dots_floats(int64_t n_head) { return bs_base::bound_dots_floats(n_head); }
}  // namespace

bool set_bound_scores_isa_for_testing(const char* name) { return g_isa.set(name); }

size_t bound_scores_workspace_bytes(int64_t head_dim, int64_t n_head, int64_t n_head_kv, int64_t n_blocks,
                                    int n_threads) {
  (void)head_dim;  // the dot products keep no copy of the query
  (void)n_head_kv;
  return sizeof(float) * static_cast<size_t>(n_head * n_blocks + n_threads * dots_floats(n_head));
}

void bound_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& bounds, float scale,
                  void* workspace) {
  const int64_t n_head = q.ne[1], n_blocks = dst.ne[0];
  float* logp = static_cast<float*>(workspace);  // [n_head][n_blocks]
  float* ws = logp + n_head * n_blocks + tc.ith * dots_floats(n_head);
  BoundScoreSteps run = kBase;
#if defined(__x86_64__)
  const VecIsa isa = g_isa.get();
  if (isa == VecIsa::avx512) run = bs_avx512::steps();
  else if (isa == VecIsa::avx2) run = bs_avx2::steps();
#endif
  int64_t b0, b1;
  tc.split(n_blocks, &b0, &b1);
  run.dots(q, bounds, scale, n_blocks, b0, b1, ws, logp);
  tc.sync();
  int64_t h0, h1;
  tc.split(n_head, &h0, &h1);
  run.rows(logp, n_blocks, h0, h1);
  tc.sync();
  run.blocks(logp, static_cast<float*>(dst.data), n_head, n_blocks, b0, b1);
}

}  // namespace wt::cpu
