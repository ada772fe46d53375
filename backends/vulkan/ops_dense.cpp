// Encoders of the dense ops: elementwise, normalization, embedding, matmul, rope, argmax,
// gather. Each binds its tensors, uploads host arrays to the ring, fills the push
// constants and records one dispatch; nothing is allocated.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/dtype.h"
#include "encode.h"

namespace wt::vk {
namespace {

constexpr bool follows(Kernel f32, Kernel k, uint32_t delta) {
  return static_cast<uint32_t>(k) == static_cast<uint32_t>(f32) + delta;
}
static_assert(follows(Kernel::embed_f32, Kernel::embed_q6_k, 10) && follows(Kernel::matmul_f32, Kernel::matmul_q6_k, 10)
                  && follows(Kernel::matmul_sg_f32, Kernel::matmul_sg_q6_k, 10)
                  && follows(Kernel::matmul_tiled_f32, Kernel::matmul_tiled_q6_k, 10)
                  && follows(Kernel::matmul_lane_f32, Kernel::matmul_lane_q6_k, 10),
              "weight_variant: the type variants of embed and matmul are consecutive");

// The kernel variant reading weights of type t (embed and matmul), or an error. Each op's
// variants are consecutive in WT_VK_KERNELS (f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, bf16,
// q4_k, q5_k, q6_k).
Status weight_variant(const VulkanBackend& b, DType t, Kernel f32, const char* op, Kernel* out) {
  int delta = -1;
  switch (t) {
    case DType::f32: delta = 0; break;
    case DType::f16: delta = 1; break;
    case DType::q8_0: delta = 2; break;
    case DType::q4_0: delta = 3; break;
    case DType::q4_1: delta = 4; break;
    case DType::q5_0: delta = 5; break;
    case DType::q5_1: delta = 6; break;
    case DType::bf16: delta = 7; break;
    case DType::q4_k: delta = 8; break;
    case DType::q5_k: delta = 9; break;
    case DType::q6_k: delta = 10; break;
  }
  if (delta < 0)
    return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + op + " cannot decode " + dtype_name(t) +
                                         " weights (backends/weight_types.cpp lists the types Vulkan reads)");
  if (t == DType::f16 && !b.vk_caps().storage_16bit)
    return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + op + " of f16 weights needs storageBuffer16BitAccess");
  *out = static_cast<Kernel>(static_cast<uint32_t>(f32) + static_cast<uint32_t>(delta));
  return Status::ok();
}

// The matmul_lt_* twin of a quantized lane kernel (the same order, bf16 left out).
Kernel lane_texel_variant(Kernel lane) {
  static_assert(follows(Kernel::matmul_lt_q8_0, Kernel::matmul_lt_q5_1, 4) &&
                    follows(Kernel::matmul_lt_q8_0, Kernel::matmul_lt_q6_k, 7),
                "lane_texel_variant: the texel kernels follow the lane kernels' type order without bf16");
  uint32_t i = static_cast<uint32_t>(lane) - static_cast<uint32_t>(Kernel::matmul_lane_q8_0);  // q8_0 .. q6_k
  if (lane > Kernel::matmul_lane_bf16) --i;
  return static_cast<Kernel>(static_cast<uint32_t>(Kernel::matmul_lt_q8_0) + i);
}

}  // namespace

Status encode_add(VulkanBackend& b, const OpCall& c) {
  const AddOp& a = c.get<AddOp>();
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "add dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.a, "add src0", &bind[b_src0]));
  WT_TRY(bind_f32(b, a.b, "add src1", &bind[b_src1]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.a.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.a.n_rows());
  push_row_stride(&p, 0, a.dst);
  push_row_stride(&p, 1, a.a);
  push_row_stride(&p, 2, a.b);
  p.flags = a.b.n_rows() == 1 ? 1u : 0u;
  return record_elementwise(b, Kernel::add, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]);
}

