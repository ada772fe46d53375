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
#include <type_traits>

#include "kernels/tensor.h"
#include "fast_math.h"
#include "quant.h"
#include "thread_ctx.h"

constexpr int64_t kBK = 64;        // keys per block
// Query rows per tile: a prefill tile converts (f16, q8_0) and transposes every key block
// it attends once for all its rows, so the more rows, the less of that per row. Against 64
// rows (9 positions of Qwen2.5's 7 query heads per KV head), 128 took 0.91x the time and
// 256 (36 positions) about 0.82x at 4096 tokens (tests/bench_attention --prefill, 14/2
// heads, f16 KV; docs/results/cpu-attention.md). A row's arithmetic does not depend on its
// tile mates, so the tile size changes no bit.
constexpr int64_t kMaxRows = 256;
// Query rows of one decode unit (every KV head's query heads together, heads_fit): 64, as
// before the prefill tiles grew (the shapes the tests cover; models with more query heads
// take one KV head per unit).
constexpr int64_t kDecodeRows = 64;
constexpr int64_t kMaxHeadDim = 256;

// The vector helpers are static and always inlined, so the vector ABI GCC and clang warn
// about never applies.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#include "vec_exp.h"
#if defined(WT_ATTN_AVX512)
#define WT_VEC16_LANES 16
#elif defined(WT_ATTN_AVX2)
#define WT_VEC16_LANES 8
#else
#define WT_VEC16_LANES 4
#endif
#include "vec16.h"  // F16v: 16 floats as one value, in registers in every build
#undef WT_VEC16_LANES

#include "attention_kv.h"  // f32, f16 and q8_0 cache rows as f32

// Per-worker scratch for one tile.
struct TileScratch {
  float kt[kMaxHeadDim * kBK];  // prefill: key block transposed, [hd][BK]; decode: the
                                // rows' partial dot products with 16 keys, [row][16][16]
  float vb[kBK * kMaxHeadDim];  // value block as f32 when the cache is f16 or q8_0: [BK][hd]
  float s[kMaxRows * kBK];      // scores / probabilities of the block
  float acc[kMaxRows * kMaxHeadDim];
  float m[kMaxRows];
  float l[kMaxRows];
};
static_assert(sizeof(TileScratch::kt) >= sizeof(float) * kDecodeRows * 16 * 16, "decode's partial sums fit kt");
static_assert(kDecodeRows <= kMaxRows, "a decode unit's rows fit the tile");

struct TileRows {
  const float* q[kMaxRows];  // query vectors
  int64_t pos[kMaxRows];     // their positions (keys 0..pos are visible)
  int64_t n = 0;
  int64_t window = 0;        // > 0: keys pos - window + 1 .. pos only (a sliding-window layer)
};

// The online softmax of rows [r_begin, r_end) over the block's nv visible scores (row r's
// at ts->s + r * kBK): each row's new running max and sum, its scores replaced by their
// exponentials, and alpha[r], the factor that rescales its accumulator. Every exponential
// is vexp16's (vec_exp.h), which gives fast_exp's bits lane by lane: the rows' alphas go 16
// rows at a time and a row's last nv % 16 scores as one vector (one scalar fast_exp per
// row and block, and up to 15 more in a diagonal block, were 7% of a 4096-token prefill).
static inline void softmax_rows(int64_t r_begin, int64_t r_end, int64_t nv, TileScratch* ts, float* alpha) {
  alignas(64) float m_old[kMaxRows + 16], m_new[kMaxRows + 16];
  for (int64_t r = r_begin; r < r_end; ++r) {
    // The max 16 lanes at a time: exact in any order, and as the scalar loop a NaN score
    // never becomes the max (the lanes start from the running max, not from scores).
    const float* s = ts->s + r * kBK;
    float m = ts->m[r];
    int64_t jm = 0;
    if (nv >= 16) {
      F16v mv = splat16(m);
      for (; jm + 16 <= nv; jm += 16) mv = vmax16(mv, load16(s + jm));
      m = hmax16(mv);
    }
    for (; jm < nv; ++jm) m = s[jm] > m ? s[jm] : m;
    m_old[r - r_begin] = ts->m[r];
    m_new[r - r_begin] = m;
  }
  const int64_t n = r_end - r_begin;
  for (int64_t i = n; i < ((n + 15) & ~int64_t{15}); ++i) m_old[i] = m_new[i] = 0.0f;  // lanes past the rows
  for (int64_t i = 0; i < n; i += 16) {
    alignas(64) float a[16];
    store16(a, vexp16(load16(m_old + i) - load16(m_new + i)));
    for (int64_t k = 0; k < 16 && i + k < n; ++k) alpha[r_begin + i + k] = a[k];
  }
  for (int64_t r = r_begin; r < r_end; ++r) {
    // The exponentials summed in 16 lanes (hsum16's order, the same in every build), then
    // the last nv % 16 in key order: a sum in key order was a chain of 64 dependent adds
    // per row and key block.
    float* s = ts->s + r * kBK;
    const float m = m_new[r - r_begin];
    int64_t je = 0;
    F16v sv = {};
    for (; je + 16 <= nv; je += 16) {
      const F16v e = vexp16(load16(s + je) - m);
      store16(s + je, e);
      sv += e;
    }
    float sum = hsum16(sv);
    if (je < nv) {
      alignas(64) float t[16] = {};
      std::memcpy(t, s + je, sizeof(float) * static_cast<size_t>(nv - je));
      store16(t, vexp16(load16(t) - m));
      for (int64_t k = 0; je + k < nv; ++k) {
        s[je + k] = t[k];
        sum += t[k];
      }
    }
    ts->m[r] = m;
    ts->l[r] = ts->l[r] * alpha[r] + sum;
  }
}

