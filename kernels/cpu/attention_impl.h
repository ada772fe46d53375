// The attention kernel body, compiled once per ISA (attention.cpp baseline,
// attention_avx2.cpp, attention_avx512.cpp) so the compiler vectorizes the inner loops for
// each; attention.cpp picks one at run time. Include only from those files, inside a
// namespace of their own.
//
// Flash-style: queries are processed in tiles of rows (the G query heads of one KV head ×
// BQ positions) against key blocks of BK; each row keeps a running max m, sum l and
// accumulator acc (online softmax), so no n × n score matrix ever exists.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/tensor.h"
#include "fast_math.h"
#include "quant.h"
#include "thread_ctx.h"

constexpr int64_t kBK = 64;        // keys per block
constexpr int64_t kMaxRows = 64;   // query rows per tile
constexpr int64_t kMaxHeadDim = 256;

// 16 floats as one value (GCC/clang vector extension): one zmm register in the AVX-512
// build, two ymm in the AVX2 build, four xmm in the baseline build — one source for all.
// The helpers are static and always inlined, so the vector ABI GCC and clang warn about
// never applies.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef float F16v __attribute__((vector_size(64)));
static inline F16v load16(const float* p) {
  F16v v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store16(float* p, F16v v) { std::memcpy(p, &v, sizeof v); }

// KV of f16 (the half-precision cache) as f32: n values from src into dst. The rest of the
// kernel then runs exactly as over an f32 cache holding the same (rounded) values, so its
// results are the f32 kernel's on those values, bit for bit. With F16C (the AVX2 and
// AVX-512 builds define WT_ATTN_F16C) eight at a time; else one by one.
static inline void kv_to_f32(const float* src, float* dst, int64_t n) {
  std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
}
static inline void kv_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(WT_ATTN_F16C)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = wt::cpu::f16_to_f32(src[i]);
}

// One q8_0 block of a KV cache row (ggml's layout: an f16 scale, then 32 int8 values), as
// f32 d * q: the values dequantize gives (quant.h), in a loop the compiler vectorizes.
struct KvQ8 {
  uint16_t d;
  int8_t q[32];
};
static_assert(sizeof(KvQ8) == 34, "q8_0 blocks are 34 bytes");
static inline void kv_to_f32(const KvQ8* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
#if defined(WT_ATTN_F16C)
    const float d = _cvtsh_ss(src[b].d);  // exact, as f16_to_f32
#else
    const float d = wt::cpu::f16_to_f32(src[b].d);
#endif
    for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(src[b].q[j]);
  }
}

// Per-worker scratch for one tile.
struct TileScratch {
  float kt[kMaxHeadDim * kBK];  // key block transposed: [hd][BK]
  float vb[kBK * kMaxHeadDim];  // value block as f32 when the cache is f16 or q8_0: [BK][hd]
  float s[kMaxRows * kBK];      // scores / probabilities of the block
  float acc[kMaxRows * kMaxHeadDim];
  float m[kMaxRows];
  float l[kMaxRows];
};

struct TileRows {
  const float* q[kMaxRows];  // query vectors
  int64_t pos[kMaxRows];     // their positions (keys 0..pos are visible)
  int64_t n = 0;
};

#include "vec_exp.h"
typedef int32_t I16v __attribute__((vector_size(64)));

