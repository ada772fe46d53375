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
inline void push_strides(Push* p, int slot, const Tensor& t, uint32_t unit = 4) {
  p->nb[2 * slot] = stride(t, 1, unit);
  p->nb[2 * slot + 1] = stride(t, 2, unit);
}

// An f32 tensor bound to a slot (the usual case), or why not. validate_op has checked that
// the op's f32 tensors are f32.
inline Status bind_f32(const VulkanBackend& b, const Tensor& t, const char* what, Bound* out) {
  return b.bind_tensor(t, 4, what, out);
}

// An f16 tensor (Quest's key bounds) bound in halves, read and written as words: its start
// and row strides must be even in halves.
inline Status bind_halves(const VulkanBackend& b, const Tensor& t, const char* what, Bound* out) {
  bool even = reinterpret_cast<uintptr_t>(t.data) % 4 == 0;
  for (int i = 1; i < 4; ++i) even = even && t.nb[i] % 4 == 0;
  if (!even) return error(WT_ERR_INVALID_ARGUMENT, std::string("vulkan: ") + what + ": f16 rows must start on a 4-byte word");
  return b.bind_tensor(t, 2, what, out);
}

// A KV cache (f32, f16 or q8_0, validate_op checked which) bound in the units its kernels
// address it in (kernels/vulkan/kv.glsl): floats, halves or bytes, returned in *unit. A q8_0
// row must start on an even byte: its blocks' scales are read as aligned half-words.
inline Status bind_kv(const VulkanBackend& b, const Tensor& t, const char* what, Bound* out, uint32_t* unit) {
  *unit = t.type == DType::f32 ? 4 : t.type == DType::f16 ? 2 : 1;
  if (t.type == DType::q8_0) {
    bool even = reinterpret_cast<uintptr_t>(t.data) % 2 == 0;
    for (int i = 1; i < 4; ++i) even = even && t.nb[i] % 2 == 0;
    if (!even) return error(WT_ERR_INVALID_ARGUMENT, std::string("vulkan: ") + what + ": q8_0 rows must start on an even byte");
  }
  return b.bind_tensor(t, *unit, what, out);
}

// An op's optional key ids (key row r is row ids[r] of k: a pager's host tier) uploaded to
// *out; *flags gets bit 0, which tells the kernel to read them (key_bounds.comp,
// block_scores.comp).
inline Status bind_key_ids(VulkanBackend& b, const int32_t* ids, int32_t n, Bound* out, uint32_t* flags) {
  if (!ids || n <= 0) return Status::ok();
  *flags |= 1u;
  return b.upload(ids, sizeof(int32_t) * static_cast<size_t>(n), out);
}

// The variant of a kernel that reads a KV cache of type t: the f32 variant's f16 and q8_0
// twins follow it in WT_VK_KERNELS.
inline Kernel kv_variant(Kernel f32, DType t) {
  const uint32_t delta = t == DType::f16 ? 1 : t == DType::q8_0 ? 2 : 0;
  return static_cast<Kernel>(static_cast<uint32_t>(f32) + delta);
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
// Rows into a KV cache of f16 or q8_0, for copy_rows (no ids: src row r to dst row row0 + r)
// and gather_rows (by ids, its flags: bit 0 src 3-D, bit 1 dst 3-D, bit 2 per head).
struct KvRows {
  Tensor dst, src;
  int64_t heads = 1, n_rows = 0;
  int32_t row0 = 0;
  const int32_t* ids = nullptr;
  int64_t n_ids = 0;
  uint32_t flags = 0;
};
Status encode_kv_rows(VulkanBackend& b, const KvRows& a);
// ops_select.cpp
Status encode_pool1d(VulkanBackend& b, const OpCall& c);
Status encode_topk(VulkanBackend& b, const OpCall& c);
Status encode_kv_similarity(VulkanBackend& b, const OpCall& c);
Status encode_key_bounds(VulkanBackend& b, const OpCall& c);
Status encode_bound_scores(VulkanBackend& b, const OpCall& c);
size_t bound_scores_workspace_bytes(const BoundScoresOp& a);
// ops_attention.cpp
// What the attention-shaped kernels cannot do (head_dim > 256); validate_op has checked that
// q and k agree in head_dim and that n_head is a multiple of n_head_kv.
Status check_heads(const Tensor& q, const char* op);
Status encode_attention_prefill(VulkanBackend& b, const OpCall& c);
Status encode_attention_decode(VulkanBackend& b, const OpCall& c);
Status encode_window_scores(VulkanBackend& b, const OpCall& c);
Status encode_block_scores(VulkanBackend& b, const OpCall& c);

}  // namespace wt::vk
