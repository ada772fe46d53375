// Compute pipelines: one per kernel variant (kernels/vulkan/<op>.comp built with -D
// defines), created lazily on first use and cached for the backend's life. All share one
// pipeline layout: five storage-buffer bindings set by push descriptors (dst, src0, src1,
// src2, aux = uploaded ids / host results; a second layout has src0 and src1 as texel
// buffers, texel_bindings) and one 128-byte push-constant block (Push),
// so a dispatch only pushes descriptors and constants. The workgroup size is a
// specialization constant (id 0), chosen from the device caps.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

#include "device.h"

namespace wt::vk {

// Kernel variants; names match the SPIR-V blobs the build embeds (kernels/vulkan/CMakeLists.txt).
#define WT_VK_KERNELS(X)                                                                              \
  X(add) X(rmsnorm) X(swiglu) X(copy_rows) X(kv_store_f16) X(kv_store_q8_0) X(kv_copy) X(embed_f32)  \
  X(embed_f16) X(embed_q8_0) X(embed_q4_0) X(embed_q4_1) X(embed_q5_0) X(embed_q5_1) X(embed_bf16)   \
  X(embed_q4_k) X(embed_q5_k) X(embed_q6_k) X(rope) X(rope_f64) X(rope_table) X(matmul_f32) X(matmul_f16)          \
  X(matmul_q8_0) X(matmul_q4_0) X(matmul_q4_1) X(matmul_q5_0) X(matmul_q5_1) X(matmul_bf16)           \
  X(matmul_q4_k) X(matmul_q5_k) X(matmul_q6_k) X(matmul_sg_f32) X(matmul_sg_f16) X(matmul_sg_q8_0)    \
  X(matmul_sg_q4_0) X(matmul_sg_q4_1) X(matmul_sg_q5_0) X(matmul_sg_q5_1) X(matmul_sg_bf16)           \
  X(matmul_sg_q4_k) X(matmul_sg_q5_k) X(matmul_sg_q6_k) X(matmul_tiled_f32) X(matmul_tiled_f16)      \
  X(matmul_tiled_q8_0) X(matmul_tiled_q4_0) X(matmul_tiled_q4_1) X(matmul_tiled_q5_0)                 \
  X(matmul_tiled_q5_1) X(matmul_tiled_bf16) X(matmul_tiled_q4_k) X(matmul_tiled_q5_k)                 \
  X(matmul_tiled_q6_k) X(matmul_lane_f32) X(matmul_lane_f16)                                          \
  X(matmul_lane_q8_0) X(matmul_lane_q4_0) X(matmul_lane_q4_1) X(matmul_lane_q5_0) X(matmul_lane_q5_1)     \
  X(matmul_lane_bf16) X(matmul_lane_q4_k) X(matmul_lane_q5_k) X(matmul_lane_q6_k) X(matmul_lt_q8_0)      \
  X(matmul_lt_q4_0) X(matmul_lt_q4_1) X(matmul_lt_q5_0) X(matmul_lt_q5_1) X(matmul_lt_q4_k) X(matmul_lt_q5_k)    \
  X(matmul_lt_q6_k) X(argmax) X(gather_rows) X(pool1d) X(topk)    \
  X(kv_similarity) X(attention_prefill) X(attention_prefill_f16) X(attention_prefill_q8_0)            \
  X(attention_decode) X(attention_decode_f16) X(attention_decode_q8_0) X(attention_split)             \
  X(attention_split_f16) X(attention_split_q8_0) X(attention_merge) X(attention_tiled)                 \
  X(attention_tiled_f16) X(attention_tiled_q8_0) X(attention_lane_prefill)                             \
  X(attention_lane_prefill_f16) X(attention_lane_prefill_q8_0) X(attention_lane_decode)               \
  X(attention_lane_decode_f16) X(attention_lane_decode_q8_0) X(window_scores_stats)                   \
  X(window_scores_stats_f16) X(window_scores_stats_q8_0) X(window_scores) X(window_scores_f16)        \
  X(window_scores_q8_0) X(block_scores_qbar) X(block_scores) X(block_scores_f16) X(block_scores_q8_0) \
  X(key_bounds) X(key_bounds_f16) X(key_bounds_q8_0) X(bound_scores_head) X(bound_scores_sum)

enum class Kernel : uint32_t {
#define WT_VK_ENUM(name) name,
  WT_VK_KERNELS(WT_VK_ENUM)
#undef WT_VK_ENUM
  count
};
const char* kernel_name(Kernel k);

constexpr uint32_t kBindings = 5;
enum Binding : uint32_t { b_dst = 0, b_src0 = 1, b_src1 = 2, b_src2 = 3, b_aux = 4 };

// The bindings (bit i: binding i) kernel k reads as uniform texel buffers of 16-byte texels
// (Bound::view); every other binding is a storage buffer. The matmul_lt_* kernels (the lane
// matmul with W_TEXEL) read x and the weights so.
constexpr uint32_t texel_bindings(Kernel k) {
  return k >= Kernel::matmul_lt_q8_0 && k <= Kernel::matmul_lt_q6_k ? (1u << b_src0) | (1u << b_src1) : 0u;
}

// The push-constant block every kernel declares (kernels/vulkan/common.glsl). Offsets and
// strides are in units of the binding's view: 4-byte words for f32/int32 and for the
// quantized types' uint view (whose offsets/strides are in bytes), 2 bytes for f16 and bf16.
struct Push {
  uint32_t off[kBindings] = {};  // first element of each tensor within its binding (set by record)
  uint32_t ne[4] = {};           // op-specific sizes
  uint32_t nb[8] = {};           // dst nb1, nb2, src0 nb1, nb2, src1 nb1, nb2, src2 nb1, nb2
  int32_t i[4] = {};
  float f[4] = {};
  uint32_t n_ids = 0;
  uint32_t flags = 0;
};
static_assert(sizeof(Push) <= 128, "push constants must fit the guaranteed 128 bytes");

// The specialization constants of a pipeline (common.glsl): 0 the workgroup size, 1 the
// alignment every weight block starts on (kWAlign), 2 the activation rows per matmul tile
// (kTileRows), 3 and 4 the head_dim and query heads per KV head of attention_lane.comp, 5
// matmul.comp's fusions (kFuse: MatmulFuse bits). A kernel ignores those it does not read;
// implicit from a workgroup size, since most dispatches set only that.
struct Spec {
  uint32_t wg_size;
  uint32_t w_align = 1;
  uint32_t tile_rows = 4;
  uint32_t head_dim = 64;
  uint32_t group = 1;
  uint32_t fuse = 0;
  Spec(uint32_t wg) : wg_size(wg) {}  // NOLINT(google-explicit-constructor)
  Spec(uint32_t wg, uint32_t align, uint32_t rows) : wg_size(wg), w_align(align), tile_rows(rows) {}
  static Spec heads(uint32_t wg, uint32_t hd, uint32_t group) {
    Spec s(wg);
    s.head_dim = hd;
    s.group = group;
    return s;
  }
  bool operator==(const Spec&) const = default;
};
// Bits of Spec::fuse: MatmulOp's one-row fusions (matmul.comp kNorm, kGate, kBias, kAccumulate).
enum MatmulFuse : uint32_t { fuse_norm = 1, fuse_gate = 2, fuse_bias = 4, fuse_accumulate = 8 };

class PipelineCache {
 public:
  PipelineCache() = default;
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;
  ~PipelineCache();

