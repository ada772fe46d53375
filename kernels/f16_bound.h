// Quest's key bounds (ops.h: KeyBoundsOp) are stored as f16, rounded outward: a block's
// minimum down and its maximum up, so the stored pair still encloses every key of the block
// and a score computed from it still bounds the block's q.k. Half the bytes of f32 bounds
// for a decode step to read, the kernel that reads them being memory-bound.
//
// Two rules beyond IEEE's directed rounding, so every reader converts the pair exactly and
// the same way (a GPU may flush f16 subnormals to zero when it reads them):
// - no subnormals: a magnitude below f16's smallest normal (2^-14) goes to zero or to 2^-14,
//   whichever is outward;
// - saturation: a magnitude above f16's largest finite value (65504) is stored as 65504.
//   Such a key is out of an f16 KV cache's range too; the bound then no longer holds for
//   it, but every score stays finite (an infinite bound times a zero query would be NaN).
// The CPU and CUDA kernels call these functions; the Vulkan kernel
// (vulkan/key_bounds.comp) and the NumPy reference (tests/reference/prune_reference.py)
// follow the same steps.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define WT_F16_BOUND_FN __host__ __device__ inline
#else
#define WT_F16_BOUND_FN inline
#endif

namespace wt {

// The f16 bits of the f32 whose bits are `f32_bits`, rounded toward +inf (up) or -inf.
WT_F16_BOUND_FN uint16_t f16_bound_bits(uint32_t f32_bits, bool up) {
  const uint32_t sign = (f32_bits >> 16) & 0x8000u, a = f32_bits & 0x7FFFFFFFu;
  if (a == 0) return static_cast<uint16_t>(sign);
  const bool away = (sign == 0) == up;  // outward: the magnitude rounds up
  const int e = static_cast<int>(a >> 23) - 127;
  uint32_t mag;
  if (e < -14)
    mag = away ? 0x0400u : 0u;  // 2^-14 or zero, never a subnormal
  else if (e > 15)
    mag = 0x7BFFu;  // saturate (also for inf and NaN keys)
  else {
    mag = (static_cast<uint32_t>(e + 15) << 10) | ((a >> 13) & 0x3FFu);
    if (away && (a & 0x1FFFu) != 0) ++mag;  // a carry into the exponent is still right
    if (mag > 0x7BFFu) mag = 0x7BFFu;
  }
  return static_cast<uint16_t>(sign | mag);
}

// The f32 bits of a stored bound: exact for zero and normal f16 values, the only ones stored.
// (f16 exponent e maps to the f32 field e + 112 when the value is multiplied by 2^112;
// shifting alone gives the value times 2^-112.)
WT_F16_BOUND_FN uint32_t f16_bound_scaled_f32_bits(uint16_t h) {
  return (static_cast<uint32_t>(h & 0x8000u) << 16) | (static_cast<uint32_t>(h & 0x7FFFu) << 13);
}
constexpr float kF16BoundScale = 0x1p112f;

}  // namespace wt