// Query rows handled together (decode's dot products and value sums, prefill's value sums),
// so each key or value row read from the cache (and converted, for f16 and q8_0) serves
// several rows from registers, and the value lanes a
// pass keeps in registers (in F16v): 4 rows x 4 F16v of accumulators plus 4 of values fit
// the 32 registers of AVX-512; 2 x 2 plus 2 fit the 16 of AVX2 (an F16v is two) and the 32
// of NEON (an F16v is four).
#if defined(WT_ATTN_AVX512)
constexpr int kRowBatch = 4;
constexpr int kValueVecs = 4;
#else
constexpr int kRowBatch = 2;
constexpr int kValueVecs = 2;
#endif

// f(std::integral_constant<int, R>, r) for the rows [r_begin, r_end) in batches of R rows
// starting at r, R at most kRowBatch: a compile-time count, so the batch lives in registers.
template <typename F>
static inline void for_row_batches(int64_t r_begin, int64_t r_end, F f) {
  int64_t r = r_begin;
  for (; r + kRowBatch <= r_end; r += kRowBatch) f(std::integral_constant<int, kRowBatch>{}, r);
  switch (r_end - r) {
    case 1: f(std::integral_constant<int, 1>{}, r); break;
    case 2: if constexpr (kRowBatch > 2) f(std::integral_constant<int, 2>{}, r); break;
    case 3: if constexpr (kRowBatch > 3) f(std::integral_constant<int, 3>{}, r); break;
    default: break;
  }
}

// The last n - d values (n % 16 of them) of R rows' dot products, added to lane 0 of each
// row's partial sums in part. std::fma: the same rounding whether or not the compiler would
// fuse (it did for one KV type and not another in the AVX2 build). Out of line: tails are
// rare (head_dim % 16 != 0), and inlined, their scalar loop made GCC keep dot_rows_batch's
// accumulators on the stack.
template <typename T>
__attribute__((noinline)) static void dot_rows_tail(const float* const* q, const T* b, int64_t d, int64_t n, int R,
                                                    float* part) {
  for (int i = 0; i < R; ++i) {
    float t = part[i * 256];
    for (int64_t e = d; e < n; ++e) t = std::fma(q[i][e], kv_elem(b, e), t);
    part[i * 256] = t;
  }
}

// The dot products of R query rows with one cache row b of n values, each as a 16-lane
// vector of partial sums (part[i * 256], for hsum16x16 to add up), each 16 values of b
// loaded (and converted) once for all R rows. Per row the same float order whatever R is:
// two 16-lane partial sums (even and odd 16s) added, and a tail of n % 16 values in lane 0.
template <int R, typename T>
static inline void dot_rows_batch(const float* const* q, const T* b, int64_t n, float* part) {
  F16v acc0[R] = {}, acc1[R] = {};
  int64_t d = 0;
  for (; d + 32 <= n; d += 32) {
    F16v b0, b1;
    load32k(b, d, &b0, &b1);
    for (int i = 0; i < R; ++i) {
      acc0[i] += load16(q[i] + d) * b0;
      acc1[i] += load16(q[i] + d + 16) * b1;
    }
  }
  if (d + 16 <= n) {
    const F16v b0 = load16k(b, d);
    for (int i = 0; i < R; ++i) acc0[i] += load16(q[i] + d) * b0;
    d += 16;
  }
  for (int i = 0; i < R; ++i) store16(part + i * 256, acc0[i] + acc1[i]);
  if (d < n) dot_rows_tail(q, b, d, n, R, part);
}

