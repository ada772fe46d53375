// F16v: 16 floats handled as one value by the attention and bound_scores kernels, kept in registers in every
// ISA build. With AVX-512 it is one native vector (GCC vector extension). With AVX2 (8
// lanes) and SSE2 or NEON (4 lanes) it is a struct of 2 or 4 native vectors with the same
// operators: a 64-byte vector type is a register only with AVX-512, and GCC kept variables
// of it in memory elsewhere (16 scalar stores to broadcast a float, the accumulators on the
// stack), which made the AVX2 and baseline builds' attention 5-9x slower than AVX-512's
// (tests/bench_attention). Every operation is lane by lane, and hsum16x16 and hsum16 add in
// one order, the same in every build; the bits differ between builds only where one fuses a
// multiply-add and another cannot (SSE2 has no FMA).
//
// Include only from attention_impl.h and bound_scores_impl.h, inside their per-ISA
// namespace after vec_exp.h, with WT_VEC16_LANES (16, 8 or 4) defined; no include guard
// (one inclusion per namespace).

// Lane shuffles. GCC 11 (JetPack 6's compiler) has no __builtin_shufflevector: there a
// shuffle of two vectors is __builtin_shuffle with a mask vector as wide as they are, and a
// half is read out with a memcpy (vec16_half). GCC 12 and clang take the builtin.
#ifndef WT_VEC16_SHUFFLES
#define WT_VEC16_SHUFFLES
#if defined(__clang__) || __GNUC__ >= 12
#define WT_SHUFFLE2(Mask, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#define WT_LO8(H, v) __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)
#define WT_HI8(H, v) __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)
#define WT_LO4(H, v) __builtin_shufflevector(v, v, 0, 1, 2, 3)
#define WT_HI4(H, v) __builtin_shufflevector(v, v, 4, 5, 6, 7)
#else
#define WT_SHUFFLE2(Mask, a, b, ...) __builtin_shuffle(a, b, Mask{__VA_ARGS__})
#define WT_LO8(H, v) vec16_half<H>(v, 0)
#define WT_HI8(H, v) vec16_half<H>(v, 1)
#define WT_LO4(H, v) vec16_half<H>(v, 0)
#define WT_HI4(H, v) vec16_half<H>(v, 1)
#endif
#endif

// Half `which` (0: the low lanes, 1: the high ones) of v as a vector H of half its width.
template <class H, class V>
static inline H vec16_half(const V& v, int which) {
  static_assert(2 * sizeof(H) == sizeof(V), "a half of the vector");
  H h;
  std::memcpy(&h, reinterpret_cast<const char*>(&v) + which * sizeof(H), sizeof h);
  return h;
}

#if WT_VEC16_LANES == 16

typedef float F16v __attribute__((vector_size(64)));
typedef int32_t I16v __attribute__((vector_size(64)));

