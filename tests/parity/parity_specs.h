// What the per-op case lists share (parity_cases.cpp, parity_cases_matmul.cpp): tensor
// specs, the case maker, views into a case's tensors, and the matmul cases' list.
#pragma once

#include <string>
#include <vector>

#include "parity_cases.h"

namespace wt::parity {

inline TensorSpec f32(int32_t n_dims, int64_t a, int64_t b = 1, int64_t c = 1, Fill fill = Fill::normal, float scale = 1.0f) {
  TensorSpec s;
  s.used = true;
  s.n_dims = n_dims;
  s.ne[0] = a;
  s.ne[1] = b;
  s.ne[2] = c;
  s.fill = fill;
  s.scale = scale;
  return s;
}
inline TensorSpec typed(DType t, int64_t a, int64_t b, float scale = 1.0f) {
  TensorSpec s = f32(2, a, b, 1, Fill::normal, scale);
  s.type = t;
  return s;
}
// A KV cache of type t: [rows, heads, hd].
inline TensorSpec kv(DType t, int64_t hd, int64_t heads, int64_t rows) {
  TensorSpec s = f32(3, hd, heads, rows);
  s.type = t;
  return s;
}
inline TensorSpec padded(TensorSpec s, int64_t pad) {
  s.row_pad = pad;
  return s;
}
inline Case make(Op op, std::string label) {
  Case c;
  c.op = op;
  c.label = std::move(label);
  return c;
}
// Copies of case c whose keys (src[1], an f32 cache) are a cache of f16 and of q8_0.
inline void add_kv_type_twins(std::vector<Case>& v, const Case& c) {
  for (DType t : {DType::f16, DType::q8_0}) {
    Case n = c;
    n.label = std::string("kv ") + dtype_name(t) + " " + c.label;
    n.kv_type = t;
    n.src[1].type = t;
    v.push_back(n);
  }
}
// Columns [c0, c0 + n) of every row of an f32 t; rows [r0, r0 + n) of t.
inline Tensor cols(Tensor t, int64_t c0, int64_t n) {
  t.data = static_cast<char*>(t.data) + c0 * static_cast<int64_t>(sizeof(float));
  t.ne[0] = n;
  return t;
}
inline Tensor rows(Tensor t, int64_t r0, int64_t n) {
  t.data = static_cast<char*>(t.data) + r0 * static_cast<int64_t>(t.nb[1]);
  t.ne[1] = n;
  return t;
}
inline std::vector<int32_t> iota_ids(int32_t n, int32_t step, int32_t start, int32_t mod) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = (start + i * step) % mod;
  return v;
}

// The matmul cases (parity_cases_matmul.cpp): every weight type, products in one grid,
// prefill rows, and the one-row fusions a decode step calls.
void matmul_cases(std::vector<Case>& v);

}  // namespace wt::parity
