#include "kv_rows.h"

#include <cstring>

#include "quant.h"

namespace wt::cpu {

void kv_store_row(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::f16: {
      uint16_t* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::q8_0:
      quantize_q8_0(src, static_cast<uint8_t*>(dst), n);
      return;
    default:  // f32 (validate_op admits only KV types here)
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
      return;
  }
}

}  // namespace wt::cpu
