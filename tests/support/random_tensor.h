// Seeded random data and tensor views over it, shared by the kernel tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/tensor.h"

namespace wt::test {

inline std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A contiguous f32 view [a, b, c] (a innermost) of v.
inline Tensor t3(std::vector<float>& v, int64_t a, int64_t b, int64_t c) {
  const int64_t ne[3] = {a, b, c};
  return make_tensor(v.data(), DType::f32, 3, ne);
}

// Element (a, b, c) of a contiguous [A, B, C] tensor (a innermost).
inline size_t at(int64_t a, int64_t b, int64_t c, int64_t A, int64_t B) {
  return static_cast<size_t>((c * B + b) * A + a);
}

}  // namespace wt::test