Status encode_rmsnorm(VulkanBackend& b, const OpCall& c) {
  const RmsnormOp& a = c.get<RmsnormOp>();
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "rmsnorm dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.x, "rmsnorm x", &bind[b_src0]));
  WT_TRY(bind_f32(b, a.weight, "rmsnorm weight", &bind[b_src1]));
  Push p;
  if (!a.residual.empty()) {
    WT_TRY(bind_f32(b, a.residual, "rmsnorm residual", &bind[b_src2]));
    push_row_stride(&p, 3, a.residual);
    p.flags = 1u;
  }
  p.ne[0] = static_cast<uint32_t>(a.x.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.x.n_rows());
  push_row_stride(&p, 0, a.dst);
  push_row_stride(&p, 1, a.x);
  p.f[0] = a.eps;
  uint32_t gx, gy;
  grid(p.ne[1], &gx, &gy);
  return b.record(Kernel::rmsnorm, b.wg_size(), bind, p, gx, gy);
}

Status encode_swiglu(VulkanBackend& b, const OpCall& c) {
  const SwigluOp& a = c.get<SwigluOp>();
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "swiglu dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.gate, "swiglu gate", &bind[b_src0]));
  WT_TRY(bind_f32(b, a.up, "swiglu up", &bind[b_src1]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.gate.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.gate.n_rows());
  push_row_stride(&p, 0, a.dst);
  push_row_stride(&p, 1, a.gate);
  push_row_stride(&p, 2, a.up);
  p.flags = a.gelu ? 1u : 0u;
  return record_elementwise(b, Kernel::swiglu, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]);
}

Status encode_copy_rows(VulkanBackend& b, const OpCall& c) {
  const CopyRowsOp& a = c.get<CopyRowsOp>();
  const bool pair = !a.dst2.empty();
  // The second copy rides in the first's dispatch where f32 dsts share a binding and so do
  // the srcs (copy_rows.comp); otherwise it is a dispatch of its own.
  Bound dst_bind, src_bind;
  uint32_t d_first[2] = {}, s_first[2] = {};
  bool joint = false;
  if (pair && a.dst.type == DType::f32) {
    const Tensor* dsts[2] = {&a.dst, &a.dst2};
    const Tensor* srcs[2] = {&a.src, &a.src2};
    bool shared_d = false, shared_s = false;
    WT_TRY(b.bind_union(dsts, 2, 4, "copy_rows dst and dst2", &dst_bind, d_first, &shared_d));
    WT_TRY(b.bind_union(srcs, 2, 4, "copy_rows src and src2", &src_bind, s_first, &shared_s));
    joint = shared_d && shared_s;
    dst_bind.first = d_first[0];
    src_bind.first = s_first[0];
  }
  if (pair && !joint) {
    WT_TRY(encode_copy_rows(b, OpCall(CopyRowsOp{.dst = a.dst, .src = a.src, .row0 = a.row0})));
    return encode_copy_rows(b, OpCall(CopyRowsOp{.dst = a.dst2, .src = a.src2, .row0 = a.row0}));
  }
  if (a.dst.type != DType::f32)
    return encode_kv_rows(b, KvRows{.dst = a.dst, .src = a.src, .heads = 1, .n_rows = a.src.n_rows(), .row0 = a.row0});
  if (!joint) {
    WT_TRY(bind_f32(b, a.dst, "copy_rows dst", &dst_bind));
    WT_TRY(bind_f32(b, a.src, "copy_rows src", &src_bind));
  }
  Bound bind[kBindings];
  init_bindings(b, bind);
  bind[b_dst] = dst_bind;
  bind[b_src0] = src_bind;
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.src.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.src.n_rows());
  p.ne[2] = joint ? 2 : 1;
  push_row_stride(&p, 0, a.dst);
  push_row_stride(&p, 1, a.src);
  if (joint) {
    p.nb[4] = d_first[1];
    p.nb[5] = s_first[1];
    p.nb[6] = stride(a.dst2, 1, 4);
    p.nb[7] = stride(a.src2, 1, 4);
  }
  p.i[0] = a.row0;
  return record_elementwise(b, Kernel::copy_rows, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1] * p.ne[2]);
}

