// The three steps of bound_scores (bound_scores.cpp), compiled once per ISA like
// window_scores_impl.h: bound_scores.cpp (baseline), bound_scores_avx2.cpp,
// bound_scores_avx512.cpp. Include only from those files, inside a namespace of their own,
// with BS_LANES (16, 8 or 4: the native vector's floats) and BS_HEADS (query heads whose
// sums stay in registers together) defined.
//
// Dimensions run along the lanes: a block's bounds are read 16 halves at a time (one
// conversion for 16 dimensions) and used by every query head of their KV head, and lane l
// sums dimensions l, l + 16, ... in order. Sixteen blocks' sums of a head are then reduced
// together by vec16.h's hsum16x16, which adds in one order in every build. Every build
// therefore gives the same bits (the tests compare them with memcmp), so the selection (a
// top-k over these scores) does not depend on the ISA build picked at run time (std::log
// is the C library's, the same call in every build). All float arithmetic here is in this
// header's static functions, one copy per ISA namespace, which CMake compiles without fused
// multiply-adds (kernels/CMakeLists.txt): an inline function of another header could be
// another file's fused copy at link time.
//
// The bounds are f16 (kernels/f16_bound.h: zero or normal values only), converted exactly:
// by F16C's vcvtph2ps where the including file defines BS_F16C (and includes
// <immintrin.h>), else by moving the bits into f32's fields and scaling by 2^112. Both give
// the same floats (for finite bounds only, which key_bounds guarantees by saturating at
// 65504: an f16 inf or NaN would convert differently).
//
// The including file includes <cmath>, <cstdint>, <cstring>, fast_math.h,
// kernels/f16_bound.h, kernels/tensor.h and, on x86, <xmmintrin.h> first, at file scope (a standard header included inside a namespace
// would declare std:: in it).

#include "vec_exp.h"  // vec_select, which vec16.h's vmax16 uses
#define WT_VEC16_LANES BS_LANES
#include "vec16.h"  // F16v: 16 floats as one value, in registers in every build
#undef WT_VEC16_LANES

constexpr int kHeads = BS_HEADS;
static_assert(kHeads >= 1 && kHeads <= 4, "bound_dots passes over 1 to 4 heads at a time");

// Four stored bounds as floats, without F16C.
typedef uint16_t H4 __attribute__((vector_size(8)));
typedef uint32_t U4 __attribute__((vector_size(16)));
typedef float F4 __attribute__((vector_size(16)));
[[maybe_unused]] static inline F4 half4(const uint16_t* p) {
  H4 h;
  std::memcpy(&h, p, sizeof h);
  const U4 w = __builtin_convertvector(h, U4);
  const U4 bits = ((w & 0x8000u) << 16) | ((w & 0x7FFFu) << 13);
  F4 f;
  std::memcpy(&f, &bits, sizeof f);
  return f * wt::kF16BoundScale;
}

// Sixteen stored bounds as floats.
static inline F16v half16(const uint16_t* p) {
#if defined(BS_F16C) && BS_LANES == 16
  return F16v(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif defined(BS_F16C) && BS_LANES == 8
  F16v r;
  r.p[0] = FNv(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  r.p[1] = FNv(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8))));
  return r;
#else
  float f[16];
  for (int c = 0; c < 4; ++c) {
    const F4 x = half4(p + 4 * c);
    std::memcpy(f + 4 * c, &x, sizeof x);
  }
  return load16(f);
#endif
}

// a > e ? a : e lane by lane, which is exactly what x86's maxps computes (the second
// operand on equality, signed zeros and NaN): GCC compiled the vector ?: and vmax16's mask
// select to a compare and a blend, which made AVX2's bounds 25% slower.
static inline F16v max_ae(const F16v& a, const F16v& e) {
#if defined(BS_F16C) && BS_LANES == 16
  return F16v(_mm512_max_ps(__m512(a), __m512(e)));
#else
  F16v r;
  for (int c = 0; c < kParts; ++c) {
#if defined(BS_F16C) && BS_LANES == 8
    r.p[c] = FNv(_mm256_max_ps(__m256(a.p[c]), __m256(e.p[c])));
#elif defined(__SSE__)
    r.p[c] = FNv(_mm_max_ps(__m128(a.p[c]), __m128(e.p[c])));
#else
    r.p[c] = a.p[c] > e.p[c] ? a.p[c] : e.p[c];
#endif
  }
  return r;
#endif
}

