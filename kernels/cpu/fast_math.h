// Vectorizable float helpers for the CPU kernels. std::exp is a scalar library call the
// compiler cannot vectorize; attention and SwiGLU call exp hundreds of millions of times
// per long prefill, so they use this polynomial instead (max relative error ~2e-7 over
// the range used, measured in tests/unit/test_cpu_ops.cpp).
#pragma once

#include <bit>
#include <cstdint>

namespace wt::cpu {

// fast_exp's constants, shared with vec_exp.h's vector copy of the same steps: ln2 split in
// a high part exact in float and a low part (r keeps its precision), and a minimax-style
// polynomial for exp(r) on [-ln2/2, ln2/2], highest degree first.
inline constexpr float kExpLog2e = 1.44269504088896341f;
inline constexpr float kExpLn2Hi = 0.693359375f;
inline constexpr float kExpLn2Lo = -2.12194440e-4f;
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

inline float fast_exp(float x) {
  // exp(x) = 2^n * exp(r), n = round(x / ln2), |r| <= ln2 / 2.
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  // NaN passes the clamp (both comparisons are false) and must not reach the int
  // conversion below, which is undefined for it: n = 0 keeps the NaN in r and the result.
  float n = __builtin_floorf(x * kExpLog2e + 0.5f);
  n = n == n ? n : 0.0f;
  float r = x - n * kExpLn2Hi;
  r = r - n * kExpLn2Lo;
  float p = kExpPoly[0];
#pragma GCC unroll 6
  for (int i = 1; i < 6; ++i) p = p * r + kExpPoly[i];
  p = p * r * r + r + 1.0f;
  const int32_t e = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(e);
}

inline float silu(float x) { return x / (1.0f + fast_exp(-x)); }

// gelu's tanh form, 0.5 x (1 + tanh(y)) with y = sqrt(2 / pi) (x + 0.044715 x^3), written as
// x sigmoid(2y) (the same function) so it is silu's steps on another argument.
inline constexpr float kGelu2SqrtHalfPi = 1.5957691216057308f;  // 2 sqrt(2 / pi)
inline float gelu_tanh(float x) { return x / (1.0f + fast_exp(-kGelu2SqrtHalfPi * (x + 0.044715f * x * x * x))); }

}  // namespace wt::cpu