Status encode_embed(VulkanBackend& b, const OpCall& c) {
  const EmbedOp& a = c.get<EmbedOp>();
  Kernel k;
  WT_TRY(weight_variant(b, a.table.type, Kernel::embed_f32, "embed", &k));
  const int64_t n = a.dst.ne[1];
  const uint32_t wu = unit_of(a.table.type);
  const size_t row_bytes = a.table.nb[1];
  // A table larger than one binding (a large vocabulary on lavapipe, whose bindings reach
  // 128 MiB) in row ranges that each fit, as the engine's matmul ranges do: one dispatch per
  // range, over the ids rebased to it, an id outside it being -1 (embed.comp leaves that row
  // to another range).
  const size_t limit = b.caps().max_binding_bytes;
  const bool whole = limit == 0 || row_bytes * static_cast<size_t>(a.table.ne[1]) + kBindingSlackBytes <= limit;
  const int64_t step = whole ? a.table.ne[1] : rows_per_binding(limit, row_bytes);
  if (step < 1)
    return error(WT_ERR_UNSUPPORTED, "vulkan: embed: a table row of " + std::to_string(row_bytes) +
                                         " bytes is more than one binding reaches");
  for (int64_t r0 = 0; r0 < a.table.ne[1]; r0 += step) {
    Tensor table = a.table;
    table.data = static_cast<char*>(table.data) + static_cast<size_t>(r0) * row_bytes;
    table.ne[1] = std::min(step, a.table.ne[1] - r0);
    Bound bind[kBindings];
    init_bindings(b, bind);
    WT_TRY(bind_f32(b, a.dst, "embed dst", &bind[b_dst]));
    WT_TRY(b.bind_tensor(table, wu, "embed table", &bind[b_src0]));
    if (whole) {
      WT_TRY(b.upload(a.ids, sizeof(int32_t) * static_cast<size_t>(n), &bind[b_aux]));
    } else {
      void* host = nullptr;
      WT_TRY(b.ring_reserve(sizeof(int32_t) * static_cast<size_t>(n), &bind[b_aux], &host));
      int32_t* ids = static_cast<int32_t*>(host);
      for (int64_t r = 0; r < n; ++r)
        ids[r] = a.ids[r] >= r0 && a.ids[r] < r0 + table.ne[1] ? static_cast<int32_t>(a.ids[r] - r0) : -1;
    }
    Push p;
    p.ne[0] = static_cast<uint32_t>(a.dst.ne[0]);
    p.ne[1] = static_cast<uint32_t>(n);
    push_row_stride(&p, 0, a.dst);
    p.nb[2] = stride(a.table, 1, wu);
    p.f[0] = a.scale;
    WT_TRY(record_elementwise(b, k, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]));
  }
  return Status::ok();
}

namespace {

// How the dst rows of products 2 and 3 are laid out, for one dispatch (matmul.comp
// segment()): with the first product's row stride (column ranges of one matrix), or
// contiguous; with one row, either.
enum class DstRows { shared_stride, contiguous, neither };
DstRows dst_rows(const MatmulProducts& m, int64_t n_rows) {
  bool shared = true, contiguous = true;
  for (int i = 1; i < m.n; ++i) {
    const Tensor& d = *m.dst[i];
    shared = shared && d.nb[1] == m.dst[0]->nb[1];
    contiguous = contiguous && d.nb[1] == 4 * static_cast<size_t>(d.ne[0]);
  }
  if (shared || n_rows == 1) return DstRows::shared_stride;
  return contiguous ? DstRows::contiguous : DstRows::neither;
}

// Whether a call's products may share one dispatch: the subgroup or lane kernel, one weight
// type and row stride, dst rows as dst_rows allows. They then do where each side's tensors
// lie in one buffer that a binding reaches (bind_union).
bool one_dispatch(const MatmulProducts& m, DstRows rows, bool split_kernel) {
  if (m.n == 1) return true;
  if (!split_kernel || rows == DstRows::neither) return false;
  for (int i = 1; i < m.n; ++i)
    if (m.w[i]->type != m.w[0]->type || m.w[i]->nb[1] != m.w[0]->nb[1]) return false;
  return true;
}

}  // namespace