static inline F16v load16(const float* p) {
  F16v v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store16(float* p, const F16v& v) { std::memcpy(p, &v, sizeof v); }
static inline F16v splat16(float x) { return F16v{} + x; }
static inline float lane(const F16v& v, int i) { return v[i]; }
// b > a ? b : a per lane (a NaN b never wins).
static inline F16v vmax16(const F16v& a, const F16v& b) { return vec_select<F16v, I16v>(b > a, b, a); }
static inline F16v vexp16(const F16v& x) { return vec_exp<F16v, I16v>(x); }

typedef float F8h __attribute__((vector_size(32)));
typedef float F4h __attribute__((vector_size(16)));
typedef int32_t I8h __attribute__((vector_size(32)));
typedef int32_t I4h __attribute__((vector_size(16)));
// The sum of v's 16 lanes in one order in every build: lanes l and l + 8, then of those l
// and l + 4, then (s0 + s2) + (s1 + s3) (hsum16x16's order for one vector).
static inline float hsum16(const F16v& v) {
  const F8h a = WT_LO8(F8h, v) + WT_HI8(F8h, v);
  const F4h b = WT_LO4(F4h, a) + WT_HI4(F4h, a);
  return (b[0] + b[2]) + (b[1] + b[3]);
}
// The largest of v's 16 lanes (exact in any order; v must hold no NaN).
static inline float hmax16(const F16v& v) {
  const F8h x = WT_LO8(F8h, v);
  const F8h y = WT_HI8(F8h, v);
  const F8h a = vec_select<F8h, I8h>(x > y, x, y);
  const F4h lo = WT_LO4(F4h, a), hi = WT_HI4(F4h, a);
  const F4h b = vec_select<F4h, I4h>(lo > hi, lo, hi);
  const float c0 = b[0] > b[2] ? b[0] : b[2], c1 = b[1] > b[3] ? b[1] : b[3];
  return c0 > c1 ? c0 : c1;
}

// Lane k of the result is the sum of the 16 lanes of v[k] (v: 16 vectors of 16 floats), in
// one order in every build: lanes l and l + 8 added, then of those l and l + 4, then
// (s0 + s2) + (s1 + s3). Four rounds of two-vector shuffles and adds for 16 keys, where one
// horizontal sum per key was a chain of dependent shuffles and scalar adds (a third of
// decode's time with an f16 or q8_0 cache).
static inline F16v hsum16x16(const float* v) {
  F16v w[8], x[4], y[2];
  for (int i = 0; i < 8; ++i) {  // per key, lanes l + lanes l + 8: [key 2i | key 2i + 1]
    const F16v a = load16(v + 32 * i), b = load16(v + 32 * i + 16);
    w[i] = WT_SHUFFLE2(I16v, a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
           WT_SHUFFLE2(I16v, a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  }
  for (int i = 0; i < 4; ++i)  // per key, lanes l + lanes l + 4 of those 8: 4 keys
    x[i] = WT_SHUFFLE2(I16v, w[2 * i], w[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           WT_SHUFFLE2(I16v, w[2 * i], w[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  for (int i = 0; i < 2; ++i)  // per key, (s0 + s2) and (s1 + s3): 8 keys
    y[i] = WT_SHUFFLE2(I16v, x[2 * i], x[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
           WT_SHUFFLE2(I16v, x[2 * i], x[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  return WT_SHUFFLE2(I16v, y[0], y[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
         WT_SHUFFLE2(I16v, y[0], y[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

#else

constexpr int kVecLanes = WT_VEC16_LANES;
constexpr int kParts = 16 / kVecLanes;
typedef float FNv __attribute__((vector_size(kVecLanes * 4)));
typedef int32_t INv __attribute__((vector_size(kVecLanes * 4)));
typedef float F4v __attribute__((vector_size(16)));
typedef int32_t I4v __attribute__((vector_size(16)));

struct F16v {
  FNv p[kParts];  // lanes [kVecLanes c, kVecLanes (c + 1)) in p[c]
};

// Part by part: a memcpy of the whole struct made GCC build it on the stack.
static inline F16v load16(const float* p) {
  F16v v;
  for (int c = 0; c < kParts; ++c) {
    FNv x;
    std::memcpy(&x, p + kVecLanes * c, sizeof x);
    v.p[c] = x;
  }
  return v;
}
static inline void store16(float* p, const F16v& v) {
  for (int c = 0; c < kParts; ++c) std::memcpy(p + kVecLanes * c, &v.p[c], sizeof v.p[c]);
}
static inline F16v splat16(float x) {
  F16v r;
  for (int c = 0; c < kParts; ++c) r.p[c] = FNv{} + x;
  return r;
}
static inline float lane(const F16v& v, int i) { return v.p[i / kVecLanes][i % kVecLanes]; }

#define WT_VEC16_OP(op)                                                                      \
  static inline F16v operator op(const F16v& a, const F16v& b) {                            \
    F16v r;                                                                                  \
    for (int c = 0; c < kParts; ++c) r.p[c] = a.p[c] op b.p[c];                              \
    return r;                                                                                \
  }                                                                                          \
  static inline F16v operator op(const F16v& a, float b) {                                   \
    F16v r;                                                                                  \
    for (int c = 0; c < kParts; ++c) r.p[c] = a.p[c] op b;                                   \
    return r;                                                                                \
  }                                                                                          \
  static inline F16v operator op(float a, const F16v& b) {                                   \
    F16v r;                                                                                  \
    for (int c = 0; c < kParts; ++c) r.p[c] = a op b.p[c];                                   \
    return r;                                                                                \
  }
WT_VEC16_OP(+)
WT_VEC16_OP(-)
WT_VEC16_OP(*)
#undef WT_VEC16_OP
static inline F16v& operator+=(F16v& a, const F16v& b) {
  for (int c = 0; c < kParts; ++c) a.p[c] += b.p[c];
  return a;
}
static inline F16v vmax16(const F16v& a, const F16v& b) {
  F16v r;
  for (int c = 0; c < kParts; ++c) r.p[c] = vec_select<FNv, INv>(b.p[c] > a.p[c], b.p[c], a.p[c]);
  return r;
}
static inline F16v vexp16(const F16v& x) {
  F16v r;
  for (int c = 0; c < kParts; ++c) r.p[c] = vec_exp<FNv, INv>(x.p[c]);
  return r;
}

// As the AVX-512 hsum16 and hmax16: lanes l and l + 8, then l and l + 4, then (s0 + s2) +
// (s1 + s3), whole native vectors where a part holds those lanes.
static inline F4v half_reduce4(const F16v& v, bool sum) {
#if WT_VEC16_LANES == 8
  const FNv a = sum ? v.p[0] + v.p[1] : vec_select<FNv, INv>(v.p[0] > v.p[1], v.p[0], v.p[1]);
  const F4v lo = WT_LO4(F4v, a), hi = WT_HI4(F4v, a);
  return sum ? lo + hi : vec_select<F4v, I4v>(lo > hi, lo, hi);
#else
  if (sum) return (v.p[0] + v.p[2]) + (v.p[1] + v.p[3]);
  const F4v a0 = vec_select<F4v, I4v>(v.p[0] > v.p[2], v.p[0], v.p[2]);
  const F4v a1 = vec_select<F4v, I4v>(v.p[1] > v.p[3], v.p[1], v.p[3]);
  return vec_select<F4v, I4v>(a0 > a1, a0, a1);
#endif
}
static inline float hsum16(const F16v& v) {
  const F4v b = half_reduce4(v, true);
  return (b[0] + b[2]) + (b[1] + b[3]);
}
static inline float hmax16(const F16v& v) {
  const F4v b = half_reduce4(v, false);
  const float c0 = b[0] > b[2] ? b[0] : b[2], c1 = b[1] > b[3] ? b[1] : b[3];
  return c0 > c1 ? c0 : c1;
}

// As the AVX-512 hsum16x16, the same additions in the same order: per key, lanes l and l + 8
// then l and l + 4 are whole native vectors added; (s0 + s2) + (s1 + s3) four keys at a time.
static inline F16v hsum16x16(const float* v) {
  F4v s4[16];
  for (int k = 0; k < 16; ++k) {
    const F16v a = load16(v + 16 * k);
#if WT_VEC16_LANES == 8
    const FNv s8 = a.p[0] + a.p[1];
    s4[k] = WT_LO4(F4v, s8) + WT_HI4(F4v, s8);
#else
    s4[k] = (a.p[0] + a.p[2]) + (a.p[1] + a.p[3]);
#endif
  }
  float out[16];
  for (int k = 0; k < 16; k += 4) {
    const F4v u = WT_SHUFFLE2(I4v, s4[k], s4[k + 1], 0, 1, 4, 5) + WT_SHUFFLE2(I4v, s4[k], s4[k + 1], 2, 3, 6, 7);
    const F4v w = WT_SHUFFLE2(I4v, s4[k + 2], s4[k + 3], 0, 1, 4, 5) +
                  WT_SHUFFLE2(I4v, s4[k + 2], s4[k + 3], 2, 3, 6, 7);
    const F4v o = WT_SHUFFLE2(I4v, u, w, 0, 2, 4, 6) + WT_SHUFFLE2(I4v, u, w, 1, 3, 5, 7);
    std::memcpy(out + k, &o, sizeof o);
  }
  return load16(out);
}

#endif
