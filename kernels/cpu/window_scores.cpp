// window_scores: the attention the last W queries pay to each key (SnapKV's observation
// window), per query or summed.
//
// Softmax mode needs each query's max and sum over all the keys it sees before any
// probability is final, and the summed output mixes W different normalizers, so there are
// two phases instead of an n_keys-wide score row per query: (1) running max/sum per (head,
// query) over the visible keys, flash-style; (2) after a barrier, scores again for the
// scored columns only, normalized, written or summed. Phase 2 is split by column block, so
// each worker owns whole dst columns and the sum needs no atomics. Both phases transpose a
// 64-key block once and reuse it for every query row of the KV head (as attention_impl.h),
// which keeps the dot products in vector registers with no horizontal sums. A softmax
// window of one row (a decode step's own scores) goes to one_row_scores.h instead, which
// reads the keys once, in place, as decode attention does.
//
// The body is window_scores_impl.h, compiled baseline, AVX2 and AVX-512 like the attention
// kernel and picked here at run time: the 64-lane accumulators do not fit the 16 xmm
// registers of the baseline build, which is an order of magnitude slower than AVX-512.
#include <cstdint>
#include <cstring>

#include "fast_math.h"
#include "one_row_scores.h"
#include "ops_cpu.h"
#include "quant.h"
#include "vector_isa.h"

namespace wt::cpu {
namespace ws_base {
#define WS_LANES 4  // native float vector width
#include "window_scores_impl.h"
#undef WS_LANES
}  // namespace ws_base

#if defined(__x86_64__)
namespace ws_avx2 {
void run(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, const WindowScoresParams&, void*);
}  // namespace ws_avx2
namespace ws_avx512 {
void run(const ThreadCtx&, const Tensor&, const Tensor&, const Tensor&, const WindowScoresParams&, void*);
}  // namespace ws_avx512
#endif

namespace {
IsaChoice g_isa;  // a test's choice
}  // namespace

bool set_window_scores_isa_for_testing(const char* name) { return g_isa.set(name); }

size_t window_scores_workspace_bytes(int64_t head_dim, int64_t n_head, int32_t window, int n_threads) {
  const int64_t w = window > 0 ? window : 0;
  const size_t two_phase = sizeof(float) * static_cast<size_t>(n_head * w * 2 + n_threads * head_dim * ws_base::kBK);
  if (w != 1) return two_phase;
  const size_t one_row = one_row_scores_workspace_bytes(n_head, n_threads);  // a softmax row
  return one_row > two_phase ? one_row : two_phase;
}

void window_scores(const ThreadCtx& tc, const Tensor& dst, const Tensor& q, const Tensor& k,
                   const WindowScoresParams& p, void* workspace) {
  const VecIsa isa = g_isa.get();
  const int64_t n = q.ne[2], n_keys = k.ne[2];
  const int64_t w = p.window < n ? (p.window > 0 ? p.window : 0) : n;  // as the kernel clamps it
  if (p.softmax && w == 1 && n_keys > 0) {
    Tensor d = dst;  // the scored columns: at most the keys
    d.ne[0] = dst.ne[0] < n_keys ? dst.ne[0] : n_keys;
    const int64_t vis = p.n_visible > 0 && p.n_visible < n_keys ? p.n_visible : n_keys;
    return one_row_scores(isa, tc, d, q, k, vis, p.scale, workspace);
  }
#if defined(__x86_64__)
  if (isa == VecIsa::avx512) return ws_avx512::run(tc, dst, q, k, p, workspace);
  if (isa == VecIsa::avx2) return ws_avx2::run(tc, dst, q, k, p, workspace);
#endif
  ws_base::window_scores_impl(tc, dst, q, k, p, workspace);
}

}  // namespace wt::cpu