// The online-softmax update of rows [r_begin, r_end), which all see the block's first nv
// keys (one position's query heads in decode; in prefill also whole positions past the
// diagonal), by their scores in ts->s: each row's running max and sum, then its accumulator
// rescaled and the value rows added in key order. vrow(jj) is the block's value row jj, as
// stored in the cache (decode) or as f32 (prefill); each is read (and converted) once per
// batch of rows.
template <typename VRow>
static inline void accumulate_rows(int64_t r_begin, int64_t r_end, int64_t nv, int64_t hd, VRow vrow,
                                   TileScratch* ts) {
  float alpha[kMaxRows];
  softmax_rows(r_begin, r_end, nv, ts, alpha);
  if (hd % (16 * kValueVecs) != 0) {  // head sizes such as 48 or 80: 16 lanes of one row at a time
    for (int64_t r = r_begin; r < r_end; ++r) {
      float* acc = ts->acc + r * hd;
      const float* s = ts->s + r * kBK;
      int64_t d0 = 0;
      for (; d0 + 16 <= hd; d0 += 16) {
        F16v a = load16(acc + d0) * alpha[r];
        for (int64_t jj = 0; jj < nv; ++jj) a += s[jj] * load16k(vrow(jj), d0);
        store16(acc + d0, a);
      }
      // The last hd % 16 lanes (no q8_0 row has them); std::fma, so the rounding is the
      // same whichever KV type the row is read from.
      for (int64_t d = d0; d < hd; ++d) {
        acc[d] *= alpha[r];
        for (int64_t jj = 0; jj < nv; ++jj) acc[d] = std::fma(s[jj], kv_elem(vrow(jj), d), acc[d]);
      }
    }
    return;
  }
  for_row_batches(r_begin, r_end, [&](auto batch, int64_t r0) {
    constexpr int R = decltype(batch)::value;
    // 16 kValueVecs output lanes of R rows stay in registers across the whole key block.
    for (int64_t d0 = 0; d0 < hd; d0 += 16 * kValueVecs) {
      F16v a[R][kValueVecs];
      for (int i = 0; i < R; ++i)
        for (int c = 0; c < kValueVecs; ++c) a[i][c] = load16(ts->acc + (r0 + i) * hd + d0 + 16 * c) * alpha[r0 + i];
      for (int64_t jj = 0; jj < nv; ++jj) {
        const auto* vr = vrow(jj);
        F16v vv[kValueVecs];
        for (int c = 0; c < kValueVecs; c += 2) load32k(vr, d0 + 16 * c, &vv[c], &vv[c + 1]);
        for (int i = 0; i < R; ++i) {
          const float p = ts->s[(r0 + i) * kBK + jj];
          for (int c = 0; c < kValueVecs; ++c) a[i][c] += p * vv[c];
        }
      }
      for (int i = 0; i < R; ++i)
        for (int c = 0; c < kValueVecs; ++c) store16(ts->acc + (r0 + i) * hd + d0 + 16 * c, a[i][c]);
    }
  });
}

// Prefill's scores of R query rows against the block's keys, transposed in ts->kt, into
// s + i * kBK: every kt row loaded once for the R rows, whose 4 x R accumulators are
// independent chains of multiply-adds (4 chains alone wait on the FMA latency: half the
// AVX-512 units' rate). Per row the arithmetic of one row alone.
template <int R>
static inline void block_scores(const float* const* q, int64_t hd, float scale, const TileScratch* ts, float* s) {
  // The rows times scale first, each product the one the loop below used to make per key
  // block, so the loop takes each factor from memory as a broadcast operand instead of a
  // multiply and a register broadcast per row and dimension (perf annotate: the prefill's
  // hottest loop). Timed only together with the 128-row tiles (docs/results/
  // cpu-attention.md); alone it was within the host's noise.
  alignas(64) float qs[R][kMaxHeadDim];
  for (int i = 0; i < R; ++i) {
    int64_t d = 0;
    for (; d + 16 <= hd; d += 16) store16(qs[i] + d, load16(q[i] + d) * scale);
    for (; d < hd; ++d) qs[i][d] = q[i][d] * scale;
  }
  F16v a[R][4] = {};
  for (int64_t d = 0; d < hd; ++d) {
    const float* kt = ts->kt + d * kBK;
    const F16v k0 = load16(kt), k1 = load16(kt + 16), k2 = load16(kt + 32), k3 = load16(kt + 48);
    for (int i = 0; i < R; ++i) {
      const float qd = qs[i][d];
      a[i][0] += qd * k0;
      a[i][1] += qd * k1;
      a[i][2] += qd * k2;
      a[i][3] += qd * k3;
    }
  }
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < 4; ++c) store16(s + i * kBK + 16 * c, a[i][c]);
}

