// Encoders of the selection ops the pruning policies use: pool1d, topk (a host result),
// kv_similarity. Shapes and semantics as in kernels/ops.def.
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

}  // namespace wt::vk
