// Encoders of the dense ops: elementwise, normalization, embedding, matmul, rope, argmax,
// gather. Each binds its tensors, uploads host arrays to the ring, fills the push
// constants and records one dispatch; nothing is allocated.
#include <cmath>
#include <string>

#include "kernels/dtype.h"
#include "encode.h"

namespace wt::vk {
namespace {

// The kernel variant reading weights of type t (embed and matmul), or an error.
Status weight_variant(const VulkanBackend& b, DType t, Kernel f32, const char* op, Kernel* out) {
  const int delta = t == DType::f32 ? 0 : t == DType::f16 ? 1 : t == DType::q8_0 ? 2 : t == DType::q4_0 ? 3
                  : t == DType::q4_1 ? 4 : -1;
  if (delta < 0)
    return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + op + " of " + dtype_name(t) +
                                         " weights is not implemented yet (K-quants, bf16: a later step)");
  if (t == DType::f16 && !b.vk_caps().storage_16bit)
    return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + op + " of f16 weights needs storageBuffer16BitAccess");
  *out = static_cast<Kernel>(static_cast<uint32_t>(f32) + static_cast<uint32_t>(delta));
  return Status::ok();
}

}  // namespace

Status encode_add(VulkanBackend& b, const OpCall& c) {
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "add dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "add src0", &bind[b_src0]));
  WT_TRY(bind_f32(b, c.src[1], "add src1", &bind[b_src1]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].n_rows());
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[4] = stride(c.src[1], 1, 4);
  p.flags = c.src[1].n_rows() == 1 ? 1u : 0u;
  return record_elementwise(b, Kernel::add, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]);
}

Status encode_rmsnorm(VulkanBackend& b, const OpCall& c) {
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "rmsnorm dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "rmsnorm x", &bind[b_src0]));
  WT_TRY(bind_f32(b, c.src[1], "rmsnorm weight", &bind[b_src1]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].n_rows());
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.f[0] = c.f[0];
  uint32_t gx, gy;
  grid(p.ne[1], &gx, &gy);
  return b.record(Kernel::rmsnorm, b.wg_size(), bind, p, gx, gy);
}

Status encode_swiglu(VulkanBackend& b, const OpCall& c) {
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "swiglu dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "swiglu gate", &bind[b_src0]));
  WT_TRY(bind_f32(b, c.src[1], "swiglu up", &bind[b_src1]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].n_rows());
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[4] = stride(c.src[1], 1, 4);
  return record_elementwise(b, Kernel::swiglu, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]);
}

Status encode_copy_rows(VulkanBackend& b, const OpCall& c) {
  const bool f16 = c.dst.type == DType::f16;
  if (!f16 && c.dst.type != DType::f32)
    return error(WT_ERR_UNSUPPORTED, "vulkan: copy_rows writes f32 or f16 rows only");
  if (f16 && !b.vk_caps().storage_16bit)
    return error(WT_ERR_UNSUPPORTED, "vulkan: copy_rows to f16 needs storageBuffer16BitAccess, which this device lacks");
  if (c.i[0] < 0 || c.i[0] + c.src[0].n_rows() > c.dst.n_rows())
    return error(WT_ERR_INVALID_ARGUMENT, "vulkan: copy_rows past the end of dst");
  const uint32_t du = f16 ? 2 : 4;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(b.bind_tensor(c.dst, du, "copy_rows dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "copy_rows src", &bind[b_src0]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(c.src[0].n_rows());
  p.nb[0] = stride(c.dst, 1, du);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.i[0] = c.i[0];
  return record_elementwise(b, f16 ? Kernel::copy_rows_f16 : Kernel::copy_rows_f32, bind, p,
                            static_cast<uint64_t>(p.ne[0]) * p.ne[1]);
}

Status encode_embed(VulkanBackend& b, const OpCall& c) {
  Kernel k;
  WT_TRY(weight_variant(b, c.src[0].type, Kernel::embed_f32, "embed", &k));
  const int64_t n = c.dst.ne[1];
  if (!c.ids || n < 0) return error(WT_ERR_INVALID_ARGUMENT, "vulkan: embed needs ids");
  const uint32_t wu = unit_of(c.src[0].type);
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "embed dst", &bind[b_dst]));
  WT_TRY(b.bind_tensor(c.src[0], wu, "embed table", &bind[b_src0]));
  WT_TRY(b.upload(c.ids, sizeof(int32_t) * static_cast<size_t>(n), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.dst.ne[0]);
  p.ne[1] = static_cast<uint32_t>(n);
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[2] = stride(c.src[0], 1, wu);
  return record_elementwise(b, k, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]);
}