// Rows scored together by block_scores: 4 rows x 4 F16v of accumulators fit AVX-512's 32
// registers; with AVX2 and NEON one row's 4 F16v are already 8 or 16 registers (8 or 16
// independent chains).
#if defined(WT_ATTN_AVX512)
constexpr int kScoreRows = 4;
#else
constexpr int kScoreRows = 1;
#endif

// Prefill's online-softmax update of rows [0, rows.n) by a block of nb keys starting at key
// j0, transposed in ts->kt; vrow(jj) is the block's value row jj as f32. Rows that see the
// same keys (the query heads of one position, and whole positions once the block is past
// the diagonal) go together: their scores share the key loads (block_scores) and their
// value sums the value loads (accumulate_rows). Each row's arithmetic is that of a row
// alone; the last head_dim % 16 value lanes use std::fma (accumulate_rows), so a build
// without FMA (SSE2) rounds those lanes once where a separate multiply and add rounded twice.
template <typename VRow>
static inline void update_rows(const TileRows& rows, int64_t j0, int64_t nb, int64_t hd, float scale, VRow vrow,
                               TileScratch* ts) {
  auto visible = [&](int64_t r) -> int64_t {  // keys of this block row r may see
    const int64_t v = rows.pos[r] - j0 + 1;
    const int64_t nv = v < nb ? v : nb;
    // A window that starts past this block's visible keys leaves the row nothing here.
    return rows.window > 0 && rows.pos[r] - rows.window + 1 >= j0 + nv ? 0 : nv;
  };
  for (int64_t r = 0; r < rows.n;) {
    const int64_t nv = visible(r);
    if (nv <= 0) {
      ++r;
      continue;
    }
    int64_t r_end = r + 1;
    while (r_end < rows.n && r_end - r < kRowBatch && visible(r_end) == nv) ++r_end;
    for (int64_t i = r; i < r_end;) {
      if constexpr (kScoreRows >= 4) {
        if (r_end - i >= 4) {
          block_scores<4>(rows.q + i, hd, scale, ts, ts->s + i * kBK);
          i += 4;
          continue;
        }
      }
      if constexpr (kScoreRows >= 2) {
        if (r_end - i >= 2) {
          block_scores<2>(rows.q + i, hd, scale, ts, ts->s + i * kBK);
          i += 2;
          continue;
        }
      }
      block_scores<1>(rows.q + i, hd, scale, ts, ts->s + i * kBK);
      ++i;
    }
    // Keys before a row's window score -1e30: each row has a visible key in this block
    // (visible()), whose score bounds the max, so theirs come out of the softmax as
    // fast_exp's floor, exp(-87): at most 1.6e-38 of the weight the largest gets, lost in
    // the sum and negligible in the output.
    if (rows.window > 0) {
      for (int64_t i = r; i < r_end; ++i) {
        const int64_t before = rows.pos[i] - rows.window + 1 - j0;
        for (int64_t j = 0; j < before && j < nv; ++j) ts->s[i * kBK + j] = -1e30f;
      }
    }
    accumulate_rows(r, r_end, nv, hd, vrow, ts);
    r = r_end;
  }
}

