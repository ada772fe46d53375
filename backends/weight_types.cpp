// Weight types per backend (weight_types.h).
#include "backends/weight_types.h"

#include <initializer_list>

namespace wt {

namespace {

uint64_t bits(std::initializer_list<DType> types) {
  uint64_t b = 0;
  for (DType t : types) b |= dtype_bit(t);
  return b;
}

}  // namespace

uint64_t weight_types_of(wt_backend_kind kind) {
  switch (kind) {
    case WT_BACKEND_CPU:  // kernels/cpu/quant.h
      return bits({DType::f32, DType::f16, DType::bf16, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1,
                   DType::q8_0, DType::q4_k, DType::q5_k, DType::q6_k});
    case WT_BACKEND_VULKAN:  // kernels/vulkan/dequant.glsl
      return bits({DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0,
                   DType::q5_1, DType::q4_k, DType::q5_k, DType::q6_k});
    case WT_BACKEND_CUDA:  // kernels/cuda/common.cuh
      return bits({DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0,
                   DType::q5_1, DType::q4_k, DType::q5_k, DType::q6_k});
  }
  return 0;
}

uint64_t kv_types_of(wt_backend_kind kind) {
  switch (kind) {
    case WT_BACKEND_CPU:     // kernels/cpu/attention_impl.h, kv_rows.cpp
    case WT_BACKEND_VULKAN:  // kernels/vulkan/kv.glsl, kv_rows.comp
    case WT_BACKEND_CUDA:    // kernels/cuda/kv_read.cuh, kv_store.cuh
      return bits({DType::f32, DType::f16, DType::q8_0});
  }
  return 0;
}

bool device_only_unmapped_of(wt_backend_kind kind, bool unified_memory) {
  switch (kind) {
    case WT_BACKEND_CPU: return false;
    case WT_BACKEND_VULKAN: return !unified_memory;
    case WT_BACKEND_CUDA: return true;
  }
  return false;
}

std::string weight_type_names(uint64_t types) {
  std::string s;
  for (uint32_t id = 0; id < 64; ++id) {
    if (!(types & (uint64_t{1} << id))) continue;
    const DTypeTraits* t = dtype_traits(id);
    if (t) s += (s.empty() ? "" : ", ") + std::string(t->name);
  }
  return s;
}

}  // namespace wt
