// Encoders of the selection ops the pruning policies use: pool1d, topk (a host result),
// kv_similarity. Shapes and semantics as in kernels/ops.def.
#include <cstring>
#include <string>

#include "encode.h"

namespace wt::vk {

Status encode_pool1d(VulkanBackend& b, const OpCall& c) {
  if (c.i[0] < 1 || c.i[0] % 2 == 0) return error(WT_ERR_INVALID_ARGUMENT, "vulkan: pool1d kernel must be odd and >= 1");
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "pool1d dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "pool1d src", &bind[b_src0]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].ne[1]);
  p.ne[2] = static_cast<uint32_t>(c.src[0].n_rows());
  p.ne[3] = static_cast<uint32_t>(c.dst.ne[1]);
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[1] = stride(c.dst, 2, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[3] = stride(c.src[0], 2, 4);
  p.i[0] = c.i[0];
  p.f[0] = 1.0f / static_cast<float>(c.i[0]);
  p.flags = c.i[1] == 1 ? 1u : 0u;
  return record_elementwise(b, Kernel::pool1d, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[2]);
}

Status encode_topk(VulkanBackend& b, const OpCall& c) {
  const int64_t rows = c.src[0].n_rows();
  if (c.i[0] <= 0) return Status::ok();  // nothing asked, nothing written (as on the CPU)
  if (!c.out_i) return error(WT_ERR_INVALID_ARGUMENT, "vulkan: topk needs out_i");
  const size_t out_bytes = sizeof(int32_t) * static_cast<size_t>(rows) * static_cast<size_t>(c.i[0]);
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.src[0], "topk src", &bind[b_src0]));
  void* host = nullptr;
  WT_TRY(b.readback_slot(out_bytes, &bind[b_aux], &host));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].ne[1]);
  p.ne[2] = static_cast<uint32_t>(rows);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[3] = stride(c.src[0], 2, 4);
  p.i[0] = c.i[0];
  uint32_t gx, gy;
  grid(static_cast<uint64_t>(rows), &gx, &gy);
  WT_TRY(b.record(Kernel::topk, b.wg_size(), bind, p, gx, gy));
  WT_TRY(b.finish_host_result());
  std::memcpy(c.out_i, host, out_bytes);
  return Status::ok();
}

Status encode_kv_similarity(VulkanBackend& b, const OpCall& c) {
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "kv_similarity dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "kv_similarity k", &bind[b_src0]));
  WT_TRY(bind_f32(b, c.src[1], "kv_similarity v", &bind[b_src1]));
  WT_TRY(bind_f32(b, c.src[2], "kv_similarity anchors", &bind[b_src2]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].ne[1]);
  p.ne[2] = static_cast<uint32_t>(c.src[0].ne[2]);
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[1] = stride(c.dst, 2, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[3] = stride(c.src[0], 2, 4);
  p.nb[4] = stride(c.src[1], 1, 4);
  p.nb[5] = stride(c.src[1], 2, 4);
  p.nb[6] = stride(c.src[2], 1, 4);
  p.nb[7] = stride(c.src[2], 2, 4);
  p.f[0] = c.f[0];
  // One workgroup per (kv head, k or v) stream; 64 threads cover a head dimension <= 256
  // with a few elements each.
  return b.record(Kernel::kv_similarity, 64, bind, p, 2 * p.ne[1]);
}

}  // namespace wt::vk