Status encode_matmul(VulkanBackend& b, const OpCall& c) {
  const MatmulOp& a = c.get<MatmulOp>();
  if (!a.rope.x.empty()) {  // rope after the products, a dispatch of its own (caps: no fuse_rope)
    MatmulOp products = a;
    products.rope = RopeOp{};
    WT_TRY(encode_matmul(b, OpCall(products)));
    return encode_rope(b, OpCall(a.rope));
  }
  if (a.glu) {  // swiglu after the products, a dispatch of its own (caps: no fuse_glu)
    MatmulOp products = a;
    products.glu = false;
    WT_TRY(encode_matmul(b, OpCall(products)));
    return encode_swiglu(b, OpCall(SwigluOp{.dst = a.dst, .gate = a.dst, .up = a.dst2}));
  }
  const MatmulProducts m = matmul_products(a);
  // Activations stay f32 whatever f32_activations asks: the product is the CPU's matmul_f32
  // (weights dequantized, f32 sums); int8 activation quantization is a CPU speed path.
  const uint32_t k_dim = static_cast<uint32_t>(a.w.ne[0]);
  const uint32_t wu = unit_of(a.w.type);
  Bound x_bind;
  WT_TRY(bind_f32(b, a.x, "matmul x", &x_bind));
  // The lane kernel reads x 16 bytes at a time: rows start on 4 floats. It has no fusions
  // (caps: a CPU device is sent none).
  const bool lanes = b.lane_kernels() && !matmul_fused(a) && k_dim % 8 == 0 && x_bind.first % 4 == 0 &&
                     stride(a.x, 1, 4) % 4 == 0;
  const bool sg = !lanes && b.subgroup_arith() && k_dim % 8 == 0;
  // A prompt's rows on a GPU: the tiled kernel (matmul_tiled.comp), which reads each weight
  // once per 64 rows where the others read it once per 4; one product a dispatch, no
  // fusions (those are one-row calls). From kTiledMinRows rows: the bound is a guess until
  // a GPU measures it (docs/results/vulkan.md).
  constexpr int64_t kTiledMinRows = 32;
  const bool tiled = b.tiled_prompt() && !lanes && !matmul_fused(a) && a.x.n_rows() >= kTiledMinRows;
  // Bindings of the products' weights and dsts: one each where they share a buffer (one
  // dispatch, the products as segments of its column groups), else one dispatch apiece.
  Bound w_bind, d_bind;
  uint32_t w_first[3] = {}, d_first[3] = {};
  const DstRows rows = dst_rows(m, a.x.n_rows());
  // The products' biases (one dispatch: every product has one, all in one binding).
  int n_bias = 0;
  for (int i = 0; i < m.n; ++i) n_bias += m.bias[i]->empty() ? 0 : 1;
  Bound bias_bind;
  uint32_t bias_first[3] = {};
  bool joint = one_dispatch(m, rows, (lanes || sg) && !tiled) && (n_bias == 0 || n_bias == m.n);
  if (joint) {
    bool shared_w = false, shared_d = false, shared_b = true;
    WT_TRY(b.bind_union(m.w, m.n, wu, "matmul weights", &w_bind, w_first, &shared_w));
    WT_TRY(b.bind_union(m.dst, m.n, 4, "matmul dst", &d_bind, d_first, &shared_d));
    if (n_bias > 0) WT_TRY(b.bind_union(m.bias, m.n, 4, "matmul biases", &bias_bind, bias_first, &shared_b));
    joint = shared_w && shared_d && shared_b;
  }
  if (!joint) {  // one dispatch per product, each with the call's fusions and its own bias
    for (int i = 0; i < m.n; ++i)
      WT_TRY(encode_matmul(b, OpCall(MatmulOp{.dst = *m.dst[i], .x = a.x, .w = *m.w[i],
                                              .f32_activations = a.f32_activations, .norm = a.norm,
                                              .norm_eps = a.norm_eps, .gate = a.gate, .bias = *m.bias[i],
                                              .accumulate = a.accumulate})));
    return Status::ok();
  }
  Kernel k;
  WT_TRY(weight_variant(b, a.w.type,
                        tiled   ? Kernel::matmul_tiled_f32
                        : lanes ? Kernel::matmul_lane_f32
                        : sg    ? Kernel::matmul_sg_f32
                                : Kernel::matmul_f32,
                        "matmul", &k));
  // Where every quantized block starts (the weights' first bytes, row stride, block size):
  // on a word, plain loads; on two bytes, no byte path (dequant.glsl kWAlign).
  auto align_of = [](uint64_t v) -> uint32_t { return v % 4 == 0 ? 4 : v % 2 == 0 ? 2 : 1; };
  uint32_t w_align = 1;
  if (wu == 1) {
    w_align = align_of(stride(a.w, 1, wu));
    w_align = std::min(w_align, align_of(traits(a.w.type).block_bytes));
    for (int i = 0; i < m.n; ++i) w_align = std::min(w_align, align_of(w_first[i]));
  }
  // The lane kernel of a quantized type reads x and the weights through the allocations'
  // texel views where both bindings have one (matmul_lt_*, matmul.comp W_TEXEL), x rows on
  // one texel. A decode step then runs lanes along k, a workgroup being one subgroup (at
  // most 8 lanes: a larger subgroup holds it partly) that sums with subgroup arithmetic.
  const bool texel = lanes && wu == 1 && a.w.type != DType::bf16 && x_bind.view && w_bind.view &&
                     (x_bind.view_base + x_bind.first) % 4 == 0 && w_bind.view_base % 4 == 0 && w_align >= 2 &&
                     (a.x.n_rows() > 1 || b.subgroup_arith());
  if (texel) {
    k = lane_texel_variant(k);
    for (int i = 1; i < m.n; ++i) w_first[i] += w_bind.view_base;  // product 0's comes with the binding
  }
  Bound bind[kBindings];
  init_bindings(b, bind);
  bind[b_dst] = d_bind;
  bind[b_src0] = x_bind;
  bind[b_src1] = w_bind;
  bind[b_dst].first = d_first[0];
  bind[b_src1].first = w_first[0];
  Push p;
  // MatmulOp's fusions (validate_op: one row), compiled into the pipeline (matmul.comp kFuse).
  uint32_t fuse = 0;
  if (!a.norm.empty() || !a.gate.empty()) {
    fuse |= a.norm.empty() ? fuse_gate : fuse_norm;
    WT_TRY(bind_f32(b, a.norm.empty() ? a.gate : a.norm, "matmul norm or gate", &bind[b_src2]));
    p.f[0] = a.norm_eps;
  }
  if (n_bias > 0) {
    fuse |= fuse_bias;
    bind[b_aux] = bias_bind;
    bind[b_aux].first = bias_first[0];
    p.i[1] = static_cast<int32_t>(bias_first[1]);
    p.i[2] = static_cast<int32_t>(bias_first[2]);
  }
  if (a.accumulate) fuse |= fuse_accumulate;
  p.ne[0] = k_dim;
  p.ne[1] = static_cast<uint32_t>(a.w.ne[1]);  // n_out of the first product
  p.ne[2] = static_cast<uint32_t>(a.x.n_rows());
  push_row_stride(&p, 0, a.dst);
  push_row_stride(&p, 1, a.x);
  p.nb[4] = stride(a.w, 1, wu);
  // Products 2 and 3 (matmul.comp segment()): outputs, first weight and dst elements; flags
  // bit 0: their dst rows have the first product's stride (else they are contiguous).
  if (m.n > 1) {
    p.ne[3] = static_cast<uint32_t>(m.w[1]->ne[1]);
    p.nb[3] = w_first[1];
    p.nb[6] = d_first[1];
  }
  if (m.n > 1 && rows == DstRows::shared_stride) p.flags = 1u;
  if (m.n > 2) {
    p.nb[1] = static_cast<uint32_t>(m.w[2]->ne[1]);
    p.nb[5] = w_first[2];
    p.nb[7] = d_first[2];
  }
  // A decode step's one row fills its tile. The lane kernel reuses a decoded weight unit for
  // its tile's rows: 8 took a 512-token prefill on lavapipe from 7.1 to 6.1 s (4 for the GPU
  // kernels, whose tiles live in shared memory).
  const uint32_t tile_rows = p.ne[2] == 1 ? 1 : lanes ? 8 : 4;
  const uint64_t row_tiles = (p.ne[2] + tile_rows - 1) / tile_rows;
  // Column groups of per_group outputs, counted per product (matmul.comp segment()).
  auto col_groups = [&](uint32_t per_group) {
    uint64_t n = 0;
    for (int i = 0; i < m.n; ++i) n += (m.w[i]->ne[1] + per_group - 1) / per_group;
    return n;
  };
  uint32_t wg = b.wg_size();
  uint64_t n_groups = static_cast<uint64_t>(p.ne[1]) * row_tiles;  // portable: one product
  if (tiled) {
    // Tiles of 64 rows x 64 outputs (matmul_tiled.comp kBM, kBN), 256 invocations each.
    constexpr uint32_t kTile = 64;
    wg = 256;
    n_groups = groups_for(p.ne[1], kTile) * groups_for(p.ne[2], kTile);
  } else if (texel && p.ne[2] == 1) {
    // Lanes along k (matmul.comp kRowsK outputs per workgroup), one subgroup per workgroup.
    // Column groups of 16 outputs, at most 32 workgroups of them (i0 each, one after
    // another): lavapipe's cost per workgroup is paid 32 times, not once per group.
    constexpr uint32_t kRowsK = 16;  // matmul.comp kRowsK
    const uint32_t sub = b.vk_caps().subgroup_size;
    wg = sub < 8 ? sub : 8;
    const uint64_t groups = col_groups(kRowsK);
    const uint64_t per_wg = (groups + 31) / 32;
    p.i[0] = static_cast<int32_t>(per_wg);
    n_groups = (groups + per_wg - 1) / per_wg;
  } else if (lanes) {
    // 8 lanes (one AVX2 vector on lavapipe) of 16 outputs (matmul.comp kOuts): 128 outputs
    // per group, so the projections of a small model still split over a CPU device's threads.
    wg = 8;
    constexpr uint32_t kOuts = 16;
    n_groups = col_groups(wg * kOuts) * row_tiles;
  } else if (sg) {
    // Eight subgroups (outputs) per workgroup: few enough workgroups that their start-up
    // cost vanishes, enough to fill a GPU's SM with warps.
    const uint32_t sub = b.vk_caps().subgroup_size;
    wg = sub * 8 < wg ? sub * 8 : wg;
    const uint32_t per_group = wg / sub;
    p.i[0] = static_cast<int32_t>(per_group);
    n_groups = col_groups(per_group) * row_tiles;
  }
  WT_TRY(too_big(n_groups));
  uint32_t gx, gy;
  grid(n_groups, &gx, &gy);
  Spec spec(wg, w_align, tile_rows);
  spec.fuse = fuse;
  return b.record(k, spec, bind, p, gx, gy);
}

