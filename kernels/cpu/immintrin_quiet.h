// <immintrin.h> for the AVX-512 builds (attention_avx512.cpp, bound_scores_avx512.cpp). GCC 12
// warns inside its own avx512fintrin.h: the _mm512_undefined_* placeholders of intrinsics
// such as _mm512_cvtph_ps, _mm512_cvtepi32_ps and _mm512_broadcast_f32x4 look uninitialized
// to it. The warning is silenced for the header's lines only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
