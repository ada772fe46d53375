#include "tensor.h"

namespace wt {

Tensor make_tensor(void* data, DType type, int32_t n_dims, const int64_t* ne) {
  Tensor t;
  t.data = data;
  t.type = type;
  t.n_dims = n_dims;
  for (int i = 0; i < n_dims && i < 4; ++i) t.ne[i] = ne[i];
  const DTypeTraits& tr = traits(type);
  t.nb[0] = tr.block_bytes;
  t.nb[1] = tr.block_bytes * static_cast<size_t>(t.ne[0] / tr.block_elems);
  for (int i = 2; i < 4; ++i) t.nb[i] = t.nb[i - 1] * static_cast<size_t>(t.ne[i - 1]);
  return t;
}

}  // namespace wt