Status encode_matmul(VulkanBackend& b, const OpCall& c) {
  // Activations stay f32 whatever i0 asks: the product is the CPU's matmul_f32 (weights
  // dequantized, f32 sums); int8 activation quantization is a CPU speed path.
  const uint32_t k_dim = static_cast<uint32_t>(c.src[1].ne[0]);
  const bool sg = b.subgroup_arith() && k_dim % 8 == 0;
  Kernel k;
  WT_TRY(weight_variant(b, c.src[1].type, sg ? Kernel::matmul_sg_f32 : Kernel::matmul_f32, "matmul", &k));
  const uint32_t wu = unit_of(c.src[1].type);
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "matmul dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "matmul x", &bind[b_src0]));
  WT_TRY(b.bind_tensor(c.src[1], wu, "matmul weights", &bind[b_src1]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[1].ne[0]);  // k
  p.ne[1] = static_cast<uint32_t>(c.src[1].ne[1]);  // n_out
  p.ne[2] = static_cast<uint32_t>(c.src[0].n_rows());
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[4] = stride(c.src[1], 1, wu);
  size_t block_bytes = 0;  // of a 32-weight block; every block starts on a word: plain loads
  if (wu == 1 && dtype_row_bytes(c.src[1].type, 32, &block_bytes) && block_bytes % 4 == 0 &&
      bind[b_src1].first % 4 == 0 && p.nb[4] % 4 == 0)
    p.flags = 1u;
  constexpr uint64_t kRowsPerGroup = 4;  // matmul.comp kRows
  const uint64_t row_tiles = (p.ne[2] + kRowsPerGroup - 1) / kRowsPerGroup;
  uint32_t wg = b.wg_size();
  uint64_t n_groups = static_cast<uint64_t>(p.ne[1]) * row_tiles;
  if (sg) {
    // Eight subgroups (outputs) per workgroup: few enough workgroups that their start-up
    // cost vanishes, enough to fill a GPU's SM with warps.
    const uint32_t sub = b.vk_caps().subgroup_size;
    wg = sub * 8 < wg ? sub * 8 : wg;
    const uint32_t per_group = wg / sub;
    p.i[0] = static_cast<int32_t>(per_group);
    n_groups = (p.ne[1] + per_group - 1) / per_group * row_tiles;
  }
  WT_TRY(too_big(n_groups));
  uint32_t gx, gy;
  grid(n_groups, &gx, &gy);
  return b.record(k, wg, bind, p, gx, gy);
}

Status encode_rope(VulkanBackend& b, const OpCall& c) {
  const Tensor& x = c.src[0];
  const int32_t n_rot = c.i[0];
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > x.ne[0] || n_rot > 512)
    return error(WT_ERR_INVALID_ARGUMENT, "vulkan: rope n_rot must be even, > 0, <= head_dim and <= 512");
  if (!c.ids) return error(WT_ERR_INVALID_ARGUMENT, "vulkan: rope needs positions (ids)");
  const int32_t half = n_rot / 2;
  const bool f64 = b.vk_caps().float64;
  // Frequencies exactly as the CPU computes them (double pow, then the divisor), once per
  // launch into the ring; divisors are read through their mapped (host) pointer.
  const float* div = c.src[1].empty() ? nullptr : static_cast<const float*>(c.src[1].data);
  double freq_d[256];
  float freq_f[256];
  for (int32_t i = 0; i < half; ++i) {
    double f = std::pow(static_cast<double>(c.f[0]), -2.0 * i / n_rot);
    if (div) f /= div[i];
    freq_d[i] = f;
    freq_f[i] = static_cast<float>(f);
  }
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, x, "rope x", &bind[b_dst]));
  if (f64) {
    WT_TRY(b.upload(freq_d, sizeof(double) * half, &bind[b_src2]));
  } else {
    WT_TRY(b.upload(freq_f, sizeof(float) * half, &bind[b_src2]));
  }
  WT_TRY(b.upload(c.ids, sizeof(int32_t) * static_cast<size_t>(x.ne[2]), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(x.ne[0]);
  p.ne[1] = static_cast<uint32_t>(x.ne[1]);
  p.ne[2] = static_cast<uint32_t>(x.ne[2]);
  p.nb[0] = stride(x, 1, 4);
  p.nb[1] = stride(x, 2, 4);
  p.i[0] = n_rot;
  p.i[1] = c.i[1];
  // The CPU multiplies the position by f1 (linear scaling); the engine sets it to 1 when unscaled.
  p.f[1] = c.f[1];
  return record_elementwise(b, f64 ? Kernel::rope_f64 : Kernel::rope, bind, p,
                            static_cast<uint64_t>(half) * p.ne[1] * p.ne[2]);
}

Status encode_argmax(VulkanBackend& b, const OpCall& c) {
  if (!c.out_i) return error(WT_ERR_INVALID_ARGUMENT, "vulkan: argmax needs out_i");
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.src[0], "argmax x", &bind[b_src0]));
  void* host = nullptr;
  WT_TRY(b.readback_slot(sizeof(int32_t), &bind[b_aux], &host));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  WT_TRY(b.record(Kernel::argmax, b.wg_size(), bind, p, 1));
  WT_TRY(b.finish_host_result());
  *c.out_i = *static_cast<const int32_t*>(host);
  return Status::ok();
}

Status encode_gather_rows(VulkanBackend& b, const OpCall& c) {
  const bool src3 = c.src[0].n_dims >= 3, dst3 = c.dst.n_dims >= 3, per_head = c.i[0] == 1;
  const int64_t heads = src3 ? c.src[0].ne[1] : 1;
  const int64_t n_sel = per_head ? c.n_ids / heads : c.n_ids;
  if (!c.ids || c.n_ids < 0) return error(WT_ERR_INVALID_ARGUMENT, "vulkan: gather_rows needs ids");
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, c.dst, "gather_rows dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, c.src[0], "gather_rows src", &bind[b_src0]));
  WT_TRY(b.upload(c.ids, sizeof(int32_t) * static_cast<size_t>(c.n_ids), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(c.src[0].ne[0]);
  p.ne[1] = static_cast<uint32_t>(heads);
  p.ne[2] = static_cast<uint32_t>(n_sel);
  p.nb[0] = stride(c.dst, 1, 4);
  p.nb[1] = stride(c.dst, 2, 4);
  p.nb[2] = stride(c.src[0], 1, 4);
  p.nb[3] = stride(c.src[0], 2, 4);
  p.flags = (src3 ? 1u : 0u) | (dst3 ? 2u : 0u) | (per_head ? 4u : 0u);
  return record_elementwise(b, Kernel::gather_rows, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1] * p.ne[2]);
}

}  // namespace wt::vk
