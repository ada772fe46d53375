// Encoders of the selection ops the pruning policies use: pool1d, topk (a host result),
// kv_similarity, key_bounds and bound_scores (Quest's, kernels/vulkan/key_bounds.comp).
// Shapes and semantics as in kernels/ops.def.
#include <cstring>
#include <string>

#include "encode.h"

namespace wt::vk {

Status encode_pool1d(VulkanBackend& b, const OpCall& c) {
  const Pool1dOp& a = c.get<Pool1dOp>();
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "pool1d dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.src, "pool1d src", &bind[b_src0]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.src.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.src.ne[1]);
  p.ne[2] = static_cast<uint32_t>(a.src.n_rows());
  p.ne[3] = static_cast<uint32_t>(a.dst.ne[1]);
  push_strides(&p, 0, a.dst);
  push_strides(&p, 1, a.src);
  p.i[0] = a.kernel;
  p.f[0] = 1.0f / static_cast<float>(a.kernel);
  p.flags = a.max ? 1u : 0u;
  return record_elementwise(b, Kernel::pool1d, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[2]);
}

Status encode_topk(VulkanBackend& b, const OpCall& c) {
  const TopkOp& a = c.get<TopkOp>();
  const int64_t rows = a.scores.n_rows();
  if (a.k <= 0) return Status::ok();  // nothing asked, nothing written (as on the CPU)
  const size_t out_bytes = sizeof(int32_t) * static_cast<size_t>(rows) * static_cast<size_t>(a.k);
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.scores, "topk src", &bind[b_src0]));
  void* host = nullptr;
  WT_TRY(b.readback_slot(out_bytes, &bind[b_aux], &host));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.scores.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.scores.ne[1]);
  p.ne[2] = static_cast<uint32_t>(rows);
  push_strides(&p, 1, a.scores);
  p.i[0] = a.k;
  uint32_t gx, gy;
  grid(static_cast<uint64_t>(rows), &gx, &gy);
  WT_TRY(b.record(Kernel::topk, b.wg_size(), bind, p, gx, gy));
  WT_TRY(b.finish_host_result());
  if (out_bytes) std::memcpy(a.out, host, out_bytes);  // out may be null when there are no rows
  return Status::ok();
}

Status encode_kv_similarity(VulkanBackend& b, const OpCall& c) {
  const KvSimilarityOp& a = c.get<KvSimilarityOp>();
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "kv_similarity dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.k, "kv_similarity k", &bind[b_src0]));
  WT_TRY(bind_f32(b, a.v, "kv_similarity v", &bind[b_src1]));
  WT_TRY(bind_f32(b, a.anchors, "kv_similarity anchors", &bind[b_src2]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.k.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.k.ne[1]);
  p.ne[2] = static_cast<uint32_t>(a.k.ne[2]);
  push_strides(&p, 0, a.dst);
  push_strides(&p, 1, a.k);
  push_strides(&p, 2, a.v);
  push_strides(&p, 3, a.anchors);
  p.f[0] = a.decay;
  // One workgroup per (kv head, k or v) stream; 64 threads cover a head dimension <= 256
  // with a few elements each.
  return b.record(Kernel::kv_similarity, 64, bind, p, 2 * p.ne[1]);
}

Status encode_key_bounds(VulkanBackend& b, const OpCall& c) {
  const KeyBoundsOp& a = c.get<KeyBoundsOp>();
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_halves(b, a.dst, "key_bounds dst", &bind[b_dst]));
  uint32_t ku = 4;
  WT_TRY(bind_kv(b, a.k, "key_bounds k", &bind[b_src1], &ku));
  Push p;
  WT_TRY(bind_key_ids(b, a.key_ids, a.n_keys, &bind[b_aux], &p.flags));
  const int64_t n_keys = a.key_count();
  const int64_t n_blocks = (n_keys + a.block - 1) / a.block;
  p.ne[0] = static_cast<uint32_t>(a.k.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.k.ne[1]);
  p.ne[2] = static_cast<uint32_t>(n_keys);
  p.ne[3] = static_cast<uint32_t>(n_blocks);
  push_strides(&p, 0, a.dst, 2);
  push_strides(&p, 2, a.k, ku);
  p.i[0] = a.block;
  return record_elementwise(b, kv_variant(Kernel::key_bounds, a.k.type), bind, p,
                            static_cast<uint64_t>(n_blocks) * p.ne[1] * p.ne[0]);
}

size_t bound_scores_workspace_bytes(const BoundScoresOp& a) {
  return sizeof(float) * static_cast<size_t>(a.q.ne[1] * a.dst.ne[0]);  // [n_head][n_blocks] log-softmax
}

Status encode_bound_scores(VulkanBackend& b, const OpCall& c) {
  const BoundScoresOp& a = c.get<BoundScoresOp>();
  WT_TRY(check_heads(a.q, "bound_scores"));
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "bound_scores dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.q, "bound_scores q", &bind[b_src0]));
  WT_TRY(bind_halves(b, a.bounds, "bound_scores bounds", &bind[b_src1]));
  WT_TRY(b.bind_workspace(bound_scores_workspace_bytes(a), "bound_scores", &bind[b_src2]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.q.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.q.ne[1]);
  p.ne[2] = static_cast<uint32_t>(a.dst.ne[0]);
  p.ne[3] = static_cast<uint32_t>(a.bounds.ne[1]);
  push_strides(&p, 1, a.q);
  push_strides(&p, 2, a.bounds, 2);
  p.i[0] = static_cast<int32_t>(a.q.ne[2] - 1);  // the last query row
  p.f[0] = a.scale;
  // A workgroup of 64 per head (the kernel's shared arrays), then one invocation per block;
  // the batch's barrier orders the second after the first.
  WT_TRY(b.record(Kernel::bound_scores_head, 64, bind, p, p.ne[1]));
  return record_elementwise(b, Kernel::bound_scores_sum, bind, p, p.ne[2]);
}

}  // namespace wt::vk
