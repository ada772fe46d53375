// Reading a KV cache row of f32, f16 (uint16_t bits) or q8_0 (KvQ8 blocks) as f32: whole
// rows into scratch (kv_to_f32, prefill), 16 or 32 values in registers (load16k, load32k,
// decode) and one value (kv_elem, tails). The values are dequantize's, bit for bit, so the
// attention's f32 arithmetic over them is the f32 kernel's. Part of attention_impl.h: include
// only from there, inside its per-ISA namespace after vec16.h (F16v) and with its WT_ATTN_*
// macros set; no include guard (one inclusion per namespace).

// Four f16 values as f32 without F16C (the baseline x86 build): f16_to_f32's result lane
// by lane, bit for bit (tests/unit/test_cpu_ops.cpp checks all 65536 halves), where
// its out-of-line call per value cost more than the dot products. Normal values rebias the
// exponent, which is exact; subnormals and zeros are their 10-bit integer times 2^-24, exact
// in float and independent of denormals-are-zero; inf and NaN keep their payload.
typedef uint16_t U4h __attribute__((vector_size(8)));
typedef int32_t I4v __attribute__((vector_size(16)));
typedef float F4f __attribute__((vector_size(16)));
static inline F4f f16x4_to_f32(const uint16_t* src) {
  U4h h;
  std::memcpy(&h, src, sizeof h);
  const I4v x = __builtin_convertvector(h, I4v);
  const I4v em = x & 0x7FFF, sign = (x & 0x8000) << 16;
  const I4v normal = (em << 13) + ((127 - 15) << 23);
  const I4v special = (em << 13) | 0x7F800000;  // exponent 31: inf or NaN
  const F4f sub_f = __builtin_convertvector(em, F4f) * 0x1p-24f;
  I4v sub;
  std::memcpy(&sub, &sub_f, sizeof sub);
  const I4v is_sub = em < 0x0400, is_special = em >= 0x7C00;  // lanes of all ones where true
  const I4v bits = ((is_sub & sub) | (~is_sub & ((is_special & special) | (~is_special & normal)))) | sign;
  F4f out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// KV of f16 (the half-precision cache) as f32: n values from src into dst. The rest of the
// kernel then runs exactly as over an f32 cache holding the same (rounded) values, so its
// results are the f32 kernel's on those values, bit for bit. With F16C (the AVX2 and
// AVX-512 builds define WT_ATTN_AVX2) eight at a time, on aarch64 (WT_ATTN_NEON) four with
// fcvtl, else four with integer steps (f16x4_to_f32).
static inline void kv_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(WT_ATTN_AVX2)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#elif defined(WT_ATTN_NEON)
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
#else
  for (; i + 4 <= n; i += 4) {
    const F4f f = f16x4_to_f32(src + i);
    std::memcpy(dst + i, &f, sizeof f);
  }
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
static inline float kv_scale(const KvQ8& b) {
#if defined(WT_ATTN_AVX2)
  return _cvtsh_ss(b.d);  // exact, as f16_to_f32
#else
  return wt::cpu::f16_to_f32(b.d);
#endif
}
static inline void kv_to_f32(const KvQ8* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
    const float d = kv_scale(src[b]);
    for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(src[b].q[j]);
  }
}

// Elements [d, d + 16) of a cache row as f32 (d a multiple of 16; load32k: [d, d + 32),
// d a multiple of 32, one q8_0 block), and element d alone: the values kv_to_f32 gives,
// converted in registers where the row is read (decode reads f16 and q8_0 rows in place; a
// pass through scratch cost a store and a load per value).
static inline F16v load16k(const float* row, int64_t d) { return load16(row + d); }
static inline F16v load16k(const uint16_t* row, int64_t d) {
#if defined(WT_ATTN_AVX512)
  return F16v(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + d))));
#elif defined(WT_ATTN_AVX2)
  F16v r;
  r.p[0] = FNv(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d))));
  r.p[1] = FNv(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d + 8))));
  return r;
#elif defined(WT_ATTN_NEON)
  F16v r;
  for (int c = 0; c < 4; ++c) r.p[c] = FNv(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(row + d + 4 * c))));
  return r;
#else
  F16v r;
  for (int c = 0; c < kParts; ++c) {  // kParts native vectors of 4 lanes in this build
    const F4f f = f16x4_to_f32(row + d + 4 * c);
    std::memcpy(&r.p[c], &f, sizeof f);
  }
  return r;
#endif
}
// 16 int8 values of a q8_0 block as f32 (not yet scaled).
static inline F16v q8_to_f32(const int8_t* q) {
#if defined(WT_ATTN_AVX512)
  return F16v(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)))));
#elif defined(WT_ATTN_AVX2)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  F16v r;
  r.p[0] = FNv(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)));
  r.p[1] = FNv(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8))));
  return r;
#else
  // A loop GCC vectorizes well; __builtin_convertvector of 4 int8 lanes at a time was 40%
  // slower in the baseline build (bench_attention).
  float f[16];
  for (int j = 0; j < 16; ++j) f[j] = static_cast<float>(q[j]);
  return load16(f);
#endif
}
static inline F16v load16k(const KvQ8* row, int64_t d) {
  const KvQ8& b = row[d / 32];
  return kv_scale(b) * q8_to_f32(b.q + d % 32);
}
template <typename T>
static inline void load32k(const T* row, int64_t d, F16v* lo, F16v* hi) {
  *lo = load16k(row, d);
  *hi = load16k(row, d + 16);
}
static inline void load32k(const KvQ8* row, int64_t d, F16v* lo, F16v* hi) {
  const KvQ8& b = row[d / 32];
  const float scale = kv_scale(b);
  *lo = scale * q8_to_f32(b.q);
  *hi = scale * q8_to_f32(b.q + 16);
}
static inline float kv_elem(const float* row, int64_t d) { return row[d]; }
static inline float kv_elem(const uint16_t* row, int64_t d) { return wt::cpu::f16_to_f32(row[d]); }
static inline float kv_elem(const KvQ8* row, int64_t d) {
  return kv_scale(row[d / 32]) * static_cast<float>(row[d / 32].q[d % 32]);
}
