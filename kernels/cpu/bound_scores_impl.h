// The dot products of bound_scores (bound_scores.cpp), compiled once per ISA like
// window_scores_impl.h: bound_scores.cpp (baseline), bound_scores_avx2.cpp,
// bound_scores_avx512.cpp. Include only from those files, inside a namespace of their own,
// with BS_HEADS defined.
//
// Every lane keeps one of the four partial sums the baseline has always used (dimension d
// goes to partial d % 4, dimensions in order), and a vector holds BS_HEADS query heads of one
// KV head side by side, 4 lanes each. So the wider builds read a block's bounds once for
// several heads and still give the baseline's bits, which the tests check; the selection
// (a top-k over these scores) then does not depend on the machine.

// The bounds are f16 (kernels/f16_bound.h: zero or normal values only), converted exactly:
// by F16C's vcvtph2ps where the including file defines BS_F16C (and includes
// <immintrin.h>), else by moving the bits into f32's fields and scaling by 2^112. Both give
// the same floats, so the builds still agree bit for bit.
//
// The including file includes <cstdint>, <cstring>, kernels/f16_bound.h and kernels/tensor.h
// first, at file scope (a standard header included inside a namespace would declare std:: in it).

constexpr int kHeads = BS_HEADS;  // query heads per vector
constexpr int kLanes = 4 * kHeads;
typedef float FV __attribute__((vector_size(kLanes * 4)));
typedef float F4 __attribute__((vector_size(16)));
typedef uint16_t H4 __attribute__((vector_size(8)));
typedef uint32_t U4 __attribute__((vector_size(16)));

// Four stored bounds as floats.
static inline F4 half4(const uint16_t* p) {
#if defined(BS_F16C)
  return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
#else
  H4 h;
  std::memcpy(&h, p, sizeof h);
  const U4 w = __builtin_convertvector(h, U4);
  const U4 bits = ((w & 0x8000u) << 16) | ((w & 0x7FFFu) << 13);
  F4 f;
  std::memcpy(&f, &bits, sizeof f);
  return f * wt::kF16BoundScale;
#endif
}

static inline float half1(uint16_t h) {
  const uint32_t bits = wt::f16_bound_scaled_f32_bits(h);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f * wt::kF16BoundScale;
}

// Four floats repeated in every head's lanes, in registers (vinsertf128, vshuff32x4): GCC 12
// compiled __builtin_shufflevector of a 4-lane vector to 16 lanes through the stack in the
// AVX-512 build, a store-forwarding stall that made up most of the kernel's time (its AVX2
// build kept the 8-lane one in registers).
static inline FV repeat4(F4 v) {
#if BS_HEADS == 1
  return v;
#elif BS_HEADS == 2
  const __m128 x = reinterpret_cast<__m128>(v);
  return reinterpret_cast<FV>(_mm256_set_m128(x, x));
#elif BS_HEADS == 4
  return reinterpret_cast<FV>(_mm512_broadcast_f32x4(reinterpret_cast<__m128>(v)));
#else
#error "BS_HEADS must be 1, 2 or 4"
#endif
}

// bound_scores.cpp sizes the packed query for at most 4 heads per vector.
static_assert(kHeads <= 4, "bound_scores_workspace_bytes() packs at most 4 heads per vector");

// acc[i] = the partial sums of chunk qc's heads against block bounds lo[i] (hd halves, then
// hi): NB blocks at once, so NB independent add chains share each load of the query.
template <int NB>
static inline void chunk_dots(const uint16_t* const* lo, int64_t hd, const float* qc, FV* acc) {
  for (int i = 0; i < NB; ++i) acc[i] = FV{};
  for (int64_t d4 = 0; d4 < hd / 4; ++d4) {
    FV qv;
    std::memcpy(&qv, qc + d4 * kLanes, sizeof qv);
    for (int i = 0; i < NB; ++i) {
      const FV a = qv * repeat4(half4(lo[i] + 4 * d4)), e = qv * repeat4(half4(lo[i] + hd + 4 * d4));
      acc[i] += a > e ? a : e;  // the baseline's a > c ? a : c, lane by lane (maxps)
    }
  }
}

// u[h * n_blocks + b] = scale * sum_d max(q_d lo_d, q_d hi_d) of the last row of q, head h,
// against the bounds of block b and KV head h / G, for blocks [b0, b1) of n_blocks. qp: the
// worker's ceil(G / kHeads) * kHeads * hd floats.
static void bound_dots(const wt::Tensor& q, const wt::Tensor& bounds, float scale, int64_t n_blocks, int64_t b0,
                       int64_t b1, float* qp, float* u) {
  constexpr int kBlocks = 4;  // blocks scored together
  const int64_t hd = q.ne[0], n_kv = bounds.ne[1], t = q.ne[2] - 1;
  const int64_t group = q.ne[1] / n_kv, n_chunks = (group + kHeads - 1) / kHeads, hd4 = hd / 4;
  if (b0 >= b1) return;  // a worker without blocks (more workers than blocks)
  for (int64_t g = 0; g < n_kv; ++g) {
    // qp[c][d4][p * 4 + j] = q[head c * kHeads + p][4 * d4 + j]
    for (int64_t c = 0; c < n_chunks; ++c)
      for (int p = 0; p < kHeads; ++p) {
        const int64_t hh = c * kHeads + p < group ? c * kHeads + p : group - 1;
        const float* qh = q.row<float>(g * group + hh, t);
        for (int64_t d4 = 0; d4 < hd4; ++d4)
          std::memcpy(qp + (c * hd4 + d4) * kLanes + p * 4, qh + 4 * d4, 4 * sizeof(float));
      }
    for (int64_t b = b0; b < b1; b += kBlocks) {
      const int nb = b1 - b < kBlocks ? static_cast<int>(b1 - b) : kBlocks;
      const uint16_t* lo[kBlocks];
      for (int i = 0; i < nb; ++i) lo[i] = bounds.row<uint16_t>(g, b + i);
      for (int64_t c = 0; c < n_chunks; ++c) {
        const float* qc = qp + c * hd4 * kLanes;
        FV acc[kBlocks];
        if (nb == kBlocks)
          chunk_dots<kBlocks>(lo, hd, qc, acc);
        else
          for (int i = 0; i < nb; ++i) chunk_dots<1>(lo + i, hd, qc, acc + i);
        for (int i = 0; i < nb; ++i) {
          float s[kLanes];
          std::memcpy(s, &acc[i], sizeof s);
          for (int p = 0; p < kHeads && c * kHeads + p < group; ++p) {
            const int64_t h = g * group + c * kHeads + p;
            const float* qh = q.row<float>(h, t);
            float* sp = s + 4 * p;
            for (int64_t d = 4 * hd4; d < hd; ++d) {  // head sizes not a multiple of 4
              const float a = qh[d] * half1(lo[i][d]), e = qh[d] * half1(lo[i][hd + d]);
              sp[0] += a > e ? a : e;
            }
            u[h * n_blocks + b + i] = scale * ((sp[0] + sp[1]) + (sp[2] + sp[3]));
          }
        }
      }
    }
  }
}