// Sum of the 16 lanes (halves added pairwise: the same order in every build). Shuffles,
// not memcpy of the halves, which GCC routes through the stack.
static inline float hsum16(F16v v) {
  typedef float F8v __attribute__((vector_size(32)));
  typedef float F4v __attribute__((vector_size(16)));
  const F8v s8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const F4v s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

static inline float dot_rows(const float* a, const float* b, int64_t n) {
  F16v acc0 = {}, acc1 = {};
  int64_t d = 0;
  for (; d + 32 <= n; d += 32) {
    acc0 += load16(a + d) * load16(b + d);
    acc1 += load16(a + d + 16) * load16(b + d + 16);
  }
  if (d + 16 <= n) {
    acc0 += load16(a + d) * load16(b + d);
    d += 16;
  }
  float s = hsum16(acc0 + acc1);
  for (; d < n; ++d) s += a[d] * b[d];
  return s;
}

// The online-softmax update of rows [r_begin, r_end) by a block of nb keys starting at key
// j0 (their scores in ts->s, or with !kDirect the block transposed in ts->kt), vrow(jj)
// the block's value row jj as f32.
template <bool kDirect, typename VRow>
static inline void update_rows(const TileRows& rows, int64_t r_begin, int64_t r_end, int64_t j0, int64_t nb,
                               int64_t hd, float scale, VRow vrow, TileScratch* ts) {
  for (int64_t r = r_begin; r < r_end; ++r) {
    const int64_t visible = rows.pos[r] - j0 + 1;  // keys of this block the row may see
    if (visible <= 0) continue;
    const int64_t nv = visible < nb ? visible : nb;
    float* s = ts->s + r * kBK;
    const float* q = rows.q[r];
    if constexpr (!kDirect) {
      // Scores of the whole key block, accumulated in registers (4 x 16 lanes = kBK).
      F16v s0 = {}, s1 = {}, s2 = {}, s3 = {};
      for (int64_t d = 0; d < hd; ++d) {
        const float qd = q[d] * scale;
        const float* kt = ts->kt + d * kBK;
        s0 += qd * load16(kt);
        s1 += qd * load16(kt + 16);
        s2 += qd * load16(kt + 32);
        s3 += qd * load16(kt + 48);
      }
      store16(s, s0);
      store16(s + 16, s1);
      store16(s + 32, s2);
      store16(s + 48, s3);
    }
    float m_new = ts->m[r];
    for (int64_t jj = 0; jj < nv; ++jj) m_new = s[jj] > m_new ? s[jj] : m_new;
    const float alpha = wt::cpu::fast_exp(ts->m[r] - m_new);
    // The exponentials 16 at a time (vec_exp.h), then their sum in key order (a float sum
    // is not reordered).
    int64_t je = 0;
    for (; je + 16 <= nv; je += 16) store16(s + je, vec_exp<F16v, I16v>(load16(s + je) - m_new));
    for (; je < nv; ++je) s[je] = wt::cpu::fast_exp(s[je] - m_new);
    float sum = 0.0f;
    for (int64_t jj = 0; jj < nv; ++jj) sum += s[jj];
    ts->m[r] = m_new;
    ts->l[r] = ts->l[r] * alpha + sum;
    float* acc = ts->acc + r * hd;
    if (hd % 64 == 0) {
      // 64 output lanes at a time stay in registers across the whole key block.
      for (int64_t d0 = 0; d0 < hd; d0 += 64) {
        F16v a0 = load16(acc + d0) * alpha, a1 = load16(acc + d0 + 16) * alpha;
        F16v a2 = load16(acc + d0 + 32) * alpha, a3 = load16(acc + d0 + 48) * alpha;
        for (int64_t jj = 0; jj < nv; ++jj) {
          const float p = s[jj];
          const float* vr = vrow(jj) + d0;
          a0 += p * load16(vr);
          a1 += p * load16(vr + 16);
          a2 += p * load16(vr + 32);
          a3 += p * load16(vr + 48);
        }
        store16(acc + d0, a0);
        store16(acc + d0 + 16, a1);
        store16(acc + d0 + 32, a2);
        store16(acc + d0 + 48, a3);
      }
    } else {
      for (int64_t d = 0; d < hd; ++d) acc[d] *= alpha;
      for (int64_t jj = 0; jj < nv; ++jj) {
        const float p = s[jj];
        const float* vr = vrow(jj);
        for (int64_t d = 0; d < hd; ++d) acc[d] += p * vr[d];
      }
    }
  }
}

// Prefill: accumulates keys [ja, jb) of KV head g into the running state of the tile's rows
// (the query heads of g at up to 64 positions). T: the cache's element, float, uint16_t
// (f16 bits) or KvQ8 (q8_0 blocks); f16 and q8_0 rows are converted once into the scratch.
// Templates rather than run-time tests so the dense f32 path keeps its loops. The key block
// is transposed once and every row's 64 scores accumulate in registers (update_rows):
// transposing costs two scalar moves per key value, which only many rows repay (at depth
// 4096 it was 57% of a decode step; decode reads key rows as stored, attend_keys_heads).
template <typename T>
static inline void attend_keys_t(const TileRows& rows, const wt::Tensor& k, const wt::Tensor& v, int64_t g,
                                 int64_t ja, int64_t jb, float scale, TileScratch* ts) {
  constexpr bool kF32 = sizeof(T) == sizeof(float);
  const int64_t hd = k.ne[0];
  for (int64_t j0 = ja; j0 < jb; j0 += kBK) {
    const int64_t nb = (jb - j0) < kBK ? (jb - j0) : kBK;
    for (int64_t jj = 0; jj < nb; ++jj) {
      const float* kr = nullptr;
      if constexpr (kF32) {
        kr = k.row<float>(g, j0 + jj);
      } else {
        float* vrow = ts->vb + jj * hd;  // a staging row for the key, overwritten by V below
        kv_to_f32(k.row<T>(g, j0 + jj), vrow, hd);
        kr = vrow;
      }
      for (int64_t d = 0; d < hd; ++d) ts->kt[d * kBK + jj] = kr[d];
    }
    if constexpr (!kF32) {
      for (int64_t jj = 0; jj < nb; ++jj) kv_to_f32(v.row<T>(g, j0 + jj), ts->vb + jj * hd, hd);
    }
    // Row jj of the block's values as f32: the cache row itself, or its converted copy.
    auto vrow = [&](int64_t jj) -> const float* {
      if constexpr (kF32) return v.row<float>(g, j0 + jj);
      else return ts->vb + jj * hd;
    };
    update_rows</*kDirect=*/false>(rows, 0, rows.n, j0, nb, hd, scale, vrow, ts);
  }
}

// Prefill keys [ja, jb) of an f32, f16 or q8_0 cache.
static inline void attend_keys(const TileRows& rows, const wt::Tensor& k, const wt::Tensor& v, int64_t g,
                               int64_t ja, int64_t jb, float scale, TileScratch* ts) {
  if (k.type == wt::DType::q8_0) {
    attend_keys_t<KvQ8>(rows, k, v, g, ja, jb, scale, ts);
  } else if (k.type == wt::DType::f16) {
    attend_keys_t<uint16_t>(rows, k, v, g, ja, jb, scale, ts);
  } else {
    attend_keys_t<float>(rows, k, v, g, ja, jb, scale, ts);
  }
}

// Decode: keys [ja, jb) (cache rows ids[j] with kIds) of KV heads [g0, g1) for the tile's
// rows, grouped by KV head (rows [(g - g0) * group, (g - g0 + 1) * group) are head g's
// queries). Each score is a dot product of the query with the key row as stored. A cache
// row holds every KV head of a position side by side, so going through a block position by
// position, every head at each, reads the cache as one sequential stream; one head at a
// time reads 1 / n_head_kv of each span, which the hardware prefetchers follow far worse
// (2-core AMD EPYC host: the f16 KV of 5400 tokens read in 1.7-2.1 ms against 4.5).
// f16 and q8_0 keys and values of the block go to the scratch as f32 ([head][nb][hd] in kt
// and vb: heads_fit), the value rows and, into L2, the next block's rows prefetched on the
// way, so memory stays busy through the block's scores, softmax and value sums. f32 keys
// are read where they are, each position's prefetches beside its scores (a pass of
// prefetches alone made f32 decode 1.7x slower: a burst the fill buffers drop; the next
// block's prefetch gained nothing there).
static inline bool heads_fit(int64_t n_head, int64_t n_head_kv, int64_t hd) {
  return n_head <= kMaxRows && n_head_kv * kBK * hd <= kMaxHeadDim * kBK;
}

template <bool kIds, typename T>
static inline void attend_keys_heads(const TileRows& rows, const wt::Tensor& k, const wt::Tensor& v, int64_t g0,
                                     int64_t g1, int64_t group, int64_t ja, int64_t jb, float scale, TileScratch* ts,
                                     const int32_t* ids) {
  constexpr bool kF32 = sizeof(T) == sizeof(float);
  const int64_t hd = k.ne[0];
  for (int64_t j0 = ja; j0 < jb; j0 += kBK) {
    const int64_t nb = (jb - j0) < kBK ? (jb - j0) : kBK;
    for (int64_t jj = 0; jj < nb; ++jj) {
      const int64_t j = kIds ? ids[j0 + jj] : j0 + jj;
      const int64_t ahead = (j0 + jj + 8) < jb ? (j0 + jj + 8) : jb - 1;
      const int64_t ja8 = kIds ? ids[ahead] : ahead;
      for (int64_t g = g0; g < g1; ++g) {
        const char* kn = k.row<char>(g, ja8);
        const char* vn = v.row<char>(g, j);
        for (size_t b = 0; b < k.nb[1]; b += 64) {  // nb[1]: the bytes of one head's row
          __builtin_prefetch(kn + b);
          __builtin_prefetch(vn + b);
        }
        const int64_t r0 = (g - g0) * group;
        if constexpr (kF32) {
          const float* kr = k.row<float>(g, j);
          for (int64_t r = r0; r < r0 + group; ++r) ts->s[r * kBK + jj] = dot_rows(rows.q[r], kr, hd) * scale;
        } else {
          if (j0 + kBK < jb) {
            const int64_t next = (j0 + jj + kBK) < jb ? (j0 + jj + kBK) : jb - 1;
            const int64_t jn = kIds ? ids[next] : next;
            const char* kf = k.row<char>(g, jn);
            const char* vf = v.row<char>(g, jn);
            for (size_t b = 0; b < k.nb[1]; b += 64) {
              __builtin_prefetch(kf + b, 0, 2);
              __builtin_prefetch(vf + b, 0, 2);
            }
          }
          kv_to_f32(k.row<T>(g, j), ts->kt + ((g - g0) * kBK + jj) * hd, hd);
        }
      }
    }
    if constexpr (!kF32) {
      for (int64_t g = g0; g < g1; ++g)
        for (int64_t jj = 0; jj < nb; ++jj)
          for (int64_t r = (g - g0) * group; r < (g - g0 + 1) * group; ++r)
            ts->s[r * kBK + jj] = dot_rows(rows.q[r], ts->kt + ((g - g0) * kBK + jj) * hd, hd) * scale;
      for (int64_t jj = 0; jj < nb; ++jj) {
        const int64_t j = kIds ? ids[j0 + jj] : j0 + jj;
        for (int64_t g = g0; g < g1; ++g) kv_to_f32(v.row<T>(g, j), ts->vb + ((g - g0) * kBK + jj) * hd, hd);
      }
    }
    for (int64_t g = g0; g < g1; ++g) {
      auto vrow = [&](int64_t jj) -> const float* {
        if constexpr (kF32) return v.row<float>(g, kIds ? ids[j0 + jj] : j0 + jj);
        else return ts->vb + ((g - g0) * kBK + jj) * hd;
      };
      update_rows</*kDirect=*/true>(rows, (g - g0) * group, (g - g0 + 1) * group, j0, nb, hd, scale, vrow, ts);
    }
  }
}

static inline void attend_heads(const TileRows& rows, const wt::Tensor& k, const wt::Tensor& v, int64_t g0,
                                int64_t g1, int64_t group, int64_t ja, int64_t jb, float scale, TileScratch* ts,
                                const int32_t* ids) {
  if (k.type == wt::DType::q8_0) {
    if (ids) attend_keys_heads<true, KvQ8>(rows, k, v, g0, g1, group, ja, jb, scale, ts, ids);
    else attend_keys_heads<false, KvQ8>(rows, k, v, g0, g1, group, ja, jb, scale, ts, nullptr);
  } else if (k.type == wt::DType::f16) {
    if (ids) attend_keys_heads<true, uint16_t>(rows, k, v, g0, g1, group, ja, jb, scale, ts, ids);
    else attend_keys_heads<false, uint16_t>(rows, k, v, g0, g1, group, ja, jb, scale, ts, nullptr);
  } else {
    if (ids) attend_keys_heads<true, float>(rows, k, v, g0, g1, group, ja, jb, scale, ts, ids);
    else attend_keys_heads<false, float>(rows, k, v, g0, g1, group, ja, jb, scale, ts, nullptr);
  }
}

static inline void reset_rows(int64_t n_rows, int64_t hd, TileScratch* ts) {
  for (int64_t r = 0; r < n_rows; ++r) {
    // A finite floor instead of -inf keeps exp(m_old - m_new) well defined on the first block.
    ts->m[r] = -1e30f;
    ts->l[r] = 0.0f;
  }
  std::memset(ts->acc, 0, sizeof(float) * static_cast<size_t>(n_rows * hd));
}

// One prefill tile: query rows idx[0..n_idx) (ascending) of the query heads of KV head g.
static inline void prefill_tile(const wt::Tensor& dst, const wt::Tensor& q, const wt::Tensor& k, const wt::Tensor& v,
                                int64_t g, int64_t group, const int64_t* idx, int64_t n_idx, int32_t pos0,
                                float scale, TileScratch* ts) {
  const int64_t hd = q.ne[0];
  TileRows rows;
  for (int64_t t = 0; t < n_idx; ++t) {
    for (int64_t h = 0; h < group; ++h) {
      rows.q[rows.n] = q.row<float>(g * group + h, idx[t]);
      rows.pos[rows.n] = pos0 + idx[t];
      ++rows.n;
    }
  }
  reset_rows(rows.n, hd, ts);
  attend_keys(rows, k, v, g, 0, pos0 + idx[n_idx - 1] + 1, scale, ts);
  for (int64_t t = 0, r = 0; t < n_idx; ++t) {
    for (int64_t h = 0; h < group; ++h, ++r) {
      float* out = dst.row<float>(g * group + h, idx[t]);
      const float inv = 1.0f / ts->l[r];
      for (int64_t d = 0; d < hd; ++d) out[d] = ts->acc[r * hd + d] * inv;
    }
  }
}

static void prefill_impl(const wt::cpu::ThreadCtx& tc, const wt::Tensor& dst, const wt::Tensor& q,
                         const wt::Tensor& k, const wt::Tensor& v, int32_t pos0, float scale,
                         void* workspace, const int32_t* skip) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n = q.ne[2], n_head_kv = k.ne[1];
  const int64_t group = n_head / n_head_kv;
  const int64_t bq = kMaxRows / group > 0 ? kMaxRows / group : 1;
  TileScratch* ts = static_cast<TileScratch*>(workspace) + tc.ith;
  int64_t idx[kMaxRows];
  // Units are (kv head, query block); dealt round-robin so the long late blocks of the
  // causal triangle spread over all workers.
  if (!skip) {
    const int64_t n_qblocks = (n + bq - 1) / bq;
    for (int64_t u = tc.ith; u < n_head_kv * n_qblocks; u += tc.nth) {
      const int64_t g = u % n_head_kv;
      const int64_t qb = n_qblocks - 1 - u / n_head_kv;
      const int64_t q0 = qb * bq, q1 = (q0 + bq) < n ? (q0 + bq) : n;
      for (int64_t i = q0; i < q1; ++i) idx[i - q0] = i;
      prefill_tile(dst, q, k, v, g, group, idx, q1 - q0, pos0, scale, ts);
    }
    return;
  }
  // Token Filtering: the kept rows are packed bq at a time into full tiles (a row's result
  // does not depend on its tile mates, so it is the same bits as without skipping).
  int64_t r0, r1;
  tc.split(n, &r0, &r1);
  for (int64_t i = r0; i < r1; ++i) {
    if (skip[i] == 0) continue;
    for (int64_t h = 0; h < n_head; ++h) std::memset(dst.row<float>(h, i), 0, sizeof(float) * static_cast<size_t>(hd));
  }
  int64_t n_kept = 0;
  for (int64_t i = 0; i < n; ++i) n_kept += skip[i] == 0;
  const int64_t n_qblocks = (n_kept + bq - 1) / bq;
  for (int64_t u = tc.ith; u < n_head_kv * n_qblocks; u += tc.nth) {
    const int64_t g = u % n_head_kv;
    const int64_t qb = n_qblocks - 1 - u / n_head_kv;
    const int64_t q0 = qb * bq, q1 = (q0 + bq) < n_kept ? (q0 + bq) : n_kept;
    // Kept rows of rank [q0, q1): a scan of the flags, negligible next to the tile's work.
    int64_t n_idx = 0;
    for (int64_t i = 0, rank = 0; i < n && rank < q1; ++i) {
      if (skip[i] != 0) continue;
      if (rank >= q0) idx[n_idx++] = i;
      ++rank;
    }
    prefill_tile(dst, q, k, v, g, group, idx, n_idx, pos0, scale, ts);
  }
}

