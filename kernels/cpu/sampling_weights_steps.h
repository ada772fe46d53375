// sampling_weights' steps on a vector V of floats (I: int32 lanes), for the baseline build
// and the AVX-512 one; include after vec_exp.h in the same namespace (no include guard: one
// inclusion per namespace, static so each ISA keeps its own copy).

// Weights of row[0, n - n % lanes); returns how many it wrote.
template <typename V, typename I>
static int64_t weights_lanes(const float* row, int64_t n, float max_logit, float inv_t, float min_p, float* w) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  const V zero = {};
  const V vmax = zero + max_logit, vinv_t = zero + inv_t, lowest = zero - 87.0f, vmin_p = zero + min_p;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V l;
    std::memcpy(&l, row + i, sizeof l);
    const V x = (l - vmax) * vinv_t;
    const V e = vec_exp<V, I>(x);
    // The compares are false for NaN.
    const I keep = (x >= lowest) & (e >= vmin_p);
    const V v = vec_select<V, I>(keep, e, zero);
    std::memcpy(w + i, &v, sizeof v);
  }
  return i;
}
