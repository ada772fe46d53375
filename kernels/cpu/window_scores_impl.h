// The window_scores kernel body (the design is described in window_scores.cpp), compiled
// once per ISA like attention_impl.h: window_scores.cpp (baseline), window_scores_avx2.cpp,
// window_scores_avx512.cpp. Include only from those files, inside a namespace of their own.

#include <cstdint>
#include <cstring>

#include "kernels/tensor.h"
#include "fast_math.h"
#include "ops_cpu.h"
#include "thread_ctx.h"

constexpr int64_t kBK = 64;       // keys per block
constexpr int64_t kMaxRows = 64;  // query rows per phase-1 unit (before rounding to heads)

// Vectors of the ISA's native width, kLanes floats, set by the including file as WS_LANES
// (16 AVX-512, 8 AVX2, 4 SSE2/NEON). One 64-byte vector type for every ISA is a native
// register only with AVX-512: GCC keeps it in memory elsewhere and splits its compares into
// scalar code, which made the AVX2 build slower than the baseline one (attention's 16-lane
// F16v, vec16.h, is a struct of native vectors outside AVX-512 for the same reason).
constexpr int kLanes = WS_LANES;
constexpr int kAcc = static_cast<int>(kBK) / kLanes;  // vectors per block of scores
typedef float FNv __attribute__((vector_size(kLanes * 4)));
typedef int32_t INv __attribute__((vector_size(kLanes * 4)));
static inline FNv loadN(const float* p) {
  FNv v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void storeN(float* p, const FNv& v) { std::memcpy(p, &v, sizeof v); }

// Keys [j0, j0 + nb) of KV head g as kt[hd][kBK]; the columns past nb are zeroed so the
// full-width dot products below never read stale floats (NaN or denormal slow paths).
static inline void load_block(const wt::Tensor& k, int64_t g, int64_t j0, int64_t nb, float* kt) {
  const int64_t hd = k.ne[0];
  for (int64_t jj = 0; jj < nb; ++jj) {
    if (k.type != wt::DType::f32) {  // an f16 or q8_0 KV cache (the oracle's decode-time scores)
      // 32 values at a time (one q8_0 block): no buffer sized by head_dim.
      const char* kr = k.row<char>(g, j0 + jj);
      float part[32];
      for (int64_t d0 = 0; d0 < hd; d0 += 32) {
        const int64_t n = hd - d0 < 32 ? hd - d0 : 32;
        size_t offset = 0;
        wt::dtype_row_bytes(k.type, d0, &offset);
        wt::cpu::dequantize(k.type, kr + offset, part, n);
        for (int64_t d = 0; d < n; ++d) kt[(d0 + d) * kBK + jj] = part[d];
      }
    } else {
      const float* kr = k.row<float>(g, j0 + jj);
      for (int64_t d = 0; d < hd; ++d) kt[d * kBK + jj] = kr[d];
    }
  }
  if (nb < kBK)
    for (int64_t d = 0; d < hd; ++d) std::memset(kt + d * kBK + nb, 0, sizeof(float) * static_cast<size_t>(kBK - nb));
}

// s[0..kBK) = scale * (q . key column) of the block, the kBK sums in registers. With only
// 4 accumulators (AVX-512) the multiply-add latency would leave half the issue slots idle,
// so even and odd d then go to separate ones.
constexpr int kSplit = kAcc < 8 ? 2 : 1;
static inline void block_dots(const float* q, const float* kt, int64_t hd, float scale, float* s) {
  FNv acc[kSplit][kAcc] = {};
  int64_t d = 0;
  for (; d + kSplit <= hd; d += kSplit) {
    for (int h = 0; h < kSplit; ++h) {
      const FNv qd = FNv{} + q[d + h] * scale;
      const float* row = kt + (d + h) * kBK;
      for (int c = 0; c < kAcc; ++c) acc[h][c] += qd * loadN(row + c * kLanes);
    }
  }
  for (; d < hd; ++d) {
    const FNv qd = FNv{} + q[d] * scale;
    for (int c = 0; c < kAcc; ++c) acc[0][c] += qd * loadN(kt + d * kBK + c * kLanes);
  }
  for (int h = 1; h < kSplit; ++h)
    for (int c = 0; c < kAcc; ++c) acc[0][c] += acc[h][c];
  for (int c = 0; c < kAcc; ++c) storeN(s + c * kLanes, acc[0][c]);
}

#include "vec_exp.h"
// Lane select by a compare mask (the ?: on vectors is not taken by every compiler).
static inline FNv vsel(const INv& m, const FNv& a, const FNv& b) { return vec_select<FNv, INv>(m, a, b); }

// s[0..kBK) = exp(s - m) * scale, then 0 from lane nv on.
static inline void block_exp(float* s, float m, float scale, int64_t nv) {
  for (int64_t c = 0; c < kBK; c += kLanes) storeN(s + c, vec_exp<FNv, INv>(loadN(s + c) - m) * scale);
  for (int64_t jj = nv; jj < kBK; ++jj) s[jj] = 0.0f;
}
static inline float block_max(const float* s) {
  FNv m = loadN(s);
  for (int64_t c = kLanes; c < kBK; c += kLanes) {
    const FNv v = loadN(s + c);
    m = vsel(v > m, v, m);
  }
  float r = m[0];
  for (int i = 1; i < kLanes; ++i) r = m[i] > r ? m[i] : r;
  return r;
}
// The plain loop "sum += s[j]" stays scalar without -ffast-math (float sums may not be
// reordered); this one sums kLanes lanes at a time.
static inline float block_sum(const float* s) {
  FNv t = loadN(s);
  for (int c = 1; c < kAcc; ++c) t += loadN(s + c * kLanes);
  float r = 0.0f;
  for (int i = 0; i < kLanes; ++i) r += t[i];
  return r;
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
            for (int64_t jj = nv; jj < kBK; ++jj) s[jj] = -1e30f;
            const float bm = block_max(s);
            const float m_new = bm > st[0] ? bm : st[0];
            block_exp(s, m_new, 1.0f, nv);
            st[1] = st[1] * wt::cpu::fast_exp(st[0] - m_new) + block_sum(s);
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
            block_exp(s, st[0], 1.0f / st[1], nv);  // st[1] >= 1: the max term is exp(0)
          } else {
            for (int64_t jj = 0; jj < kBK; ++jj) s[jj] = 0.0f;
          }
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