static inline float half1(uint16_t h) {
  const uint32_t bits = wt::f16_bound_scaled_f32_bits(h);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f * wt::kF16BoundScale;
}

// Floats of the worker's workspace bound_dots uses.
static inline int64_t bound_dots_floats(int64_t n_head) { return n_head * 256; }

// sums[r * 256 + i * 16 + l]: lane l of the sums of the R query rows q[r] (hd floats each)
// against the bounds lo (hd lows, then hd highs) of block i of 16. Per dimension
// max(q lo, q hi) as a > e ? a : e (the op asks no order of lo and hi).
template <int R>
static inline void head_sums(const float* const* q, const uint16_t* lo, int64_t hd, int64_t i, float* sums) {
  const int64_t hd16 = hd / 16 * 16;
  F16v acc[R];
  for (int r = 0; r < R; ++r) acc[r] = splat16(0.0f);
  for (int64_t d = 0; d < hd16; d += 16) {
    const F16v l = half16(lo + d), h = half16(lo + hd + d);
    for (int r = 0; r < R; ++r) {
      const F16v qv = load16(q[r] + d);
      acc[r] += max_ae(qv * l, qv * h);
    }
  }
  for (int r = 0; r < R; ++r) {
    float* s = sums + r * 256 + i * 16;
    store16(s, acc[r]);
    for (int64_t d = hd16; d < hd; ++d) {  // head sizes not a multiple of 16: lane d % 16
      const float a = q[r][d] * half1(lo[d]), e = q[r][d] * half1(lo[hd + d]);
      s[d - hd16] += a > e ? a : e;
    }
  }
}

// u[h * n_blocks + b] = scale * sum_d max(q_d lo_d, q_d hi_d) of the last row of q, head h,
// against the bounds of block b and KV head h / G, for blocks [b0, b1) of n_blocks. Block
// by block, every KV head at each: the bounds are [block][KV head][2 hd], read as one
// stream. ws: the worker's bound_dots_floats(n_head).
static void bound_dots(const wt::Tensor& q, const wt::Tensor& bounds, float scale, int64_t n_blocks, int64_t b0,
                       int64_t b1, float* ws, float* u) {
  const int64_t hd = q.ne[0], n_head = q.ne[1], n_kv = bounds.ne[1], t = q.ne[2] - 1;
  const int64_t group = n_head / n_kv;
  constexpr int64_t kAhead = 8;  // blocks: 6 KiB ahead with 3 KV heads of 64 dimensions
  if (b0 >= b1) return;  // a worker without blocks (more workers than blocks)
  float* sums = ws;  // [n_head][16 blocks][16 lanes]
  for (int64_t b = b0; b < b1; b += 16) {
    const int64_t nb = b1 - b < 16 ? b1 - b : 16;
    for (int64_t i = 0; i < nb; ++i) {
      // The bounds of the block kAhead further on, which a decode step reads from DRAM (the
      // weights and the KV cache evict them between steps): the loads of the sums otherwise
      // waited on memory for most of the kernel's time (perf, 4096 tokens, blocks of 4).
      if (b + i + kAhead < b1)
        for (int64_t g = 0; g < n_kv; ++g) {
          const char* next = bounds.row<char>(g, b + i + kAhead);
          for (size_t off = 0; off < bounds.nb[1]; off += 64) __builtin_prefetch(next + off);
        }
      for (int64_t g = 0; g < n_kv; ++g) {
        const uint16_t* lo = bounds.row<uint16_t>(g, b + i);
        for (int64_t h = g * group, h_end = h + group; h < h_end;) {
          // Up to kHeads heads per pass over the bounds (a group of 3 in one, of 7 in 4 + 3).
          const int64_t n = h_end - h < kHeads ? h_end - h : kHeads;
          float* hs = sums + h * 256;
          const float* hq[kHeads];
          for (int64_t r = 0; r < n; ++r) hq[r] = q.row<float>(h + r, t);
          if constexpr (kHeads >= 4) {
            if (n == 4) head_sums<4>(hq, lo, hd, i, hs);
          }
          if constexpr (kHeads >= 3) {
            if (n == 3) head_sums<3>(hq, lo, hd, i, hs);
          }
          if constexpr (kHeads >= 2) {
            if (n == 2) head_sums<2>(hq, lo, hd, i, hs);
          }
          if (n == 1) head_sums<1>(hq, lo, hd, i, hs);
          h += n;
        }
      }
    }
    for (int64_t h = 0; h < n_head; ++h) {
      float* s = sums + h * 256;
      // Lane k of hsum16x16 reads block k's row only: the unused rows are zeroed so that
      // nothing reads uninitialized floats, not for the bits.
      if (nb < 16) std::memset(s + nb * 16, 0, sizeof(float) * static_cast<size_t>((16 - nb) * 16));
      const F16v x = hsum16x16(s) * scale;
      if (nb == 16) {
        store16(u + h * n_blocks + b, x);
      } else {
        for (int64_t i = 0; i < nb; ++i) u[h * n_blocks + b + i] = lane(x, static_cast<int>(i));
      }
    }
  }
}