Status encode_rope(VulkanBackend& b, const OpCall& c) {
  const RopeOp& a = c.get<RopeOp>();
  const Tensor& x = a.x;
  // x2 rides in x's dispatch where both lie in one binding (rope.comp), else has its own.
  Bound x_bind;
  uint32_t firsts[2] = {};
  if (!a.x2.empty()) {
    const Tensor* both[2] = {&a.x, &a.x2};
    bool shared = false;
    WT_TRY(b.bind_union(both, 2, 4, "rope x and x2", &x_bind, firsts, &shared));
    x_bind.first = firsts[0];
    if (!shared) {
      RopeOp one = a, two = a;
      one.x2 = two.x2 = Tensor{};
      two.x = a.x2;
      WT_TRY(encode_rope(b, OpCall(one)));
      return encode_rope(b, OpCall(two));
    }
  } else {
    WT_TRY(bind_f32(b, x, "rope x", &x_bind));
  }
  const int32_t n_rot = a.n_rot;  // even, in (0, min(head_dim, 512)] (validate_op)
  const int32_t half = n_rot / 2;
  const bool table = !a.angles.empty();  // the angles made on the host (RopeOp::angles)
  const bool f64 = !table && b.vk_caps().float64;
  // Without angles: frequencies exactly as the CPU computes them (rope_freqs: double pow,
  // then the divisor, read through its mapped host pointer), once per launch into the ring.
  double freq_d[256];
  float freq_f[256];
  if (!table) rope_freqs(a, freq_d);
  for (int32_t i = 0; i < half && !table; ++i) freq_f[i] = static_cast<float>(freq_d[i]);
  Bound bind[kBindings];
  init_bindings(b, bind);
  bind[b_dst] = x_bind;
  if (table) {
    WT_TRY(bind_f32(b, a.angles, "rope angles", &bind[b_src2]));
  } else if (f64) {
    WT_TRY(b.upload(freq_d, sizeof(double) * half, &bind[b_src2]));
  } else {
    WT_TRY(b.upload(freq_f, sizeof(float) * half, &bind[b_src2]));
  }
  WT_TRY(b.upload(a.positions, sizeof(int32_t) * static_cast<size_t>(x.ne[2]), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(x.ne[0]);
  p.ne[1] = static_cast<uint32_t>(x.ne[1]);
  p.ne[2] = static_cast<uint32_t>(x.ne[2]);
  push_strides(&p, 0, x);
  if (!a.x2.empty()) {
    p.ne[3] = static_cast<uint32_t>(a.x2.ne[1]);
    p.nb[2] = firsts[1];
    push_strides(&p, 2, a.x2);
  }
  if (table) push_strides(&p, 3, a.angles);
  p.i[0] = n_rot;
  p.i[1] = a.neox ? 1 : 0;
  // The CPU multiplies the position by position_scale (linear scaling; 1 when unscaled).
  p.f[1] = a.position_scale;
  p.f[0] = a.mscale;
  return record_elementwise(b, table ? Kernel::rope_table : f64 ? Kernel::rope_f64 : Kernel::rope, bind, p,
                            static_cast<uint64_t>(half) * (p.ne[1] + p.ne[3]) * p.ne[2]);
}

Status encode_argmax(VulkanBackend& b, const OpCall& c) {
  const ArgmaxOp& a = c.get<ArgmaxOp>();
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.x, "argmax x", &bind[b_src0]));
  void* host = nullptr;
  WT_TRY(b.readback_slot(sizeof(int32_t), &bind[b_aux], &host));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.x.ne[0]);
  WT_TRY(b.record(Kernel::argmax, b.wg_size(), bind, p, 1));
  WT_TRY(b.finish_host_result());
  *a.out = *static_cast<const int32_t*>(host);
  return Status::ok();
}