// One head's output from its chunks' partials (max, sum, weighted values) at p, p + step, ...
static inline void merge_partials(const float* p0, int64_t step, int64_t n_chunks, int64_t hd, float* out) {
  float m = -1e30f;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const float* p = p0 + c * step;
    m = p[0] > m ? p[0] : m;
  }
  for (int64_t d = 0; d < hd; ++d) out[d] = 0.0f;
  float l = 0.0f;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const float* p = p0 + c * step;
    if (p[1] == 0.0f) continue;
    const float w = wt::cpu::fast_exp(p[0] - m);
    l += p[1] * w;
    for (int64_t d = 0; d < hd; ++d) out[d] += p[2 + d] * w;
  }
  const float inv = 1.0f / l;
  for (int64_t d = 0; d < hd; ++d) out[d] *= inv;
}

// Decode: one position. A unit is a range of keys over a run of KV heads: every head where
// the rows and a key block of every head fit the tile (heads_fit: one sequential stream
// through the cache), one chunk of keys per worker; else one KV head, ceil(4 nth /
// n_head_kv) chunks of keys per head. Each unit leaves a partial (m, l, acc) per query head,
// [chunk][head][hd + 2] after the per-worker scratch, merged after a barrier. With ids, the
// keys are cache rows ids[0..n_ids) instead of 0..pos0.
static void decode_impl(const wt::cpu::ThreadCtx& tc, const wt::Tensor& dst, const wt::Tensor& q,
                        const wt::Tensor& k, const wt::Tensor& v, int32_t pos0, float scale,
                        void* workspace, const int32_t* ids, int32_t n_ids) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n_head_kv = k.ne[1];
  const int64_t group = n_head / n_head_kv;
  const int64_t n_keys = ids ? n_ids : pos0 + 1;
  if (n_keys <= 0) {  // an empty key set: the limit of attending to less and less is 0
    for (int64_t head = tc.ith; head < n_head; head += tc.nth)
      std::memset(dst.row<float>(head, 0), 0, sizeof(float) * static_cast<size_t>(hd));
    return;
  }
  const bool all_heads = heads_fit(n_head, n_head_kv, hd);
  const int64_t unit_heads = all_heads ? n_head_kv : 1;
  // The partials' room (attention_workspace_bytes) holds (4 nth + n_head_kv) x group heads'.
  const int64_t room = (4 * tc.nth + n_head_kv) / n_head_kv;
  int64_t n_chunks = all_heads ? (tc.nth < room ? tc.nth : room) : (4 * tc.nth + n_head_kv - 1) / n_head_kv;
  const int64_t max_chunks = (n_keys + kBK - 1) / kBK;
  n_chunks = n_chunks < max_chunks ? n_chunks : max_chunks;
  const int64_t per_chunk = ((n_keys + n_chunks - 1) / n_chunks + kBK - 1) / kBK * kBK;
  TileScratch* ts = static_cast<TileScratch*>(workspace) + tc.ith;
  float* partial = reinterpret_cast<float*>(static_cast<TileScratch*>(workspace) + tc.nth);
  const int64_t stride = hd + 2;
  const int64_t n_units = n_head_kv / unit_heads * n_chunks;
  for (int64_t u = tc.ith; u < n_units; u += tc.nth) {
    const int64_t g0 = u / n_chunks * unit_heads, c = u % n_chunks;
    const int64_t ja = c * per_chunk;
    const int64_t jb = (ja + per_chunk) < n_keys ? (ja + per_chunk) : n_keys;
    TileRows rows;
    for (int64_t head = g0 * group; head < (g0 + unit_heads) * group; ++head) {
      rows.q[rows.n] = q.row<float>(head, 0);
      rows.pos[rows.n] = n_keys - 1;
      ++rows.n;
    }
    reset_rows(rows.n, hd, ts);
    if (ja < jb) attend_heads(rows, k, v, g0, g0 + unit_heads, group, ja, jb, scale, ts, ids);
    for (int64_t r = 0; r < rows.n; ++r) {
      float* p = partial + (c * n_head + g0 * group + r) * stride;
      p[0] = ts->m[r];
      p[1] = ts->l[r];
      std::memcpy(p + 2, ts->acc + r * hd, sizeof(float) * static_cast<size_t>(hd));
    }
  }
  tc.sync();
  for (int64_t head = tc.ith; head < n_head; head += tc.nth)
    merge_partials(partial + head * stride, n_head * stride, n_chunks, hd, dst.row<float>(head, 0));
}