  // Layouts, and a check that every Kernel has an embedded blob (a build mismatch is an error).
  Status init(Device* device);
  // The pipeline of k with these constants, created on first use.
  Status get(Kernel k, const Spec& spec, VkPipeline* out);
  // Kernel k's pipeline layout: all storage buffers, or with texel_bindings(k).
  VkPipelineLayout layout(Kernel k) const { return layout_[texel_bindings(k) ? 1 : 0]; }

 private:
  // Distinct Specs a kernel may be asked for: a decode step's matmul of one weight type takes
  // up to five fusion sets (kFuse), times the block alignments and prefill tiles.
  static constexpr int kSpecs = 16;
  Device* d_ = nullptr;
  // [0] storage buffers only; [1] bindings 1 and 2 as texel buffers (texel_bindings).
  VkDescriptorSetLayout set_layout_[2] = {};
  VkPipelineLayout layout_[2] = {};
  VkShaderModule modules_[static_cast<size_t>(Kernel::count)] = {};
  const uint32_t* code_[static_cast<size_t>(Kernel::count)] = {};
  size_t code_bytes_[static_cast<size_t>(Kernel::count)] = {};
  struct Entry {
    Spec spec{0};
    VkPipeline pipeline = VK_NULL_HANDLE;
  };
  Entry pipelines_[static_cast<size_t>(Kernel::count)][kSpecs] = {};
};

}  // namespace wt::vk