Status encode_gather_rows(VulkanBackend& b, const OpCall& c) {
  const GatherRowsOp& a = c.get<GatherRowsOp>();
  const bool src3 = a.src.n_dims >= 3, dst3 = a.dst.n_dims >= 3, per_head = a.per_head;
  const int64_t heads = src3 ? a.src.ne[1] : 1;
  const int64_t n_sel = per_head ? a.n_ids / heads : a.n_ids;
  const uint32_t flags = (src3 ? 1u : 0u) | (dst3 ? 2u : 0u) | (per_head ? 4u : 0u);
  if (a.dst.type != DType::f32)
    return encode_kv_rows(b, KvRows{.dst = a.dst, .src = a.src, .heads = heads, .n_rows = n_sel, .ids = a.ids,
                                    .n_ids = a.n_ids, .flags = flags});
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "gather_rows dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.src, "gather_rows src", &bind[b_src0]));
  WT_TRY(b.upload(a.ids, sizeof(int32_t) * static_cast<size_t>(a.n_ids), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.src.ne[0]);
  p.ne[1] = static_cast<uint32_t>(heads);
  p.ne[2] = static_cast<uint32_t>(n_sel);
  push_strides(&p, 0, a.dst);
  push_strides(&p, 1, a.src);
  p.flags = flags;
  return record_elementwise(b, Kernel::gather_rows, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1] * p.ne[2]);
}

