// Encoders of the attention-shaped ops: attention_prefill / attention_decode (flash-style,
// one workgroup per (query row, head), or with the lane kernels a lane per query row or
// key slice, attention_lane.comp), window_scores and block_scores (two dispatches
// each, the first filling the workspace the second reads; the batch's barrier orders them).
// Each reads a KV cache of f32, f16 or q8_0 directly (kernels/vulkan/kv.glsl).
#include <string>

#include "decode_split.h"
#include "encode.h"

namespace wt::vk {
namespace {

constexpr bool kv_twins(Kernel f32, Kernel f16, Kernel q8) {
  return static_cast<uint32_t>(f16) == static_cast<uint32_t>(f32) + 1 && static_cast<uint32_t>(q8) == static_cast<uint32_t>(f32) + 2;
}
static_assert(kv_twins(Kernel::attention_prefill, Kernel::attention_prefill_f16, Kernel::attention_prefill_q8_0) &&
                  kv_twins(Kernel::attention_decode, Kernel::attention_decode_f16, Kernel::attention_decode_q8_0) &&
                  kv_twins(Kernel::attention_split, Kernel::attention_split_f16, Kernel::attention_split_q8_0) &&
                  kv_twins(Kernel::attention_tiled, Kernel::attention_tiled_f16, Kernel::attention_tiled_q8_0) &&
                  kv_twins(Kernel::attention_lane_prefill, Kernel::attention_lane_prefill_f16,
                           Kernel::attention_lane_prefill_q8_0) &&
                  kv_twins(Kernel::attention_lane_decode, Kernel::attention_lane_decode_f16,
                           Kernel::attention_lane_decode_q8_0) &&
                  kv_twins(Kernel::window_scores_stats, Kernel::window_scores_stats_f16, Kernel::window_scores_stats_q8_0) &&
                  kv_twins(Kernel::window_scores, Kernel::window_scores_f16, Kernel::window_scores_q8_0) &&
                  kv_twins(Kernel::block_scores, Kernel::block_scores_f16, Kernel::block_scores_q8_0) &&
                  kv_twins(Kernel::key_bounds, Kernel::key_bounds_f16, Kernel::key_bounds_q8_0),
              "kv_variant: each KV-reading kernel's f16 and q8_0 twins follow it");

constexpr uint32_t kAttnWg = 64;  // attention.comp / block_scores.comp size their shared arrays for 64
constexpr uint32_t kAttnLanes = 8;  // attention_lane.comp: one AVX2 vector of lanes on lavapipe


// Whether attention_lane.comp can take a call (the lane kernels are on): head_dim a
// multiple of 4 within its register arrays, the cache's rows on 4 floats (f32) or 2 halves
// (f16; q8_0 rows are even already, bind_kv), and for decode the lanes' partial sums within
// the device's shared memory.
bool lane_attention_fits(const VulkanBackend& b, const Bound (&bind)[kBindings], const Push& p, uint32_t ku,
                         bool decode) {
  const uint32_t hd = p.ne[0], group = p.ne[1] / p.ne[3];
  if (!b.lane_kernels() || hd % 4 != 0 || hd > 256 || group * hd > 1024) return false;
  // ku, the cache's unit in bytes (4, 2, 1), is also the row alignment in units that
  // KV_VEC4 needs: 4 floats, 2 halves, any byte (q8_0's evenness is bind_kv's).
  for (int s = 2; s <= 3; ++s) {
    if ((bind[s == 2 ? b_src1 : b_src2].first | p.nb[2 * s] | p.nb[2 * s + 1]) % ku != 0) return false;
  }
  const uint64_t shared = uint64_t{kAttnLanes} * group * (hd + 2) * sizeof(float);
  return !decode || shared <= b.vk_caps().max_shared_bytes;
}

// attention_tiled.comp: 16 rows a workgroup of 256, head_dim a multiple of 4 up to 128, its
// shared arrays (q rows, a step's keys and values, padded to 129 floats; the step's scores)
// within the device's; only where the tiled prompt kernels are on (GPU kernels, 256 a group).
constexpr uint32_t kTiledRows = 16, kTiledWg = 256;
bool tiled_attention_fits(const VulkanBackend& b, const Push& p) {
  constexpr uint64_t kShared = sizeof(float) * (3 * kTiledRows * 129 + kTiledRows * 17);
  return b.tiled_prompt() && p.ne[0] % 4 == 0 && p.ne[0] <= 128 && kShared <= b.vk_caps().max_shared_bytes;
}

// Both attention ops: ids are the prefill's per-row skip flags or the decode's key rows.
template <typename Attention>
Status encode_attention(VulkanBackend& b, const Attention& a, bool decode, const int32_t* ids, int64_t n_ids) {
  const char* op = decode ? "attention_decode" : "attention_prefill";
  WT_TRY(check_heads(a.q, op));
  // A given list holds even when it is empty: decode over no keys gives 0, as ops.h says
  // (and as the CPU does), never the rows 0..pos0.
  const bool with_ids = ids != nullptr;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "attention dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.q, "attention q", &bind[b_src0]));
  uint32_t ku = 4;  // k and v are a cache of one type (validate_op)
  WT_TRY(bind_kv(b, a.k, "attention k", &bind[b_src1], &ku));
  WT_TRY(bind_kv(b, a.v, "attention v", &bind[b_src2], &ku));
  if (with_ids && n_ids > 0) WT_TRY(b.upload(ids, sizeof(int32_t) * static_cast<size_t>(n_ids), &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.q.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.q.ne[1]);
  p.ne[2] = static_cast<uint32_t>(decode ? 1 : a.q.ne[2]);
  p.ne[3] = static_cast<uint32_t>(a.k.ne[1]);
  push_strides(&p, 0, a.dst);
  push_strides(&p, 1, a.q);
  push_strides(&p, 2, a.k, ku);
  push_strides(&p, 3, a.v, ku);
  p.i[0] = a.pos0;
  p.f[0] = a.scale;
  p.n_ids = with_ids ? static_cast<uint32_t>(n_ids) : 0;
  p.flags = with_ids ? 1u : 0u;
  p.i[3] = a.window;
  uint32_t gx, gy;
  if (a.window > 0) {  // a sliding window (Gemma 3): only attention.comp takes one
    grid(static_cast<uint64_t>(p.ne[1]) * p.ne[2], &gx, &gy);
    return b.record(kv_variant(decode ? Kernel::attention_decode : Kernel::attention_prefill, a.k.type), kAttnWg,
                    bind, p, gx, gy);
  }
  if (lane_attention_fits(b, bind, p, ku, decode)) {
    // Prefill: a workgroup per kAttnLanes query rows of one KV head; decode: one per KV head.
    grid(static_cast<uint64_t>(p.ne[3]) * (decode ? 1 : groups_for(p.ne[2], kAttnLanes)), &gx, &gy);
    const Kernel k = decode ? Kernel::attention_lane_decode : Kernel::attention_lane_prefill;
    return b.record(kv_variant(k, a.k.type), Spec::heads(kAttnLanes, p.ne[0], p.ne[1] / p.ne[3]), bind, p, gx, gy);
  }
  // The lane kernels' devices never split (decode_split.h), and plan no workspace for it.
  const DecodeSplit split = decode && !b.lane_kernels()
                                ? decode_split(with_ids ? p.n_ids : static_cast<uint64_t>(a.pos0) + 1)
                                : DecodeSplit{};
  if (split.n_splits >= 2) {
    // Flash-decoding (decode_split.h): partials into the workspace, then one merge per head.
    Bound out = bind[b_dst];
    WT_TRY(b.bind_workspace(split_partial_bytes(split.n_splits, p.ne[1], p.ne[0]), "attention_decode partials",
                            &bind[b_dst]));
    p.i[1] = static_cast<int32_t>(split.per_split);
    p.i[2] = static_cast<int32_t>(split.n_splits);
    grid(static_cast<uint64_t>(p.ne[1]) * split.n_splits, &gx, &gy);
    WT_TRY(b.record(kv_variant(Kernel::attention_split, a.k.type), kAttnWg, bind, p, gx, gy));
    Bound merge[kBindings];
    init_bindings(b, merge);
    merge[b_dst] = out;
    merge[b_src0] = bind[b_dst];
    grid(p.ne[1], &gx, &gy);
    return b.record(Kernel::attention_merge, kAttnWg, merge, p, gx, gy);
  }
  if (!decode && !with_ids && tiled_attention_fits(b, p)) {
    // A prompt on a GPU: flash tiles of 16 (position, head) rows of one KV head, the keys
    // through shared memory (attention_tiled.comp).
    const uint64_t rows = static_cast<uint64_t>(p.ne[2]) * (p.ne[1] / p.ne[3]);
    grid(static_cast<uint64_t>(p.ne[3]) * groups_for(rows, kTiledRows), &gx, &gy);
    return b.record(kv_variant(Kernel::attention_tiled, a.k.type), kTiledWg, bind, p, gx, gy);
  }
  grid(static_cast<uint64_t>(p.ne[1]) * p.ne[2], &gx, &gy);
  return b.record(kv_variant(decode ? Kernel::attention_decode : Kernel::attention_prefill, a.k.type), kAttnWg, bind,
                  p, gx, gy);
}

}  // namespace

Status encode_attention_prefill(VulkanBackend& b, const OpCall& c) {
  const AttentionPrefillOp& a = c.get<AttentionPrefillOp>();
  return encode_attention(b, a, false, a.skip_rows, a.q.ne[2]);
}
Status encode_attention_decode(VulkanBackend& b, const OpCall& c) {
  const AttentionDecodeOp& a = c.get<AttentionDecodeOp>();
  return encode_attention(b, a, true, a.key_rows, a.n_key_rows);
}

Status encode_window_scores(VulkanBackend& b, const OpCall& c) {
  const WindowScoresOp& a = c.get<WindowScoresOp>();
  WT_TRY(check_heads(a.q, "window_scores"));
  const int64_t n = a.q.ne[2], n_keys = a.k.ne[2];
  const int64_t w = a.window < n ? (a.window > 0 ? a.window : 0) : n;
  const int64_t n_cols = a.dst.ne[0] < n_keys ? a.dst.ne[0] : n_keys;
  const bool softmax = a.softmax;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "window_scores dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.q, "window_scores q", &bind[b_src0]));
  uint32_t ku = 4;
  WT_TRY(bind_kv(b, a.k, "window_scores k", &bind[b_src1], &ku));
  const size_t stats_bytes = sizeof(float) * 2 * static_cast<size_t>(a.q.ne[1] * (w > 0 ? w : 1));
  if (softmax) WT_TRY(b.bind_workspace(stats_bytes, "window_scores", &bind[b_aux]));
  Push p;
  p.ne[0] = static_cast<uint32_t>(a.q.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.q.ne[1]);
  p.ne[2] = static_cast<uint32_t>(n);
  p.ne[3] = static_cast<uint32_t>(a.k.ne[1]);
  push_strides(&p, 0, a.dst);
  push_strides(&p, 1, a.q);
  push_strides(&p, 2, a.k, ku);
  p.i[0] = static_cast<int32_t>(w);
  p.i[1] = static_cast<int32_t>(n_cols);
  p.i[2] = a.n_visible > 0 ? a.n_visible : static_cast<int32_t>(n_keys);
  p.i[3] = static_cast<int32_t>(n_keys);
  p.f[0] = a.scale;
  p.flags = (a.softmax ? 1u : 0u) | (a.per_query ? 2u : 0u);
  uint32_t gx, gy;
  if (softmax && w > 0) {
    grid(static_cast<uint64_t>(p.ne[1]) * static_cast<uint64_t>(w), &gx, &gy);
    WT_TRY(b.record(kv_variant(Kernel::window_scores_stats, a.k.type), kAttnWg, bind, p, gx, gy));
  }
  return record_elementwise(b, kv_variant(Kernel::window_scores, a.k.type), bind, p,
                            static_cast<uint64_t>(p.ne[1]) * n_cols);
}

Status encode_block_scores(VulkanBackend& b, const OpCall& c) {
  const BlockScoresOp& a = c.get<BlockScoresOp>();
  WT_TRY(check_heads(a.q, "block_scores"));
  const int64_t n = a.q.ne[2];
  const int64_t n_keys = a.key_count();
  const int64_t n_last = a.query_rows > 0 && a.query_rows <= n ? a.query_rows : n;
  const int64_t block = a.block > 0 ? a.block : 1, unit = a.unit > 0 ? a.unit : 1;
  Bound bind[kBindings];
  init_bindings(b, bind);
  WT_TRY(bind_f32(b, a.dst, "block_scores dst", &bind[b_dst]));
  WT_TRY(bind_f32(b, a.q, "block_scores q", &bind[b_src0]));
  uint32_t ku = 4;
  WT_TRY(bind_kv(b, a.k, "block_scores k", &bind[b_src1], &ku));
  WT_TRY(b.bind_workspace(sizeof(float) * static_cast<size_t>(a.q.ne[0] * a.q.ne[1]), "block_scores", &bind[b_src2]));
  Push p;
  WT_TRY(bind_key_ids(b, a.key_ids, a.n_keys, &bind[b_aux], &p.flags));
  p.ne[0] = static_cast<uint32_t>(a.q.ne[0]);
  p.ne[1] = static_cast<uint32_t>(a.q.ne[1]);
  p.ne[2] = static_cast<uint32_t>(n_keys);
  p.ne[3] = static_cast<uint32_t>(a.k.ne[1]);
  push_strides(&p, 1, a.q);
  push_strides(&p, 2, a.k, ku);
  p.i[0] = static_cast<int32_t>(block);
  p.i[1] = static_cast<int32_t>(unit);
  p.i[2] = static_cast<int32_t>(n_last);
  p.i[3] = static_cast<int32_t>(n);
  p.f[0] = 1.0f / static_cast<float>(n_last);
  p.f[1] = 1.0f / static_cast<float>(a.q.ne[1]);
  WT_TRY(record_elementwise(b, Kernel::block_scores_qbar, bind, p, static_cast<uint64_t>(p.ne[0]) * p.ne[1]));
  uint32_t gx, gy;
  grid(static_cast<uint64_t>((n_keys + block - 1) / block), &gx, &gy);
  return b.record(kv_variant(Kernel::block_scores, a.k.type), kAttnWg, bind, p, gx, gy);
}

Status check_heads(const Tensor& q, const char* op) {
  if (q.ne[0] > 4 * kAttnWg) return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + op + ": head_dim must be <= 256");
  return Status::ok();
}

}  // namespace wt::vk
