// Shared by the op encoders (ops_*.cpp): binding and grid helpers, and the encoder
// signatures the op table in dispatch.cpp points at.
#pragma once

#include <string>

#include "vulkan_backend.h"

namespace wt::vk {

inline constexpr uint32_t kMaxGroupsX = 65535;  // the guaranteed minimum of maxComputeWorkGroupCount[0]

inline uint32_t unit_of(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16:
    case DType::bf16: return 2;  // read as words, addressed in elements
    default: return 1;  // quantized rows are addressed in bytes
  }
}
inline uint32_t stride(const Tensor& t, int i, uint32_t unit) { return static_cast<uint32_t>(t.nb[i] / unit); }

// The push block's strides in floats: tensor slot s (0 dst, 1 src0, 2 src1, 3 src2, as the
// kernels read them, kernels/vulkan/common.glsl) has its row stride (dimension 1) at
// nb[2s] and, for 3-D tensors, its dimension-2 stride at nb[2s + 1].
inline void push_row_stride(Push* p, int slot, const Tensor& t) { p->nb[2 * slot] = stride(t, 1, 4); }
inline void push_strides(Push* p, int slot, const Tensor& t) {
  p->nb[2 * slot] = stride(t, 1, 4);
  p->nb[2 * slot + 1] = stride(t, 2, 4);
}

// An f32 tensor bound to a slot (the usual case), or why not. validate_op has checked that
// the op's f32 tensors are f32.
inline Status bind_f32(const VulkanBackend& b, const Tensor& t, const char* what, Bound* out) {
  return b.bind_tensor(t, 4, what, out);
}

// A linear grid of n groups as (x, y) within the guaranteed limits; kernels call group_id().
inline void grid(uint64_t n, uint32_t* x, uint32_t* y) {
  *x = static_cast<uint32_t>(n < kMaxGroupsX ? n : kMaxGroupsX);
  *y = static_cast<uint32_t>((n + kMaxGroupsX - 1) / kMaxGroupsX);
  if (n == 0) *x = *y = 0;
}
inline uint64_t groups_for(uint64_t n_items, uint32_t wg) { return (n_items + wg - 1) / wg; }

// Bindings with every slot on the dummy buffer; encoders overwrite the ones they use.
inline void init_bindings(const VulkanBackend& b, Bound (&out)[kBindings]) {
  for (Bound& x : out) x = b.dummy();
}

inline Status too_big(uint64_t n) {
  if (n > 0xFFFFFFFFull) return error(WT_ERR_UNSUPPORTED, "vulkan: more than 2^32 elements in one op");
  return Status::ok();
}

inline Status record_elementwise(VulkanBackend& b, Kernel k, const Bound (&bind)[kBindings], const Push& p, uint64_t n) {
  WT_TRY(too_big(n));
  uint32_t gx, gy;
  grid(groups_for(n, b.wg_size()), &gx, &gy);
  return b.record(k, b.wg_size(), bind, p, gx, gy);
}

// Each encoder reads its op's argument struct (c.get<XxxOp>()); the call passed validate_op.
using EncodeFn = Status (*)(VulkanBackend&, const OpCall&);

// ops_dense.cpp
Status encode_add(VulkanBackend& b, const OpCall& c);
Status encode_rmsnorm(VulkanBackend& b, const OpCall& c);
Status encode_swiglu(VulkanBackend& b, const OpCall& c);
Status encode_copy_rows(VulkanBackend& b, const OpCall& c);
Status encode_embed(VulkanBackend& b, const OpCall& c);
Status encode_matmul(VulkanBackend& b, const OpCall& c);
Status encode_rope(VulkanBackend& b, const OpCall& c);
Status encode_argmax(VulkanBackend& b, const OpCall& c);
Status encode_gather_rows(VulkanBackend& b, const OpCall& c);
// ops_select.cpp
Status encode_pool1d(VulkanBackend& b, const OpCall& c);
Status encode_topk(VulkanBackend& b, const OpCall& c);
Status encode_kv_similarity(VulkanBackend& b, const OpCall& c);
// ops_attention.cpp
Status encode_attention_prefill(VulkanBackend& b, const OpCall& c);
Status encode_attention_decode(VulkanBackend& b, const OpCall& c);
Status encode_window_scores(VulkanBackend& b, const OpCall& c);
Status encode_block_scores(VulkanBackend& b, const OpCall& c);

}  // namespace wt::vk