// The sum of s[0..16) in one order: lanes l and l + 8, then l and l + 4, l and l + 2, l and l + 1.
static inline float sum16(float* s) {
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) s[l] += s[l + w];
  return s[0];
}

// The exponentials of x - top for 16 values x, of which the first n < 16 are read (the rest
// 0 on return): the tails go through the same vector steps as whole groups of 16, so a value
// does not depend on where a worker's range begins.
static inline F16v exp_tail(const float* x, int64_t n, const F16v& top) {
  float buf[16] = {};
  std::memcpy(buf, x, sizeof(float) * static_cast<size_t>(n));
  store16(buf, vexp16(load16(buf) - top));
  for (int64_t l = n; l < 16; ++l) buf[l] = 0.0f;
  return load16(buf);
}

// Phase 2, heads [h0, h1): each head's row of n_blocks scores becomes its log-softmax. Lane
// b % 16 sums block b's exponential, from block 0 on.
static void log_softmax_rows(float* logp, int64_t n_blocks, int64_t h0, int64_t h1) {
  const int64_t n16 = n_blocks / 16 * 16;
  for (int64_t h = h0; h < h1; ++h) {
    float* u = logp + h * n_blocks;
    F16v mv = splat16(-__builtin_inff());
    for (int64_t b = 0; b < n16; b += 16) mv = vmax16(mv, load16(u + b));  // a NaN never wins
    float top = -__builtin_inff();
    for (int l = 0; l < 16; ++l) top = lane(mv, l) > top ? lane(mv, l) : top;
    for (int64_t b = n16; b < n_blocks; ++b) top = u[b] > top ? u[b] : top;
    const F16v tv = splat16(top);
    F16v acc = splat16(0.0f);
    for (int64_t b = 0; b < n16; b += 16) acc += vexp16(load16(u + b) - tv);
    if (n16 < n_blocks) acc += exp_tail(u + n16, n_blocks - n16, tv);
    float s[16];
    store16(s, acc);
    const float lse = top + std::log(sum16(s));
    const F16v lv = splat16(lse);
    for (int64_t b = 0; b < n16; b += 16) store16(u + b, load16(u + b) - lv);
    for (int64_t b = n16; b < n_blocks; ++b) u[b] -= lse;
  }
}

// Phase 3, blocks [b0, b1): out[b] = log sum_h exp(logp[h][b]), shifted by the heads' max,
// the heads in order; 16 blocks at a time, a shorter group at the end padded, each block's
// value the same whichever group it is in.
static void block_log_sums(const float* logp, float* out, int64_t n_head, int64_t n_blocks, int64_t b0,
                           int64_t b1) {
  for (int64_t b = b0; b < b1; b += 16) {
    const int64_t n = b1 - b < 16 ? b1 - b : 16;
    auto row = [&](int64_t h) {  // head h's values of the group, a tail padded with zeros
      if (n == 16) return load16(logp + h * n_blocks + b);
      float buf[16] = {};
      std::memcpy(buf, logp + h * n_blocks + b, sizeof(float) * static_cast<size_t>(n));
      return load16(buf);
    };
    F16v top = row(0);
    for (int64_t h = 1; h < n_head; ++h) top = vmax16(top, row(h));
    F16v sum = splat16(0.0f);
    for (int64_t h = 0; h < n_head; ++h) sum += vexp16(row(h) - top);
    for (int64_t i = 0; i < n; ++i) out[b + i] = lane(top, static_cast<int>(i)) + std::log(lane(sum, static_cast<int>(i)));
  }
}
