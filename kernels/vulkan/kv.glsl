// KV cache reads for the kernels that score or attend over a cache (attention, window_scores,
// block_scores, key_bounds): the cache's type comes from a -D define on the including kernel, KV_F16 or
// KV_Q8_0 (else f32). Keys are binding 2; values binding 3 where the kernel defines KV_V.
// Rows start at `row`, in elements for f32 and f16, in bytes for q8_0 (34-byte blocks of 32
// values: an f16 scale d, then 32 int8 q, x = q * d: kernels/cpu/quant.h). f16 and q8_0 are
// read from uint views, so neither needs the 16-bit or 8-bit storage features; q8_0 rows start
// on an even byte (the encoder checks), so a block's scale is one aligned half-word.
//   load_k(row, i), load_v(row, i): element i of a key / value row, the value the CPU reads
//   (KV_VEC4: load_k4 / load_v4, four elements at once).

#if defined(KV_Q8_0)
#define KV_VIEW uint
#define KV_LOAD(name, buf)                                                              \
  float name(uint row, uint i) {                                                        \
    const uint blk = row + (i >> 5) * 34u, b = blk + 2u + (i & 31u);                    \
    const int q = bitfieldExtract(int(buf[b >> 2]), int((b & 3u) * 8u), 8);             \
    return float(q) * unpackHalf2x16(buf[blk >> 2] >> ((blk & 2u) * 8u)).x;             \
  }
#elif defined(KV_F16)
#define KV_VIEW uint
#define KV_LOAD(name, buf) \
  float name(uint row, uint i) { const uint e = row + i; return unpackHalf2x16(buf[e >> 1] >> ((e & 1u) * 16u)).x; }
#else
#define KV_VIEW float
#define KV_LOAD(name, buf) \
  float name(uint row, uint i) { return buf[row + i]; }
#endif

#if defined(KV_VEC4)
// load_k4(row, i), load_v4(row, i) instead: elements i..i+3 (i a multiple of 4) in one
// call, for kernels that read rows 16 bytes at a time (attention_lane.comp). f32 rows start
// on 4 floats and f16 rows on 2 halves (the encoder checks); a q8_0 group of 4 values
// starts on an even byte, so it lies in one word or across two.
#undef KV_LOAD
#if defined(KV_Q8_0)
#define KV_LOAD(name, buf)                                                                   \
  vec4 name(uint row, uint i) {                                                              \
    const uint blk = row + (i >> 5) * 34u, b = blk + 2u + (i & 31u);                         \
    const uint lo = buf[b >> 2], hi = buf[(b + 3u) >> 2];                                    \
    const int w = int((b & 2u) != 0u ? (lo >> 16) | (hi << 16) : lo);                       \
    const vec4 q = vec4(bitfieldExtract(w, 0, 8), bitfieldExtract(w, 8, 8), bitfieldExtract(w, 16, 8), \
                        bitfieldExtract(w, 24, 8));                                          \
    return q * unpackHalf2x16(buf[blk >> 2] >> ((blk & 2u) * 8u)).x;                         \
  }
#elif defined(KV_F16)
#define KV_LOAD(name, buf)                                                  \
  vec4 name(uint row, uint i) {                                             \
    const uint w = (row + i) >> 1;                                          \
    return vec4(unpackHalf2x16(buf[w]), unpackHalf2x16(buf[w + 1u]));        \
  }
#else
#undef KV_VIEW
#define KV_VIEW vec4
#define KV_LOAD(name, buf) \
  vec4 name(uint row, uint i) { return buf[(row + i) >> 2]; }
#endif
#define KV_LOAD_K load_k4
#define KV_LOAD_V load_v4
#else
#define KV_LOAD_K load_k
#define KV_LOAD_V load_v
#endif
layout(binding = 2) readonly buffer KvK { KV_VIEW kv_k[]; };
KV_LOAD(KV_LOAD_K, kv_k)
#if defined(KV_V)
layout(binding = 3) readonly buffer KvV { KV_VIEW kv_v[]; };
KV_LOAD(KV_LOAD_V, kv_v)
#endif