// Prefill: accumulates keys [ja, jb) of KV head g into the running state of the tile's rows
// (the query heads of g at several positions, up to kMaxRows rows). T: the cache's element, float, uint16_t
// (f16 bits) or KvQ8 (q8_0 blocks); f16 and q8_0 rows are converted once into the scratch.
// Templates rather than run-time tests so the dense f32 path keeps its loops. The key block
// is transposed once and every row's 64 scores accumulate in registers (block_scores):
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
    update_rows(rows, j0, nb, hd, scale, vrow, ts);
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
// queries). Each score is a dot product of the query with the key row as stored, and the
// value sums read the value rows as stored: f16 and q8_0 are converted in registers
// (load16k), the same values in the same order as the f32 kernel over their f32 copy. A
// cache row holds every KV head of a position side by side, so going through a block
// position by position, every head at each, reads the cache as one sequential stream; one
// head at a time reads 1 / n_head_kv of each span, which the hardware prefetchers follow
// far worse (2-core AMD EPYC host: the f16 KV of 5400 tokens read in 1.7-2.1 ms against
// 4.5). Each position prefetches, beside its scores, the key rows of the position kAhead
// further on and its own value rows, which the value pass reads after the block's scores
// (a pass of prefetches alone made f32 decode 1.7x slower: a burst the fill buffers drop).
// kAhead is 16 positions for f16 and q8_0, whose rows are half or a quarter of f32's: the
// same bytes ahead, and 3% faster than 8 in a whittle-run A/B. heads_fit bounds what one
// position reads (every head's key and value rows: 2 KiB of f32 at 256 floats a row), so
// the rows in flight stay well inside L1, and the query rows to kDecodeRows.
static inline bool heads_fit(int64_t n_head, int64_t n_head_kv, int64_t hd) {
  return n_head <= kDecodeRows && n_head_kv * hd <= kMaxHeadDim;
}

