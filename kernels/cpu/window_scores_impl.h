// The window_scores kernel body (see window_scores.cpp), compiled once per ISA like
// attention_impl.h: window_scores.cpp (baseline), window_scores_avx2.cpp,
// window_scores_avx512.cpp; window_scores.cpp picks one at run time. The baseline x86 build
// has 16 xmm registers, fewer than the 64-lane score accumulators need, so it is several
// times slower. Include only from those files, inside a namespace of their own.

#include <cstdint>
#include <cstring>

#include "../tensor.h"
#include "fast_math.h"
#include "ops_cpu.h"
#include "thread_ctx.h"

constexpr int64_t kBK = 64;       // keys per block
constexpr int64_t kMaxRows = 64;  // query rows per phase-1 unit (before rounding to heads)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef float F16v __attribute__((vector_size(64)));
static inline F16v load16(const float* p) {
  F16v v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store16(float* p, F16v v) { std::memcpy(p, &v, sizeof v); }

// Keys [j0, j0 + nb) of KV head g as kt[hd][kBK]; the columns past nb are zeroed so the
// full-width dot products below never read stale floats (NaN or denormal slow paths).
static inline void load_block(const wt::Tensor& k, int64_t g, int64_t j0, int64_t nb, float* kt) {
  const int64_t hd = k.ne[0];
  for (int64_t jj = 0; jj < nb; ++jj) {
    const float* kr = k.row<float>(g, j0 + jj);
    for (int64_t d = 0; d < hd; ++d) kt[d * kBK + jj] = kr[d];
  }
  if (nb < kBK)
    for (int64_t d = 0; d < hd; ++d) std::memset(kt + d * kBK + nb, 0, sizeof(float) * static_cast<size_t>(kBK - nb));
}

// s[0..kBK) = scale * (q . key column) of the block.
static inline void block_dots(const float* q, const float* kt, int64_t hd, float scale, float* s) {
  F16v s0 = {}, s1 = {}, s2 = {}, s3 = {};
  for (int64_t d = 0; d < hd; ++d) {
    const float qd = q[d] * scale;
    const float* row = kt + d * kBK;
    s0 += qd * load16(row);
    s1 += qd * load16(row + 16);
    s2 += qd * load16(row + 32);
    s3 += qd * load16(row + 48);
  }
  store16(s, s0);
  store16(s + 16, s1);
  store16(s + 32, s2);
  store16(s + 48, s3);
}

// The last key row window query i sees (may be < 0): i_vis - W + i, within the keys.
static inline int64_t last_key(int64_t i_vis, int64_t W, int64_t n_keys, int64_t i) {
  const int64_t j = i_vis - W + i;
  return j < n_keys - 1 ? j : n_keys - 1;
}

static void window_scores_impl(const wt::cpu::ThreadCtx& tc, const wt::Tensor& dst, const wt::Tensor& q,
                               const wt::Tensor& k, const wt::cpu::WindowScoresParams& p, void* workspace) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n = q.ne[2];
  const int64_t n_head_kv = k.ne[1], n_keys = k.ne[2];
  const int64_t group = n_head / n_head_kv;
  const int64_t n_cols = dst.ne[0] < n_keys ? dst.ne[0] : n_keys;
  const int64_t W = p.window < n ? (p.window > 0 ? p.window : 0) : n;
  const int64_t q_first = n - W;  // q row of window query 0
  // Query i sees key rows 0..i_vis - W + i.
  const int64_t i_vis = p.n_visible > 0 ? p.n_visible : n_keys;
  float* ml = static_cast<float*>(workspace);  // [n_head][W][2]: max, sum
  float* kt = ml + n_head * W * 2 + tc.ith * hd * kBK;

  if (p.softmax && W > 0) {
    // Phase 1: units of (kv head, query chunk), the chunks as even as possible.
    const int64_t bq_max = kMaxRows / group > 0 ? kMaxRows / group : 1;
    const int64_t n_qc = (W + bq_max - 1) / bq_max;
    const int64_t bq = (W + n_qc - 1) / n_qc;
    alignas(64) float s[kBK];
    for (int64_t u = tc.ith; u < n_head_kv * n_qc; u += tc.nth) {
      const int64_t g = u / n_qc, qc = u % n_qc;
      const int64_t i0 = qc * bq, i1 = (i0 + bq) < W ? (i0 + bq) : W;
      for (int64_t h = 0; h < group; ++h) {
        for (int64_t i = i0; i < i1; ++i) {
          float* st = ml + ((g * group + h) * W + i) * 2;
          st[0] = -1e30f;  // finite, so exp(m_old - m_new) is defined on the first block
          st[1] = 0.0f;
        }
      }
      const int64_t jb = last_key(i_vis, W, n_keys, i1 - 1) + 1;
      for (int64_t j0 = 0; j0 < jb; j0 += kBK) {
        const int64_t nb = (jb - j0) < kBK ? (jb - j0) : kBK;
        load_block(k, g, j0, nb, kt);
        for (int64_t h = 0; h < group; ++h) {
          const int64_t head = g * group + h;
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t visible = last_key(i_vis, W, n_keys, i) - j0 + 1;
            if (visible <= 0) continue;
            const int64_t nv = visible < nb ? visible : nb;
            block_dots(q.row<float>(head, q_first + i), kt, hd, p.scale, s);
            float* st = ml + (head * W + i) * 2;
            float m_new = st[0];
            for (int64_t jj = 0; jj < nv; ++jj) m_new = s[jj] > m_new ? s[jj] : m_new;
            float sum = 0.0f;
            for (int64_t jj = 0; jj < nv; ++jj) sum += wt::cpu::fast_exp(s[jj] - m_new);
            st[1] = st[1] * wt::cpu::fast_exp(st[0] - m_new) + sum;
            st[0] = m_new;
          }
        }
      }
    }
    tc.sync();
  }

  // Phase 2: units of (kv head, 64-column block); each owns those columns of its heads.
  const int64_t n_cb = (n_cols + kBK - 1) / kBK;
  alignas(64) float s[kBK];
  alignas(64) float acc[kBK];
  for (int64_t u = tc.ith; u < n_head_kv * n_cb; u += tc.nth) {
    const int64_t g = u % n_head_kv, j0 = (u / n_head_kv) * kBK;
    const int64_t nb = (n_cols - j0) < kBK ? (n_cols - j0) : kBK;
    const size_t bytes = sizeof(float) * static_cast<size_t>(nb);
    load_block(k, g, j0, nb, kt);
    for (int64_t h = 0; h < group; ++h) {
      const int64_t head = g * group + h;
      std::memset(acc, 0, sizeof acc);
      for (int64_t i = 0; i < W; ++i) {
        const float* qr = q.row<float>(head, q_first + i);
        if (p.softmax) {
          const int64_t visible = last_key(i_vis, W, n_keys, i) - j0 + 1;
          const int64_t nv = visible <= 0 ? 0 : (visible < nb ? visible : nb);
          const float* st = ml + (head * W + i) * 2;
          if (nv > 0) {
            block_dots(qr, kt, hd, p.scale, s);
            const float inv = 1.0f / st[1];  // st[1] >= 1: the max term is exp(0)
            for (int64_t jj = 0; jj < nv; ++jj) s[jj] = wt::cpu::fast_exp(s[jj] - st[0]) * inv;
          }
          for (int64_t jj = nv; jj < nb; ++jj) s[jj] = 0.0f;
        } else {
          block_dots(qr, kt, hd, 1.0f, s);
        }
        if (p.per_query) {
          std::memcpy(dst.row<float>(head, i) + j0, s, bytes);
        } else {
          for (int64_t jj = 0; jj < kBK; ++jj) acc[jj] += s[jj];
        }
      }
      if (!p.per_query) std::memcpy(dst.row<float>(head, 0) + j0, acc, bytes);
    }
  }
}

