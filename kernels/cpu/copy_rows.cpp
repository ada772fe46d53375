#include <cstring>

#include "ops_cpu.h"
#include "quant.h"

namespace wt::cpu {

// f32 rows are copied as bytes; an f16 destination (a half-precision KV cache) gets each
// value rounded to nearest even, as ops.def's "f32 -> dst type" says.
void copy_rows(const ThreadCtx& tc, const Tensor& dst, const Tensor& src, int64_t row0) {
  const int64_t d = src.ne[0];
  const size_t row_bytes = static_cast<size_t>(d) * sizeof(float);
  int64_t begin, end;
  tc.split(src.n_rows(), &begin, &end);
  for (int64_t r = begin; r < end; ++r) {
    if (dst.type == DType::f16) {
      const float* in = src.row<float>(r);
      uint16_t* out = dst.row<uint16_t>(row0 + r);
      for (int64_t i = 0; i < d; ++i) out[i] = f32_to_f16(in[i]);
    } else {
      std::memcpy(dst.row<float>(row0 + r), src.row<float>(r), row_bytes);
    }
  }
}

}  // namespace wt::cpu