// Rows into a KV cache of f16 or q8_0 (kernels/vulkan/kv_rows.comp): f32 rows rounded to its
// type, or rows of its own type as bytes. dst is bound in bytes; src in floats or bytes.
Status encode_kv_rows(VulkanBackend& b, const KvRows& a) {
  const bool copy = a.src.type == a.dst.type;  // else f32 into f16 / q8_0 (validate_op)
  const Kernel k = copy ? Kernel::kv_copy : a.dst.type == DType::f16 ? Kernel::kv_store_f16 : Kernel::kv_store_q8_0;
  size_t row_bytes = 0;
  dtype_row_bytes(a.dst.type, a.src.ne[0], &row_bytes);
  const uint32_t su = copy ? 1 : 4;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(b.bind_tensor(a.dst, 1, "KV rows dst", &bind[b_dst]));
  WT_TRY(b.bind_tensor(a.src, su, "KV rows src", &bind[b_src0]));
  if (a.ids && a.n_ids > 0) WT_TRY(b.upload(a.ids, sizeof(int32_t) * static_cast<size_t>(a.n_ids), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.src.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.heads);
  p.ne[2] = static_cast<uint32_t>(a.n_rows);
  push_strides(&p, 0, a.dst, 1);
  push_strides(&p, 1, a.src, su);
  p.i[0] = a.row0;
  p.i[1] = static_cast<int32_t>(row_bytes);
  p.i[2] = static_cast<int32_t>(row_bytes / 4 + 2);  // the most words a row of that many bytes touches
  p.flags = a.ids ? a.flags : 8u;
  return record_elementwise(b, k, bind, p, static_cast<uint64_t>(a.heads) * static_cast<uint64_t>(a.n_rows) * p.i[2]);
}

}  // namespace wt::vk
