// Encoders of the attention-shaped ops: attention_prefill / attention_decode (flash-style,
// one workgroup per (query row, head)), window_scores and block_scores (two dispatches
// each, the first filling the workspace the second reads; the batch's barrier orders them).
#include <string>

#include "encode.h"

namespace wt::vk {
namespace {

constexpr uint32_t kAttnWg = 64;  // attention.comp / block_scores.comp size their shared arrays for 64

Status check_heads(const Tensor& q, const Tensor& k, const char* op) {
  if (q.ne[0] > 4 * kAttnWg || q.ne[0] != k.ne[0])
    return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + op + ": head_dim must match and be <= 256");
  if (k.ne[1] <= 0 || q.ne[1] % k.ne[1] != 0)
    return error(WT_ERR_INVALID_ARGUMENT, std::string("vulkan: ") + op + ": n_head must be a multiple of n_head_kv");
  return Status::ok();
}

Status encode_attention(VulkanBackend& b, const OpCall& c, bool decode) {
  const char* op = decode ? "attention_decode" : "attention_prefill";
  WT_TRY(check_heads(c.src[0], c.src[1], op));
  const bool with_ids = c.ids != nullptr && c.n_ids > 0;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "attention dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "attention q", &bind[b_src0]));
  WT_TRY(bind_f32(b, c.src[1], "attention k", &bind[b_src1]));
  WT_TRY(bind_f32(b, c.src[2], "attention v", &bind[b_src2]));
  if (with_ids) WT_TRY(b.upload(c.ids, sizeof(int32_t) * static_cast<size_t>(c.n_ids), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].ne[1]);
  p.ne[2] = static_cast<uint32_t>(decode ? 1 : c.src[0].ne[2]);
  p.ne[3] = static_cast<uint32_t>(c.src[1].ne[1]);
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[1] = stride(c.dst, 2, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[3] = stride(c.src[0], 2, 4);
  p.nb[4] = stride(c.src[1], 1, 4);
  p.nb[5] = stride(c.src[1], 2, 4);
  p.nb[6] = stride(c.src[2], 1, 4);
  p.nb[7] = stride(c.src[2], 2, 4);
  p.i[0] = c.i[0];
  p.f[0] = c.f[0];
  p.n_ids = with_ids ? static_cast<uint32_t>(c.n_ids) : 0;
  p.flags = with_ids ? 1u : 0u;
  uint32_t gx, gy;
  grid(static_cast<uint64_t>(p.ne[1]) * p.ne[2], &gx, &gy);
  return b.record(decode ? Kernel::attention_decode : Kernel::attention_prefill, kAttnWg, bind, p, gx, gy);
}

}  // namespace

Status encode_attention_prefill(VulkanBackend& b, const OpCall& c) { return encode_attention(b, c, false); }
Status encode_attention_decode(VulkanBackend& b, const OpCall& c) { return encode_attention(b, c, true); }

Status encode_window_scores(VulkanBackend& b, const OpCall& c) {
  WT_TRY(check_heads(c.src[0], c.src[1], "window_scores"));
  const int64_t n = c.src[0].ne[2], n_keys = c.src[1].ne[2];
  const int64_t w = c.i[0] < n ? (c.i[0] > 0 ? c.i[0] : 0) : n;
  const int64_t n_cols = c.dst.ne[0] < n_keys ? c.dst.ne[0] : n_keys;
  const bool softmax = (c.i[1] & 1) != 0;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "window_scores dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "window_scores q", &bind[b_src0]));
  WT_TRY(bind_f32(b, c.src[1], "window_scores k", &bind[b_src1]));
  const size_t stats_bytes = sizeof(float) * 2 * static_cast<size_t>(c.src[0].ne[1] * (w > 0 ? w : 1));
  if (softmax) WT_TRY(b.bind_workspace(stats_bytes, "window_scores", &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].ne[1]);
  p.ne[2] = static_cast<uint32_t>(n);
  p.ne[3] = static_cast<uint32_t>(c.src[1].ne[1]);
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[1] = stride(c.dst, 2, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[3] = stride(c.src[0], 2, 4);
  p.nb[4] = stride(c.src[1], 1, 4);
  p.nb[5] = stride(c.src[1], 2, 4);
  p.i[0] = static_cast<int32_t>(w);
  p.i[1] = static_cast<int32_t>(n_cols);
  p.i[2] = c.i[2] > 0 ? c.i[2] : static_cast<int32_t>(n_keys);
  p.i[3] = static_cast<int32_t>(n_keys);
  p.f[0] = c.f[0];
  p.flags = static_cast<uint32_t>(c.i[1] & 3);
  uint32_t gx, gy;
  if (softmax && w > 0) {
    grid(static_cast<uint64_t>(p.ne[1]) * static_cast<uint64_t>(w), &gx, &gy);
    WT_TRY(b.record(Kernel::window_scores_stats, kAttnWg, bind, p, gx, gy));
  }
  return record_elementwise(b, Kernel::window_scores, bind, p, static_cast<uint64_t>(p.ne[1]) * n_cols);
}

Status encode_block_scores(VulkanBackend& b, const OpCall& c) {
  WT_TRY(check_heads(c.src[0], c.src[1], "block_scores"));
  const int64_t n = c.src[0].ne[2];
  const int64_t n_keys = c.ids ? c.n_ids : c.src[1].ne[2];
  const int64_t n_last = c.i[2] > 0 && c.i[2] <= n ? c.i[2] : n;
  const int64_t block = c.i[0] > 0 ? c.i[0] : 1, unit = c.i[1] > 0 ? c.i[1] : 1;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "block_scores dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "block_scores q", &bind[b_src0]));
  WT_TRY(bind_f32(b, c.src[1], "block_scores k", &bind[b_src1]));
  WT_TRY(b.bind_workspace(sizeof(float) * static_cast<size_t>(c.src[0].ne[0] * c.src[0].ne[1]), "block_scores",
                          &bind[b_src2]));
  if (c.ids && c.n_ids > 0) WT_TRY(b.upload(c.ids, sizeof(int32_t) * static_cast<size_t>(c.n_ids), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].ne[1]);
  p.ne[2] = static_cast<uint32_t>(n_keys);
  p.ne[3] = static_cast<uint32_t>(c.src[1].ne[1]);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[3] = stride(c.src[0], 2, 4);
  p.nb[4] = stride(c.src[1], 1, 4);
  p.nb[5] = stride(c.src[1], 2, 4);
  p.i[0] = static_cast<int32_t>(block);
  p.i[1] = static_cast<int32_t>(unit);
  p.i[2] = static_cast<int32_t>(n_last);
  p.i[3] = static_cast<int32_t>(n);
  p.f[0] = 1.0f / static_cast<float>(n_last);
  p.f[1] = 1.0f / static_cast<float>(c.src[0].ne[1]);
  p.flags = c.ids && c.n_ids > 0 ? 1u : 0u;
  WT_TRY(record_elementwise(b, Kernel::block_scores_qbar, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]));
  uint32_t gx, gy;
  grid(static_cast<uint64_t>((n_keys + block - 1) / block), &gx, &gy);
  return b.record(Kernel::block_scores, kAttnWg, bind, p, gx, gy);
}

}  // namespace wt::vk
