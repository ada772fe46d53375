// fast_exp (fast_math.h) on a GCC vector of floats V (I: the int32 vector of the same
// lanes), the same steps lane by lane, so the same bits for every input (NaN stays NaN).
// GCC leaves loops over the scalar one unvectorized (its floor and clamps if-convert only
// under -fno-trapping-math; in the target-pragma builds it finds "no vectype"), which made
// the exponentials cost more than the dot products. Static, so each ISA's copy stays its
// own: include it only inside a namespace of its user, after any target pragma (the *_impl.h
// headers in their per-ISA namespace, swiglu.cpp in an unnamed one; no include guard: one
// inclusion per namespace). Its constants are fast_math.h's: include that first, at file scope.

// Lane select by a compare mask (the ?: on vectors is not taken by every compiler).
template <typename V, typename I>
static inline V vec_select(const I& m, const V& a, const V& b) {
  return (V)(((I)a & m) | ((I)b & ~m));
}

template <typename V, typename I>
static inline V vec_exp(const V& x_in) {
  const V zero = {};
  V x = vec_select<V, I>(x_in < zero - 87.0f, zero - 87.0f, x_in);
  x = vec_select<V, I>(x > zero + 88.0f, zero + 88.0f, x);
  const V y = x * kExpLog2e + 0.5f;
  const V rn = (y + 12582912.0f) - 12582912.0f;                   // y rounded to an integer (|y| < 2^22)
  const V n = rn - vec_select<V, I>(rn > y, zero + 1.0f, zero);  // floor(y)
  V r = x - n * kExpLn2Hi;
  r = r - n * kExpLn2Lo;
  V p = zero + kExpPoly[0];
#pragma GCC unroll 6
  for (int i = 1; i < 6; ++i) p = p * r + kExpPoly[i];
  p = p * r * r + r + 1.0f;
  // 2^n from n's bits in n + 1.5 * 2^23, whose low mantissa bits hold n.
  const I e = ((I)(n + 12582912.0f) - (0x4B400000 - 127)) << 23;
  return p * (V)e;
}
