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

void kv_load_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::f16: {
      const uint16_t* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(in[i]);
      return;
    }
    case DType::q8_0: {
      const uint8_t* in = static_cast<const uint8_t*>(src);
      for (int64_t b = 0; b < n / 32; ++b, in += 34) {
        uint16_t dh;
        std::memcpy(&dh, in, sizeof dh);
        const float d = f16_to_f32(dh);
        const int8_t* q = reinterpret_cast<const int8_t*>(in + 2);
        for (int j = 0; j < 32; ++j) dst[b * 32 + j] = d * static_cast<float>(q[j]);
      }
      return;
    }
    default:
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
      return;
  }
}

}  // namespace wt::cpu