template <bool kIds, typename T>
static inline void attend_keys_heads(const TileRows& rows, const wt::Tensor& k, const wt::Tensor& v, int64_t g0,
                                     int64_t g1, int64_t group, int64_t ja, int64_t jb, float scale, TileScratch* ts,
                                     const int32_t* ids) {
  constexpr int64_t kAhead = sizeof(T) == sizeof(float) ? 8 : 16;
  const int64_t hd = k.ne[0];
  // Each row's dot products with 16 keys as 16-lane vectors: [row][key % 16][16].
  float* part = ts->kt;
  for (int64_t j0 = ja; j0 < jb; j0 += kBK) {
    const int64_t nb = (jb - j0) < kBK ? (jb - j0) : kBK;
    for (int64_t jj = 0; jj < nb; ++jj) {
      const int64_t j = kIds ? ids[j0 + jj] : j0 + jj;
      const int64_t ahead = (j0 + jj + kAhead) < jb ? (j0 + jj + kAhead) : jb - 1;
      const int64_t jn = kIds ? ids[ahead] : ahead;
      for (int64_t g = g0; g < g1; ++g) {
        const char* kn = k.row<char>(g, jn);
        const char* vn = v.row<char>(g, j);
        for (size_t b = 0; b < k.nb[1]; b += 64) {  // nb[1]: the bytes of one head's row
          __builtin_prefetch(kn + b);
          __builtin_prefetch(vn + b);
        }
        const T* kr = k.row<T>(g, j);
        for_row_batches((g - g0) * group, (g - g0 + 1) * group, [&](auto batch, int64_t r) {
          dot_rows_batch<decltype(batch)::value>(rows.q + r, kr, hd, part + (r * 16 + jj % 16) * 16);
        });
      }
      if (jj % 16 == 15 || jj == nb - 1) {  // 16 keys' scores (fewer at the end) of every row
        const int64_t base = jj / 16 * 16;
        for (int64_t r = 0; r < rows.n; ++r) {
          const F16v sc = hsum16x16(part + r * 256) * scale;
          float* s = ts->s + r * kBK + base;
          if (jj - base == 15) {
            store16(s, sc);
          } else {
            for (int64_t i = 0; i <= jj - base; ++i) s[i] = lane(sc, i);
          }
        }
      }
    }
    for (int64_t g = g0; g < g1; ++g) {
      auto vrow = [&](int64_t jj) { return v.row<T>(g, kIds ? ids[j0 + jj] : j0 + jj); };
      accumulate_rows((g - g0) * group, (g - g0 + 1) * group, nb, hd, vrow, ts);
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

// One query row's softmax scores (window_scores with W = 1: a decode step scoring the keys
// it sees, decode_topk): dst[head][j] = exp(z_j - m) / l for keys j < n_cols, 0 from n_vis
// on, where z = scale * q.k over keys [0, n_vis) and (m, l) their max and sum of exp. The
// keys are read as decode reads them: in place, every KV head of a position together, 16
// keys' dot products summed at once; a unit is a chunk of keys (over every KV head where
// heads_fit, else one), which writes the raw z and keeps (m, l) per head in `part`
// [n_head][n_chunks][2]; after a barrier each head's chunks merge and its row is
// normalized in place. (The two-phase window kernel transposes every 64-key block and
// reads the keys twice: 4x slower for one row.)
template <typename T>
static inline void one_row_keys(const TileRows& rows, const wt::Tensor& k, int64_t g0, int64_t g1, int64_t group,
                                int64_t ja, int64_t jb, float scale, float* const* out, int64_t n_cols,
                                TileScratch* ts) {
  constexpr int64_t kAhead = sizeof(T) == sizeof(float) ? 8 : 16;
  const int64_t hd = k.ne[0];
  float* part = ts->kt;  // [row][key % 16][16], as attend_keys_heads
  for (int64_t j = ja; j < jb; ++j) {
    const int64_t jn = (j + kAhead) < jb ? (j + kAhead) : jb - 1;
    for (int64_t g = g0; g < g1; ++g) {
      const char* kn = k.row<char>(g, jn);
      for (size_t b = 0; b < k.nb[1]; b += 64) __builtin_prefetch(kn + b);
      const T* kr = k.row<T>(g, j);
      for_row_batches((g - g0) * group, (g - g0 + 1) * group, [&](auto batch, int64_t r) {
        dot_rows_batch<decltype(batch)::value>(rows.q + r, kr, hd, part + (r * 16 + (j - ja) % 16) * 16);
      });
    }
    const int64_t i = (j - ja) % 16;
    if (i != 15 && j != jb - 1) continue;
    const int64_t base = j - i, cnt = i + 1;  // keys [base, base + cnt)
    for (int64_t r = 0; r < rows.n; ++r) {
      const F16v sc = hsum16x16(part + r * 256) * scale;
      alignas(64) float z[16];
      store16(z, sc);
      for (int64_t e = cnt; e < 16; ++e) z[e] = -1e30f;  // stale lanes of an earlier 16
      if (base < n_cols) {
        const int64_t w = (n_cols - base) < cnt ? (n_cols - base) : cnt;
        std::memcpy(out[r] + base, z, sizeof(float) * static_cast<size_t>(w));
      }
      float bm = z[0];
      for (int e = 1; e < 16; ++e) bm = z[e] > bm ? z[e] : bm;
      const float m_new = bm > ts->m[r] ? bm : ts->m[r];
      store16(z, vexp16(load16(z) - splat16(m_new)));
      float sum = 0.0f;
      for (int e = 0; e < 16; ++e) sum += z[e];
      ts->l[r] = ts->l[r] * wt::cpu::fast_exp(ts->m[r] - m_new) + sum;
      ts->m[r] = m_new;
    }
  }
}

static inline int64_t one_row_chunks(int64_t nth, int64_t n_vis) {
  const int64_t blocks = (n_vis + 15) / 16, want = 4 * nth;  // 16-key steps
  return want < blocks ? want : (blocks > 0 ? blocks : 1);
}

static void one_row_scores_impl(const wt::cpu::ThreadCtx& tc, const wt::Tensor& dst, const wt::Tensor& q,
                                const wt::Tensor& k, int64_t n_vis, float scale, void* workspace) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n_head_kv = k.ne[1];
  const int64_t group = n_head / n_head_kv, n_cols = dst.ne[0];
  const bool all_heads = heads_fit(n_head, n_head_kv, hd);
  const int64_t unit_heads = all_heads ? n_head_kv : 1;
  const int64_t n_chunks = one_row_chunks(tc.split_workers(), n_vis);
  const int64_t per_chunk = (n_vis + n_chunks - 1) / n_chunks;
  TileScratch* ts = static_cast<TileScratch*>(workspace) + tc.ith;
  float* part = reinterpret_cast<float*>(static_cast<TileScratch*>(workspace) + tc.split_workers());  // [n_head][n_chunks][2]
  const int64_t qrow = q.ne[2] - 1;
  for (int64_t u = tc.ith; u < n_head_kv / unit_heads * n_chunks; u += tc.nth) {
    const int64_t g0 = u / n_chunks * unit_heads, c = u % n_chunks;
    const int64_t ja = c * per_chunk, jb = (ja + per_chunk) < n_vis ? (ja + per_chunk) : n_vis;
    TileRows rows;
    float* out[kMaxRows];
    for (int64_t head = g0 * group; head < (g0 + unit_heads) * group; ++head) {
      out[rows.n] = dst.row<float>(head, 0);
      rows.q[rows.n++] = q.row<float>(head, qrow);
    }
    for (int64_t r = 0; r < rows.n; ++r) {
      ts->m[r] = -1e30f;  // finite, as reset_rows: exp(m_old - m_new) stays defined
      ts->l[r] = 0.0f;
    }
    if (ja < jb) {
      if (k.type == wt::DType::q8_0) one_row_keys<KvQ8>(rows, k, g0, g0 + unit_heads, group, ja, jb, scale, out, n_cols, ts);
      else if (k.type == wt::DType::f16) one_row_keys<uint16_t>(rows, k, g0, g0 + unit_heads, group, ja, jb, scale, out, n_cols, ts);
      else one_row_keys<float>(rows, k, g0, g0 + unit_heads, group, ja, jb, scale, out, n_cols, ts);
    }
    for (int64_t r = 0; r < rows.n; ++r) {
      float* p = part + ((g0 * group + r) * n_chunks + c) * 2;
      p[0] = ts->m[r];
      p[1] = ts->l[r];
    }
  }
  tc.sync();
  const int64_t n_cb = (n_cols + 15) / 16;
  for (int64_t u = tc.ith; u < n_head * n_cb; u += tc.nth) {
    const int64_t head = u / n_cb, j0 = (u % n_cb) * 16;
    const float* p = part + head * n_chunks * 2;
    float m = -1e30f, l = 0.0f;
    for (int64_t c = 0; c < n_chunks; ++c) m = p[2 * c] > m ? p[2 * c] : m;
    for (int64_t c = 0; c < n_chunks; ++c) l += p[2 * c + 1] * wt::cpu::fast_exp(p[2 * c] - m);
    float* row = dst.row<float>(head, 0) + j0;
    const int64_t nb = (n_cols - j0) < 16 ? (n_cols - j0) : 16;
    const int64_t nv = n_vis - j0 <= 0 ? 0 : (n_vis - j0 < nb ? n_vis - j0 : nb);
    alignas(64) float z[16] = {};
    std::memcpy(z, row, sizeof(float) * static_cast<size_t>(nv));
    store16(z, vexp16(load16(z) - splat16(m)) * splat16(1.0f / l));  // l >= 1: the max term is exp(0)
    for (int64_t e = nv; e < 16; ++e) z[e] = 0.0f;
    std::memcpy(row, z, sizeof(float) * static_cast<size_t>(nb));
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
                                float scale, TileScratch* ts, int32_t window) {
  const int64_t hd = q.ne[0];
  TileRows rows;
  rows.window = window;
  for (int64_t t = 0; t < n_idx; ++t) {
    for (int64_t h = 0; h < group; ++h) {
      rows.q[rows.n] = q.row<float>(g * group + h, idx[t]);
      rows.pos[rows.n] = pos0 + idx[t];
      ++rows.n;
    }
  }
  reset_rows(rows.n, hd, ts);
  // A window: no key before the first row's is read.
  const int64_t first = window > 0 && pos0 + idx[0] - window + 1 > 0 ? pos0 + idx[0] - window + 1 : 0;
  attend_keys(rows, k, v, g, first, pos0 + idx[n_idx - 1] + 1, scale, ts);
  for (int64_t t = 0, r = 0; t < n_idx; ++t) {
    for (int64_t h = 0; h < group; ++h, ++r) {
      float* out = dst.row<float>(g * group + h, idx[t]);
      const float inv = 1.0f / ts->l[r];
      for (int64_t d = 0; d < hd; ++d) out[d] = ts->acc[r * hd + d] * inv;
    }
  }
}

// Positions per prefill tile: as many as kMaxRows rows hold, but no more than leave 4 units
// (KV head x tile) per worker, so a short prompt still spreads over every worker.
static inline int64_t tile_positions(int64_t n, int64_t n_head_kv, int64_t group, int nth) {
  const int64_t fit = kMaxRows / group > 0 ? kMaxRows / group : 1;
  const int64_t want = 4 * static_cast<int64_t>(nth);
  const int64_t spread = (n * n_head_kv + want - 1) / want;
  const int64_t bq = spread < fit ? spread : fit;
  return bq > 0 ? bq : 1;
}

static void prefill_impl(const wt::cpu::ThreadCtx& tc, const wt::Tensor& dst, const wt::Tensor& q,
                         const wt::Tensor& k, const wt::Tensor& v, int32_t pos0, float scale,
                         void* workspace, const int32_t* skip, int32_t window) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n = q.ne[2], n_head_kv = k.ne[1];
  const int64_t group = n_head / n_head_kv;
  TileScratch* ts = static_cast<TileScratch*>(workspace) + tc.ith;
  int64_t idx[kMaxRows];
  // Units are (kv head, query block); dealt round-robin so the long late blocks of the
  // causal triangle spread over all workers.
  if (!skip) {
    const int64_t bq = tile_positions(n, n_head_kv, group, tc.nth);
    const int64_t n_qblocks = (n + bq - 1) / bq;
    for (int64_t u = tc.ith; u < n_head_kv * n_qblocks; u += tc.nth) {
      const int64_t g = u % n_head_kv;
      const int64_t qb = n_qblocks - 1 - u / n_head_kv;
      const int64_t q0 = qb * bq, q1 = (q0 + bq) < n ? (q0 + bq) : n;
      for (int64_t i = q0; i < q1; ++i) idx[i - q0] = i;
      prefill_tile(dst, q, k, v, g, group, idx, q1 - q0, pos0, scale, ts, window);
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
  const int64_t bq = tile_positions(n_kept, n_head_kv, group, tc.nth);
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
    prefill_tile(dst, q, k, v, g, group, idx, n_idx, pos0, scale, ts, window);
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
// heads_fit (one sequential stream through the cache), one chunk of keys per worker; else
// one KV head, ceil(4 nth /
// n_head_kv) chunks of keys per head. Each unit leaves a partial (m, l, acc) per query head,
// [chunk][head][hd + 2] after the per-worker scratch, merged after a barrier. With ids, the
// keys are cache rows ids[0..n_ids) instead of 0..pos0; with a window (no ids), the last
// `window` of those.
static void decode_impl(const wt::cpu::ThreadCtx& tc, const wt::Tensor& dst, const wt::Tensor& q,
                        const wt::Tensor& k, const wt::Tensor& v, int32_t pos0, float scale,
                        void* workspace, const int32_t* ids, int32_t n_ids, int32_t window) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n_head_kv = k.ne[1];
  const int64_t group = n_head / n_head_kv;
  const int64_t lo = !ids && window > 0 && pos0 + 1 > window ? pos0 + 1 - window : 0;  // the first key
  const int64_t n_keys = ids ? n_ids : pos0 + 1 - lo;
  if (n_keys <= 0) {  // an empty key set: the limit of attending to less and less is 0
    for (int64_t head = tc.ith; head < n_head; head += tc.nth)
      std::memset(dst.row<float>(head, 0), 0, sizeof(float) * static_cast<size_t>(hd));
    return;
  }
  const bool all_heads = heads_fit(n_head, n_head_kv, hd);
  const int64_t unit_heads = all_heads ? n_head_kv : 1;
  // The partials' room (attention_workspace_bytes) holds (4 nth + n_head_kv) x group heads',
  // nth the pool's workers: the chunks are cut for them, however many run this launch.
  const int64_t nw = tc.split_workers();
  const int64_t room = (4 * nw + n_head_kv) / n_head_kv;
  int64_t n_chunks = all_heads ? (nw < room ? nw : room) : (4 * nw + n_head_kv - 1) / n_head_kv;
  const int64_t max_chunks = (n_keys + kBK - 1) / kBK;
  n_chunks = n_chunks < max_chunks ? n_chunks : max_chunks;
  const int64_t per_chunk = ((n_keys + n_chunks - 1) / n_chunks + kBK - 1) / kBK * kBK;
  TileScratch* ts = static_cast<TileScratch*>(workspace) + tc.ith;
  float* partial = reinterpret_cast<float*>(static_cast<TileScratch*>(workspace) + nw);
  const int64_t stride = hd + 2;
  const int64_t n_units = n_head_kv / unit_heads * n_chunks;
  for (int64_t u = tc.ith; u < n_units; u += tc.nth) {
    const int64_t g0 = u / n_chunks * unit_heads, c = u % n_chunks;
    const int64_t ja = lo + c * per_chunk;
    const int64_t jb = (ja + per_chunk) < lo + n_keys ? (ja + per_chunk) : lo + n_keys;
    TileRows rows;
    for (int64_t head = g0 * group; head < (g0 + unit_heads) * group; ++head) {
      rows.q[rows.n] = q.row<float>(head, 0);  // decode's rows all see every key: no pos
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
