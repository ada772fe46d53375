// A tensor is a view: a pointer, a type and a shape. It never owns memory.
// ne[0] is the innermost (contiguous) dimension, as in GGUF; nb[i] are byte strides.
// Shape comments everywhere are written outermost first, as the math reads: a tensor
// [rows, n_head, head_dim] has ne = {head_dim, n_head, rows}; a weight [n_out, n_in] has
// rows of n_in elements (ne0 = n_in).
#pragma once

#include <cstddef>
#include <cstdint>

#include "dtype.h"

namespace wt {

struct Tensor {
  void* data = nullptr;  // host-addressable for the CPU backend; device address otherwise
                         // (a placed weight on a discrete GPU: the host must never dereference it)
  DType type = DType::f32;
  int32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};
  size_t nb[4] = {0, 0, 0, 0};

  bool empty() const { return data == nullptr; }
  int64_t n_elems() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  template <typename T>
  T* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(data) + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]);
  }
};

// A contiguous tensor over data with shape ne (unused trailing dims = 1).
Tensor make_tensor(void* data, DType type, int32_t n_dims, const int64_t* ne);
inline Tensor make_tensor_2d(void* data, DType type, int64_t ne0, int64_t ne1) {
  const int64_t ne[2] = {ne0, ne1};
  return make_tensor(data, type, 2, ne);
}

// The first n rows (outermost dimension) of t.
inline Tensor first_rows(Tensor t, int64_t n) {
  t.ne[t.n_dims - 1] = n;
  return t;
}

// Rows [i, i + n) of t (outermost dimension) as a view.
inline Tensor rows_view(Tensor t, int64_t i, int64_t n) {
  t.data = static_cast<char*>(t.data) + static_cast<size_t>(i) * t.nb[t.n_dims - 1];
  t.ne[t.n_dims - 1] = n;
  return t;
}

// Row i of t (outermost dimension) as a one-row view.
inline Tensor row_view(Tensor t, int64_t i) { return rows_view(t, i, 1); }

}  // namespace wt
