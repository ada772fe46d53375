#include "parity_cases.h"
#include "parity_specs.h"

#include <cmath>
#include <tuple>

#include "kernels/cuda/tensor_core_paths.h"

namespace wt::parity {
namespace {

// Tolerances: f32 kernels that sum in a different order than the CPU differ by rounding
// only (nmse ~1e-14, max-abs a few ulps of the largest sum); copies are exact; argmax and
// topk must agree exactly. Measured values are in backends/vulkan/README.md.
// CUDA's tensor-core calls (tensor_core_paths.h) round their inputs: TF32 in matmul (nmse
// ~1e-7 expected), f16 q, k, v and softmax weights in prefill attention (~1e-6); both are
// held to 2e-5, what the CPU's int8 activations differ from f32 by (the fast path the CPU
// runs by default), and max-abs limits a few times that rounding at the cases' magnitudes
// (matmul outputs up to ~4, attention outputs below 1).
constexpr Tolerance kTolerances[] = {
    {Op::embed, 1e-14, 1e-6},
    {Op::rmsnorm, 1e-12, 1e-5},
    {Op::matmul, 1e-11, 1e-4, 2e-5, 5e-2},
    {Op::add, 0.0, 0.0},
    {Op::rope, 1e-11, 1e-5},
    {Op::attention_prefill, 1e-10, 1e-5, 2e-5, 1e-2},
    {Op::attention_decode, 1e-10, 1e-5},
    {Op::swiglu, 1e-12, 1e-5},
    {Op::copy_rows, 0.0, 0.0},
    {Op::window_scores, 1e-10, 1e-4},  // raw mode sums W dot products of size ~100: float rounding ~1e-5
    {Op::pool1d, 1e-12, 1e-5},
    {Op::topk, 0.0, 0.0},
    {Op::gather_rows, 0.0, 0.0},
    {Op::block_scores, 1e-10, 1e-5},
    {Op::kv_similarity, 1e-10, 1e-5},
    {Op::argmax, 0.0, 0.0},
    {Op::key_bounds, 0.0, 0.0},  // a min and a max: exact on every backend
    {Op::bound_scores, 1e-10, 1e-5},
};

void add_cases(std::vector<Case>& v) {
  for (auto [d, n, bcast, alias] : {std::tuple{576, 7, false, false}, std::tuple{1000, 3, true, false},
                                    std::tuple{33, 1, false, false}, std::tuple{257, 5, false, true}}) {
    Case c = make(Op::add, "d=" + std::to_string(d) + " n=" + std::to_string(n) + (bcast ? " broadcast" : "") +
                               (alias ? " in place" : ""));
    c.dst = f32(2, d, n);
    c.src[0] = f32(2, d, n);
    c.src[1] = f32(2, d, bcast ? 1 : n);
    c.dst_is_src0 = alias;
    c.call = [](const Slots& s) { return OpCall(AddOp{.dst = s.dst, .a = s.src[0], .b = s.src[1]}); };
    v.push_back(c);
  }
}

void rmsnorm_cases(std::vector<Case>& v) {
  for (auto [d, n, pad, eps] : {std::tuple{576, 5, 0, 1e-5f}, std::tuple{1001, 2, 0, 1e-6f}, std::tuple{64, 3, 7, 1e-5f}}) {
    Case c = make(Op::rmsnorm, "d=" + std::to_string(d) + " n=" + std::to_string(n) + (pad ? " strided rows" : ""));
    c.dst = f32(2, d, n);
    c.src[0] = padded(f32(2, d, n, 1, Fill::normal, 3.0f), pad);
    c.src[1] = f32(1, d);
    c.call = [eps](const Slots& s) { return OpCall(RmsnormOp{.dst = s.dst, .x = s.src[0], .weight = s.src[1], .eps = eps}); };
    v.push_back(c);
  }
  Case c = make(Op::rmsnorm, "d=300 n=4 in place");
  c.dst = f32(2, 300, 4);
  c.src[0] = c.dst;
  c.src[1] = f32(1, 300);
  c.call = [](const Slots& s) { return OpCall(RmsnormOp{.dst = s.dst, .x = s.src[0], .weight = s.src[1], .eps = 1e-5f}); };
  c.dst_is_src0 = true;
  v.push_back(c);
  // With a residual (x += residual, then the norm): into its own dst, and into the residual
  // itself as the engine calls it; both x and the output are compared.
  for (auto [d, n, pad, alias] : {std::tuple{576, 5, 0, false}, std::tuple{1001, 3, 5, true}, std::tuple{576, 1, 0, true}}) {
    Case r = make(Op::rmsnorm, "d=" + std::to_string(d) + " n=" + std::to_string(n) + " + residual" +
                                   (alias ? " into the residual" : "") + (pad ? " strided rows" : ""));
    r.dst = f32(2, d, n);
    r.src[0] = padded(f32(2, d, n, 1, Fill::normal, 3.0f), pad);
    r.src[1] = f32(1, d);
    r.src[2] = padded(f32(2, d, n, 1, Fill::normal, 2.0f), pad);
    if (alias) {
      r.call = [](const Slots& s) {
        return OpCall(RmsnormOp{.dst = s.src[2], .x = s.src[0], .weight = s.src[1], .eps = 1e-5f, .residual = s.src[2]});
      };
      r.results = result_src0 | result_src2;
    } else {
      r.call = [](const Slots& s) {
        return OpCall(RmsnormOp{.dst = s.dst, .x = s.src[0], .weight = s.src[1], .eps = 1e-5f, .residual = s.src[2]});
      };
      r.results = result_dst | result_src0;
    }
    v.push_back(r);
  }
}

void rope_cases(std::vector<Case>& v) {
  struct R {
    int hd, heads, n, n_rot, neox;
    float theta, pos_scale;
    bool divisors;
    float mscale = 1.0f;
  };
  // The last: Phi-4-mini's rope, over 96 of 128 dims with LongRoPE's divisors and its factor
  // on cos and sin.
  for (const R& r : {R{64, 4, 5, 64, 0, 10000.0f, 1.0f, false}, R{64, 3, 7, 64, 1, 1e6f, 1.0f, true},
                     R{128, 2, 3, 64, 1, 500000.0f, 0.25f, false}, R{80, 5, 2, 80, 0, 10000.0f, 1.0f, false},
                     R{128, 3, 4, 96, 1, 10000.0f, 1.0f, true, 1.1902f}}) {
    Case c = make(Op::rope, "hd=" + std::to_string(r.hd) + " heads=" + std::to_string(r.heads) + " n=" +
                                std::to_string(r.n) + " n_rot=" + std::to_string(r.n_rot) + (r.neox ? " neox" : "") +
                                (r.divisors ? " divisors" : "") + (r.pos_scale != 1.0f ? " linear-scaled" : "") +
                                (r.mscale != 1.0f ? " mscale" : ""));
    c.src[0] = f32(3, r.hd, r.heads, r.n);
    if (r.divisors) c.src[1] = f32(2, r.n_rot / 2, 1, 1, Fill::positive, 4.0f);
    c.ids = iota_ids(r.n, 1237, 3, 8192);  // positions up to 8k: the angles the CPU computes in double
    c.call = [r](const Slots& s) {
      return OpCall(RopeOp{.x = s.src[0], .positions = s.ids, .n_rot = r.n_rot, .neox = r.neox != 0,
                           .theta_base = r.theta, .position_scale = r.pos_scale, .mscale = r.mscale,
                           .freq_divisors = s.src[1]});
    };
    c.results = result_src0;
    v.push_back(c);
  }
  // Angles given (RopeOp::angles, what the engine passes a decode step's rope): every backend
  // rotates by the table's (cos, sin) as given, whatever their values, so random ones check
  // that each reads row r's pair i where the CPU does (rows padded past n_rot: the stride).
  // That rope_angles() makes what the kernels compute: tests/unit/test_cpu_ops.cpp.
  for (const bool neox : {false, true}) {
    Case c = make(Op::rope, std::string("angles given hd=64 heads=9+3 n=3") + (neox ? " neox" : "") + " padded rows");
    c.src[0] = f32(3, 64, 9, 3);
    c.src[1] = f32(2, 64 + 6, 3);
    c.src[2] = f32(3, 64, 3, 3);
    c.ids = iota_ids(3, 4099, 17, 8192);
    // With mscale set: a table carries it already (rope_angles), so kernels must not apply it.
    c.call = [neox](const Slots& s) {
      return OpCall(RopeOp{.x = s.src[0], .x2 = s.src[2], .positions = s.ids, .n_rot = 64, .neox = neox,
                           .theta_base = 1e6f, .mscale = neox ? 1.19f : 1.0f, .angles = cols(s.src[1], 0, 64)});
    };
    c.results = result_src0 | result_src2;
    v.push_back(c);
  }
  // Queries and keys in one launch (RopeOp::x2), as a layer's forward pass rotates them: in
  // one buffer (heads 0..9 of src0 and the 3 after them; Vulkan's single dispatch) and in two
  // (src0 and src2; Vulkan's one dispatch each).
  for (const bool one_buffer : {true, false}) {
    Case c = make(Op::rope, std::string("q and k ") + (one_buffer ? "in one buffer" : "apart") + " hd=64 heads=9+3 n=6 neox");
    c.src[0] = f32(3, 64, one_buffer ? 12 : 9, 6);
    if (!one_buffer) c.src[2] = f32(3, 64, 3, 6);
    c.ids = iota_ids(6, 911, 5, 8192);
    c.call = [one_buffer](const Slots& s) {
      Tensor q = s.src[0], k = one_buffer ? s.src[0] : s.src[2];
      if (one_buffer) {
        q.ne[1] = 9;
        k.ne[1] = 3;
        k.data = static_cast<uint8_t*>(k.data) + 9 * k.nb[1];
      }
      return OpCall(RopeOp{.x = q, .x2 = k, .positions = s.ids, .n_rot = 64, .neox = true, .theta_base = 1e6f});
    };
    c.results = one_buffer ? result_src0 : result_src0 | result_src2;
    v.push_back(c);
  }
}

// attention_decode shapes that a GPU splits differently (CUDA: splits from the SM count,
// head tiles of 4 or 8 query heads, float4 rows when hd % 4 == 0 and the binding is aligned,
// which the harness's pads make true for every fourth case): the models' groups (9/3, 14/2,
// 12/2), a group wider than one head tile (20/1), ragged head sizes, 1 key, 8k+ keys, key
// lists (SlimInfer's ascending blocks) and the pager's pool rows (blocks of 16 rows in slot
// order, not ascending).
void decode_split_cases(std::vector<Case>& v) {
  enum class Keys { all, every_third, paged };
  struct D {
    int hd, heads, kv_heads, pos0;
    Keys keys;
  };
  for (const D& d : {D{64, 9, 3, 936, Keys::all}, D{64, 14, 2, 8200, Keys::all}, D{128, 12, 2, 2047, Keys::every_third},
                     D{80, 20, 1, 500, Keys::all}, D{64, 9, 3, 8300, Keys::all}, D{256, 4, 2, 130, Keys::all},
                     D{32, 8, 8, 0, Keys::all}, D{64, 9, 3, 1100, Keys::paged}, D{128, 12, 2, 700, Keys::paged},
                     D{36, 6, 3, 77, Keys::every_third}, D{64, 14, 2, 33000, Keys::all}, D{64, 9, 3, 33000, Keys::all},
                     D{128, 12, 2, 33000, Keys::all}}) {
    const char* what = d.keys == Keys::all ? "" : d.keys == Keys::paged ? " pool rows" : " key subset";
    Case c = make(Op::attention_decode, "hd=" + std::to_string(d.hd) + " heads=" + std::to_string(d.heads) + "/" +
                                            std::to_string(d.kv_heads) + " pos0=" + std::to_string(d.pos0) + what);
    const int n_kv = d.pos0 + 1;
    c.dst = f32(3, d.hd, d.heads, 1);
    c.src[0] = f32(3, d.hd, d.heads, 1);
    c.src[1] = f32(3, d.hd, d.kv_heads, n_kv + 5);
    c.src[2] = f32(3, d.hd, d.kv_heads, n_kv + 5);
    if (d.keys == Keys::every_third) c.ids = iota_ids((n_kv + 2) / 3, 3, 0, n_kv);
    if (d.keys == Keys::paged) {
      // n_kv logical rows in blocks of 16, block b in pool slot (b * 7 + 3) % n_blocks.
      const int n_blocks = (n_kv + 15) / 16;
      for (int r = 0; r < n_kv; ++r) c.ids.push_back(((r / 16) * 7 + 3) % n_blocks * 16 + r % 16);
      c.src[1] = f32(3, d.hd, d.kv_heads, n_blocks * 16);
      c.src[2] = f32(3, d.hd, d.kv_heads, n_blocks * 16);
    }
    const int32_t pos0 = d.pos0;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d.hd));
    c.call = [pos0, scale](const Slots& s) {
      return OpCall(AttentionDecodeOp{.dst = s.dst, .q = s.src[0], .k = s.src[1], .v = s.src[2], .pos0 = pos0,
                                      .scale = scale, .key_rows = s.ids, .n_key_rows = s.n_ids});
    };
    v.push_back(c);
  }
}

struct AttentionShape {
  int hd, heads, kv_heads, n, pos0;
  bool ids;  // decode: a key subset (1, 4, 7, ...); prefill: every third row skipped
  int window = 0;  // > 0: a sliding window (Gemma 3)
};

// One attention case over a KV cache of kv_type (f32, or f16 / q8_0 read directly).
Case attention_case(Op op, const AttentionShape& a, DType kv_type) {
  const bool decode = op == Op::attention_decode;
  Case c = make(op, std::string(kv_type == DType::f32 ? "" : std::string("kv ") + dtype_name(kv_type) + " ") +
                        "hd=" + std::to_string(a.hd) + " heads=" + std::to_string(a.heads) + "/" +
                        std::to_string(a.kv_heads) + " n=" + std::to_string(a.n) + " pos0=" + std::to_string(a.pos0) +
                        (a.ids ? (decode ? " key subset" : " skipped rows") : "") +
                        (a.window > 0 ? " window=" + std::to_string(a.window) : ""));
  const int n_kv = a.pos0 + a.n;
  c.kv_type = kv_type;
  c.dst = f32(3, a.hd, a.heads, a.n);
  c.src[0] = f32(3, a.hd, a.heads, a.n);
  c.src[1] = kv(kv_type, a.hd, a.kv_heads, n_kv + 3);  // rows past the visible ones must not matter
  c.src[2] = kv(kv_type, a.hd, a.kv_heads, n_kv + 3);
  const int32_t pos0 = a.pos0, window = a.window;
  c.gemma = window > 0;
  if (decode) {
    c.call = [pos0, window](const Slots& s) {
      return OpCall(AttentionDecodeOp{.dst = s.dst, .q = s.src[0], .k = s.src[1], .v = s.src[2], .pos0 = pos0,
                                      .scale = 1.0f / 8.0f, .key_rows = s.ids, .n_key_rows = s.n_ids, .window = window});
    };
  } else {
    c.call = [pos0, window](const Slots& s) {
      return OpCall(AttentionPrefillOp{.dst = s.dst, .q = s.src[0], .k = s.src[1], .v = s.src[2], .pos0 = pos0,
                                       .scale = 1.0f / 8.0f, .skip_rows = s.ids, .window = window});
    };
  }
  if (a.ids && decode) c.ids = iota_ids(97, 3, 1, n_kv);  // ascending: 1, 4, 7, ...
  if (a.ids && !decode) {
    for (int i = 0; i < a.n; ++i) c.ids.push_back(i % 3 == 1 ? 1 : 0);
  }
  return c;
}

void attention_cases(std::vector<Case>& v, Op op) {
  using A = AttentionShape;
  const bool decode = op == Op::attention_decode;
  const std::vector<A> shapes = decode ? std::vector<A>{{64, 8, 2, 1, 100, false}, {128, 4, 4, 1, 0, false},
                                                        {64, 6, 2, 1, 300, true}, {32, 4, 1, 1, 63, false}}
                                       : std::vector<A>{{64, 4, 2, 37, 0, false}, {64, 8, 1, 5, 70, false},
                                                        {32, 3, 3, 65, 0, false}, {64, 4, 2, 20, 10, true},
                                                        // From 64 positions CUDA takes its tensor-core kernel
                                                        // (tiles of 64 rows, 64 or 32 keys): the default
                                                        // model's GQA 9/3 over 517 tokens, Qwen2.5's 14/2
                                                        // (0.5B) and 12/2 at head_dim 128 (1.5B), head dims
                                                        // padded (80, 32), skipped rows, 8k+ keys, 64 exactly.
                                                        {64, 9, 3, 517, 0, false}, {64, 14, 2, 301, 50, false},
                                                        {128, 12, 2, 203, 33, false}, {80, 20, 1, 70, 5, false},
                                                        {64, 9, 3, 131, 20, true}, {64, 9, 3, 64, 8200, false},
                                                        {64, 14, 2, 64, 0, false}, {64, 9, 3, 1, 900, false},
                                                        // 13th: the harness's 0-byte offset (every fourth
                                                        // case), so CUDA's float4 tile loads run at 128.
                                                        {128, 12, 2, 150, 10, false}};
  for (const A& a : shapes) v.push_back(attention_case(op, a, DType::f32));
  if (decode) decode_split_cases(v);
  // Over a cache of f16 or q8_0: GQA, a head_dim of one q8_0 block (rows off a word every
  // other row), ragged key counts, key subsets and skipped rows. Prefill's 65 and 131 rows
  // take CUDA's tensor cores, the f16 copies at offsets 12 and 0 of the harness: rows read
  // one value at a time, then four (8-byte loads; with f16 the default cache, the path of
  // every prompt of 64+ tokens on a GPU).
  const std::vector<A> typed = decode ? std::vector<A>{{64, 9, 3, 1, 936, false}, {128, 12, 2, 1, 300, true},
                                                       {32, 4, 1, 1, 63, false}}
                                      : std::vector<A>{{64, 9, 3, 37, 0, false}, {64, 14, 2, 20, 70, true},
                                                       {32, 4, 4, 65, 3, false}, {64, 9, 3, 131, 20, false},
                                                       {128, 12, 2, 9, 100, false}};
  for (DType t : {DType::f16, DType::q8_0})
    for (const A& a : typed) v.push_back(attention_case(op, a, t));
  // Sliding windows (Gemma 3's heads of 256, 4 over 1 KV head): shorter than the prompt, a
  // prompt continuing a cache, a window past everything; decode inside and past it.
  const std::vector<A> windowed = decode ? std::vector<A>{{256, 4, 1, 1, 40, false, 8}, {64, 9, 3, 1, 300, false, 70}}
                                         : std::vector<A>{{256, 4, 1, 30, 0, false, 8}, {64, 9, 3, 40, 50, false, 16},
                                                          {64, 4, 2, 20, 0, false, 100}};
  for (const A& a : windowed) v.push_back(attention_case(op, a, DType::f32));
  v.push_back(attention_case(op, windowed[0], DType::f16));
}

void swiglu_cases(std::vector<Case>& v) {
  for (auto [f, n] : {std::tuple{1536, 3}, std::tuple{777, 2}, std::tuple{1, 1}}) {
    Case c = make(Op::swiglu, "f=" + std::to_string(f) + " n=" + std::to_string(n));
    c.dst = f32(2, f, n);
    c.src[0] = f32(2, f, n, 1, Fill::normal, 4.0f);
    c.src[1] = f32(2, f, n);
    c.call = [](const Slots& s) { return OpCall(SwigluOp{.dst = s.dst, .gate = s.src[0], .up = s.src[1]}); };
    v.push_back(c);
  }
  // Gemma 3's gelu (tanh form).
  for (auto [f, n] : {std::tuple{1152, 3}, std::tuple{37, 2}}) {
    Case c = make(Op::swiglu, "gelu f=" + std::to_string(f) + " n=" + std::to_string(n));
    c.gemma = true;
    c.dst = f32(2, f, n);
    c.src[0] = f32(2, f, n, 1, Fill::normal, 4.0f);
    c.src[1] = f32(2, f, n);
    c.call = [](const Slots& s) { return OpCall(SwigluOp{.dst = s.dst, .gate = s.src[0], .up = s.src[1], .gelu = true}); };
    v.push_back(c);
  }
}

void copy_rows_cases(std::vector<Case>& v) {
  for (auto [t, d, n, row0, rows] : {std::tuple{DType::f32, 256, 5, 3, 12}, std::tuple{DType::f32, 130, 1, 0, 2},
                                     std::tuple{DType::f16, 130, 3, 1, 6}, std::tuple{DType::f16, 256, 4, 4, 8}}) {
    Case c = make(Op::copy_rows, std::string("to ") + dtype_name(t) + " d=" + std::to_string(d) + " n=" +
                                     std::to_string(n) + " row0=" + std::to_string(row0));
    c.dst = typed(t, d, rows);
    c.src[0] = f32(2, d, n);
    c.call = [row0 = row0](const Slots& s) { return OpCall(CopyRowsOp{.dst = s.dst, .src = s.src[0], .row0 = row0}); };
    v.push_back(c);
  }
  // Into a KV cache of q8_0 (rounded per block of 32), and a cache's rows into one of its type
  // (bytes: the pager's staging). d = 96 gives q8_0 rows of 102 bytes, which start off a word
  // every other row, so words are shared between rows.
  for (auto [src_t, t, d, n, row0, rows] :
       {std::tuple{DType::f32, DType::q8_0, 64, 5, 2, 9}, std::tuple{DType::f32, DType::q8_0, 96, 7, 1, 9},
        std::tuple{DType::q8_0, DType::q8_0, 96, 5, 3, 9}, std::tuple{DType::f16, DType::f16, 66, 3, 1, 5},
        std::tuple{DType::f32, DType::f16, 66, 3, 0, 5}}) {
    Case c = make(Op::copy_rows, std::string(dtype_name(src_t)) + " to " + dtype_name(t) + " d=" + std::to_string(d) +
                                     " n=" + std::to_string(n) + " row0=" + std::to_string(row0));
    c.kv_type = t;
    c.dst = typed(t, d, rows);
    c.src[0] = typed(src_t, d, n);
    c.call = [row0 = row0](const Slots& s) { return OpCall(CopyRowsOp{.dst = s.dst, .src = s.src[0], .row0 = row0}); };
    v.push_back(c);
  }
}

// A layer's keys and values into its cache in one launch (CopyRowsOp's second copy): the two
// copies' tensors as column halves of one dst and one src (one binding each: Vulkan's single
// dispatch), and apart (dst2 in src slot 2, compared too).
void copy_rows_pair_cases(std::vector<Case>& v) {
  for (auto [t, d, n, row0, rows, one_buffer] :
       {std::tuple{DType::f32, 192, 1, 5, 9, true}, std::tuple{DType::f32, 64, 4, 2, 7, true},
        std::tuple{DType::f32, 192, 3, 1, 6, false}, std::tuple{DType::f16, 64, 2, 3, 6, false},
        std::tuple{DType::q8_0, 96, 3, 1, 5, false}}) {
    Case c = make(Op::copy_rows, std::string("keys and values to ") + dtype_name(t) + (one_buffer ? " in one buffer" : " apart") +
                                     " d=" + std::to_string(d) + " n=" + std::to_string(n) + " row0=" + std::to_string(row0));
    c.kv_type = t;
    c.dst = typed(t, one_buffer ? 2 * d : d, rows);
    c.src[0] = f32(2, one_buffer ? 2 * d : d, n);
    if (!one_buffer) {
      c.src[1] = f32(2, d, n);
      c.src[2] = typed(t, d, rows);
    }
    c.call = [d = d, row0 = row0, one_buffer = one_buffer](const Slots& s) {
      if (!one_buffer)
        return OpCall(CopyRowsOp{.dst = s.dst, .src = s.src[0], .row0 = row0, .dst2 = s.src[2], .src2 = s.src[1]});
      auto half = [d](Tensor x, int64_t i) {
        x.ne[0] = d;
        x.data = static_cast<uint8_t*>(x.data) + i * d * 4;
        return x;
      };
      return OpCall(CopyRowsOp{.dst = half(s.dst, 0), .src = half(s.src[0], 0), .row0 = row0, .dst2 = half(s.dst, 1),
                               .src2 = half(s.src[0], 1)});
    };
    c.results = one_buffer ? result_dst : result_dst | result_src2;
    v.push_back(c);
  }
}

Case embed_case(DType t, int64_t d, int32_t vocab, int32_t n, int32_t step, int32_t start) {
  Case c = make(Op::embed, std::string(dtype_name(t)) + " d=" + std::to_string(d) + " n=" + std::to_string(n));
  c.dst = f32(2, d, n);
  c.src[0] = typed(t, d, vocab);
  c.ids = iota_ids(n, step, start, vocab);
  c.call = [](const Slots& s) { return OpCall(EmbedOp{.dst = s.dst, .table = s.src[0], .ids = s.ids}); };
  return c;
}

void embed_cases(std::vector<Case>& v) {
  {  // Gemma 3's scaled embedding (sqrt(1152))
    Case c = embed_case(DType::q8_0, 256, 50, 7, 7, 2);
    c.label = "scaled " + c.label;
    c.gemma = true;
    c.call = [](const Slots& s) { return OpCall(EmbedOp{.dst = s.dst, .table = s.src[0], .ids = s.ids, .scale = 33.941f}); };
    v.push_back(c);
  }
  for (DType t : {DType::f32, DType::f16, DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1}) {
    v.push_back(embed_case(t, 256, 50, 7, 7, 2));
    v.push_back(embed_case(t, 96, 13, 1, 7, 2));
  }
  // BF16 and the K-quants: rows of 256-element super-blocks.
  for (DType t : {DType::bf16, DType::q4_k, DType::q5_k, DType::q6_k}) {
    v.push_back(embed_case(t, 256, 50, 7, 7, 2));
    v.push_back(embed_case(t, 768, 13, 3, 7, 2));
  }
  // Qwen2.5-0.5B's width (896: rows of 28 blocks).
  for (DType t : {DType::q5_0, DType::q5_1}) v.push_back(embed_case(t, 896, 40, 5, 11, 3));
}

void window_scores_cases(std::vector<Case>& v) {
  struct W {
    int hd, heads, kv_heads, n, n_keys, window, mode, n_cols, n_visible;
  };
  // The last three cut the softmax stats into key chunks on CUDA (from 256 keys): SnapKV's
  // window of 32 over 8k+ keys, a per-query window of 100, keys past the visible ones.
  for (const W& w : {W{64, 4, 2, 40, 40, 8, 1, 40, 40}, W{64, 4, 2, 40, 40, 8, 3, 33, 40},
                     W{32, 6, 3, 70, 70, 16, 0, 70, 0}, W{64, 2, 1, 5, 90, 5, 1, 90, 90},
                     W{64, 9, 3, 32, 8300, 32, 1, 8300, 8300}, W{64, 7, 1, 100, 2500, 100, 3, 2500, 2500},
                     W{64, 9, 3, 40, 1200, 16, 1, 1200, 1000}, W{64, 14, 2, 32, 33000, 32, 1, 33000, 33000},
                     // One row (decode_topk's step: the CPU's one_row_scores), generated keys unscored.
                     W{64, 14, 2, 1, 4100, 1, 1, 4000, 4100}, W{64, 9, 3, 1, 777, 1, 3, 700, 777}}) {
    Case c = make(Op::window_scores, "hd=" + std::to_string(w.hd) + " heads=" + std::to_string(w.heads) + "/" +
                                         std::to_string(w.kv_heads) + " keys=" + std::to_string(w.n_keys) +
                                         " W=" + std::to_string(w.window) + " mode=" + std::to_string(w.mode));
    const int n_out = (w.mode & 2) ? w.window : 1;
    c.dst = f32(3, w.n_cols, w.heads, n_out);
    c.src[0] = f32(3, w.hd, w.heads, w.n);
    c.src[1] = f32(3, w.hd, w.kv_heads, w.n_keys);
    c.call = [w](const Slots& s) {
      return OpCall(WindowScoresOp{.dst = s.dst, .q = s.src[0], .k = s.src[1], .window = w.window,
                                   .softmax = (w.mode & 1) != 0, .per_query = (w.mode & 2) != 0,
                                   .n_visible = w.n_visible, .scale = 0.125f});
    };
    v.push_back(c);
    // Over a cache of f16 and of q8_0 (the oracle scores the cache's keys at decode).
    if (w.n_keys <= 1200) add_kv_type_twins(v, c);
  }
}

void pool1d_cases(std::vector<Case>& v) {
  for (auto [n, rows, kernel, max] : {std::tuple{1000, 4, 5, 0}, std::tuple{1000, 2, 7, 1}, std::tuple{3, 3, 5, 0},
                                      std::tuple{2100, 1, 1, 1}, std::tuple{33000, 2, 31, 1}}) {
    Case c = make(Op::pool1d, "n=" + std::to_string(n) + " rows=" + std::to_string(rows) + " kernel=" +
                                  std::to_string(kernel) + (max ? " max" : " avg"));
    c.dst = f32(2, n, rows);
    c.src[0] = f32(2, n, rows, 1, Fill::positive);
    c.call = [kernel = kernel, max = max](const Slots& s) {
      return OpCall(Pool1dOp{.dst = s.dst, .src = s.src[0], .kernel = kernel, .max = max == 1});
    };
    v.push_back(c);
  }
}

void topk_cases(std::vector<Case>& v) {
  // Long rows as the pruning methods pass them (8k and 32k keys, keep 0.1): several rounds of
  // the GPU kernels' block, and with ties whole warps of equal keys in every radix pass (the
  // first Vulkan kernel failed past ~4k keys on llvmpipe); k past the numbers, so that the
  // threshold falls among the NaNs.
  for (auto [n, rows, k, fill] : {std::tuple{500, 3, 10, Fill::normal}, std::tuple{300, 2, 17, Fill::small_ints},
                                  std::tuple{5, 2, 8, Fill::normal}, std::tuple{8300, 3, 830, Fill::normal},
                                  std::tuple{8300, 3, 830, Fill::small_ints},
                                  std::tuple{33000, 1, 3300, Fill::small_ints}, std::tuple{700, 2, 690, Fill::specials}}) {
    Case c = make(Op::topk, "n=" + std::to_string(n) + " rows=" + std::to_string(rows) + " k=" + std::to_string(k) +
                                (fill == Fill::small_ints ? " ties" : fill == Fill::specials ? " NaN and -0" : ""));
    c.src[0] = f32(2, n, rows, 1, fill);
    c.call = [k = k](const Slots& s) { return OpCall(TopkOp{.scores = s.src[0], .k = k, .out = s.out}); };
    c.results = result_out_i;
    c.n_out_i = rows * k;
    v.push_back(c);
  }
}

void gather_rows_cases(std::vector<Case>& v) {
  {
    Case c = make(Op::gather_rows, "2-D d=100 n_src=20 n_sel=7");
    c.dst = f32(2, 100, 7);
    c.src[0] = f32(2, 100, 20);
    c.ids = iota_ids(7, 3, 1, 20);
    c.call = [](const Slots& s) {
      return OpCall(GatherRowsOp{.dst = s.dst, .src = s.src[0], .ids = s.ids, .n_ids = s.n_ids, .per_head = false});
    };
    v.push_back(c);
  }
  {
    Case c = make(Op::gather_rows, "3-D shared d=64 heads=3 n_sel=4");
    c.dst = f32(3, 64, 3, 4);
    c.src[0] = f32(3, 64, 3, 10);
    c.ids = {9, 0, 4, 5};
    c.call = [](const Slots& s) {
      return OpCall(GatherRowsOp{.dst = s.dst, .src = s.src[0], .ids = s.ids, .n_ids = s.n_ids, .per_head = false});
    };
    v.push_back(c);
  }
  {
    Case c = make(Op::gather_rows, "3-D per head d=64 heads=3 n_sel=4");
    c.dst = f32(3, 64, 3, 4);
    c.src[0] = f32(3, 64, 3, 10);
    c.ids = {0, 2, 4, 6, 1, 3, 5, 7, 0, 1, 8, 9};
    c.call = [](const Slots& s) {
      return OpCall(GatherRowsOp{.dst = s.dst, .src = s.src[0], .ids = s.ids, .n_ids = s.n_ids, .per_head = true});
    };
    v.push_back(c);
  }
  // Into a KV cache of f16 or q8_0: f32 rows rounded to it (a pruned prompt's kept rows) or
  // its own rows as bytes (compaction), 3-D shared and per head; head_dim 96 puts q8_0 rows
  // off words.
  for (DType t : {DType::f16, DType::q8_0}) {
    for (auto [from_f32, d, per_head] : {std::tuple{true, 64, false}, std::tuple{true, 96, true},
                                         std::tuple{false, 96, false}, std::tuple{false, 64, true}}) {
      Case c = make(Op::gather_rows, std::string(from_f32 ? "f32" : dtype_name(t)) + " to " + dtype_name(t) +
                                         " 3-D " + (per_head ? "per head" : "shared") + " d=" + std::to_string(d) +
                                         " heads=3 n_sel=4");
      c.kv_type = t;
      c.dst = kv(t, d, 3, 4);
      c.src[0] = kv(from_f32 ? DType::f32 : t, d, 3, 10);
      c.ids = per_head ? std::vector<int32_t>{0, 2, 4, 6, 1, 3, 5, 7, 0, 1, 8, 9} : std::vector<int32_t>{9, 0, 4, 5};
      c.call = [per_head = per_head](const Slots& s) {
        return OpCall(GatherRowsOp{.dst = s.dst, .src = s.src[0], .ids = s.ids, .n_ids = s.n_ids, .per_head = per_head});
      };
      v.push_back(c);
    }
  }
}

void block_scores_cases(std::vector<Case>& v) {
  struct B {
    int hd, heads, kv_heads, n, n_keys, block, unit, n_last;
    bool ids;
  };
  for (const B& b : {B{64, 4, 2, 6, 200, 64, 16, 4, false}, B{32, 6, 3, 3, 77, 32, 8, 0, false},
                     B{64, 4, 1, 2, 50, 16, 16, 1, true}, B{64, 14, 2, 16, 33000, 64, 16, 16, false}}) {
    Case c = make(Op::block_scores, "hd=" + std::to_string(b.hd) + " heads=" + std::to_string(b.heads) + "/" +
                                        std::to_string(b.kv_heads) + " keys=" + std::to_string(b.n_keys) + " block=" +
                                        std::to_string(b.block) + " unit=" + std::to_string(b.unit) +
                                        (b.ids ? " ids" : ""));
    const int n_keys = b.ids ? 40 : b.n_keys;
    c.dst = f32(1, (n_keys + b.block - 1) / b.block);
    c.src[0] = f32(3, b.hd, b.heads, b.n);
    c.src[1] = f32(3, b.hd, b.kv_heads, b.n_keys);
    c.call = [b](const Slots& s) {
      return OpCall(BlockScoresOp{.dst = s.dst, .q = s.src[0], .k = s.src[1], .block = b.block, .unit = b.unit,
                                  .query_rows = b.n_last, .key_ids = s.ids, .n_keys = s.ids ? s.n_ids : 0});
    };
    if (b.ids) c.ids = iota_ids(40, 1, 5, b.n_keys);
    v.push_back(c);
    // The same over a cache of f16 and of q8_0 (SlimInfer's decode-time scores read it).
    add_kv_type_twins(v, c);
  }
}

// Quest's bounds (f16, rounded outward): blocks of 16 (the default), a short last block, one
// row per block, and a block longer than the keys; over f32, f16 and q8_0 caches (the keys
// are src[1]).
void key_bounds_cases(std::vector<Case>& v) {
  for (auto [hd, kv_heads, n, block] : {std::tuple{64, 3, 100, 16}, std::tuple{128, 2, 37, 16},
                                         std::tuple{32, 1, 9, 1}, std::tuple{64, 2, 5, 64}}) {
    Case c = make(Op::key_bounds, "hd=" + std::to_string(hd) + " kv_heads=" + std::to_string(kv_heads) +
                                      " n=" + std::to_string(n) + " block=" + std::to_string(block));
    c.dst = kv(DType::f16, 2 * hd, kv_heads, (n + block - 1) / block);  // rounded outward: exact too
    c.src[1] = f32(3, hd, kv_heads, n);
    c.call = [block = block](const Slots& s) {
      return OpCall(KeyBoundsOp{.dst = s.dst, .k = s.src[1], .block = block});
    };
    v.push_back(c);
    add_kv_type_twins(v, c);
  }
  // The rounding's edges on every backend: keys around 1e-5 (bounds of zero or 2^-14, never
  // an f16 subnormal; in an f16 cache the keys themselves are subnormal), keys around 4e4
  // (bounds saturated at 65504), and an odd head size (the word holding the last min and
  // the first max, on backends that write the halves in pairs).
  for (auto [hd, scale, f16_too] : {std::tuple{64, 1e-5f, true}, std::tuple{64, 4e4f, false},
                                     std::tuple{33, 1.0f, true}}) {
    const int64_t kv_heads = 2, n = 40;
    const int32_t block = 4;
    Case c = make(Op::key_bounds, "hd=" + std::to_string(hd) + " kv_heads=2 n=40 block=4 keys scaled " +
                                      std::to_string(scale));
    c.dst = kv(DType::f16, 2 * hd, kv_heads, (n + block - 1) / block);
    c.src[1] = f32(3, hd, kv_heads, n, Fill::normal, scale);
    c.call = [block](const Slots& s) { return OpCall(KeyBoundsOp{.dst = s.dst, .k = s.src[1], .block = block}); };
    v.push_back(c);
    if (f16_too) {
      Case h = c;
      h.label = "kv f16 " + c.label;
      h.kv_type = DType::f16;
      h.src[1].type = DType::f16;
      v.push_back(h);
    }
  }
  // Key rows by ids, out of order (a pager's host tier, whose slots are not the rows' order):
  // 37 of 100 rows in blocks of 4 (a short last block), over every cache type.
  {
    Case c = make(Op::key_bounds, "hd=64 kv_heads=3 n=37 of 100 block=4 ids");
    c.dst = kv(DType::f16, 2 * 64, 3, 10);
    c.src[1] = f32(3, 64, 3, 100);
    c.ids = iota_ids(37, 11, 7, 100);  // 7, 18, 29, ... mod 100: no order, no repeat
    c.call = [](const Slots& s) {
      return OpCall(KeyBoundsOp{.dst = s.dst, .k = s.src[1], .block = 4, .key_ids = s.ids, .n_keys = s.n_ids});
    };
    v.push_back(c);
    add_kv_type_twins(v, c);
  }
  // NaN keys (a tenth of them, -0 too), also as a block's first row: every backend skips
  // them as the CPU does (its min and max start from +-infinity), never bounding a block by NaN.
  Case c = make(Op::key_bounds, "hd=64 kv_heads=2 n=40 block=4 keys with NaN");
  c.dst = kv(DType::f16, 2 * 64, 2, 10);
  c.src[1] = f32(3, 64, 2, 40, Fill::specials);
  c.call = [](const Slots& s) { return OpCall(KeyBoundsOp{.dst = s.dst, .k = s.src[1], .block = 4}); };
  v.push_back(c);
}

// Bounds of random values (lo > hi in places: the op needs no order), GQA groups of 1-7,
// one query row and the last of several.
void bound_scores_cases(std::vector<Case>& v) {
  for (auto [hd, heads, kv_heads, rows, blocks] : {std::tuple{64, 9, 3, 1, 64}, std::tuple{64, 14, 2, 1, 512},
                                                    std::tuple{128, 4, 4, 3, 7}, std::tuple{32, 2, 1, 1, 1}}) {
    Case c = make(Op::bound_scores, "hd=" + std::to_string(hd) + " heads=" + std::to_string(heads) + "/" +
                                        std::to_string(kv_heads) + " rows=" + std::to_string(rows) +
                                        " blocks=" + std::to_string(blocks));
    c.dst = f32(1, blocks);
    c.src[0] = f32(3, hd, heads, rows);
    c.src[1] = kv(DType::f16, 2 * hd, kv_heads, blocks + 2);  // f16 bounds, two rows more than scored
    c.call = [](const Slots& s) {
      return OpCall(BoundScoresOp{.dst = s.dst, .q = s.src[0], .bounds = s.src[1], .scale = 0.125f});
    };
    v.push_back(c);
  }
}

void kv_similarity_cases(std::vector<Case>& v) {
  for (auto [hd, kv_heads, n, zero_anchor] : {std::tuple{64, 2, 9, true}, std::tuple{128, 3, 1, false},
                                               std::tuple{48, 1, 20, false}}) {
    Case c = make(Op::kv_similarity, "hd=" + std::to_string(hd) + " kv_heads=" + std::to_string(kv_heads) + " n=" +
                                         std::to_string(n) + (zero_anchor ? " fresh anchors" : ""));
    c.dst = f32(3, 2, kv_heads, n);
    c.src[0] = f32(3, hd, kv_heads, n);
    c.src[1] = f32(3, hd, kv_heads, n);
    c.src[2] = f32(3, hd, kv_heads, 2, zero_anchor ? Fill::zeros : Fill::normal);
    c.call = [](const Slots& s) {
      return OpCall(KvSimilarityOp{.dst = s.dst, .k = s.src[0], .v = s.src[1], .anchors = s.src[2], .decay = 0.9f});
    };
    c.results = result_dst | result_src2;
    v.push_back(c);
  }
}

void argmax_cases(std::vector<Case>& v) {
  for (auto [n, fill] : {std::tuple{1000, Fill::normal}, std::tuple{7, Fill::normal}, std::tuple{4099, Fill::small_ints},
                         std::tuple{151936, Fill::normal}}) {
    Case c = make(Op::argmax, "n=" + std::to_string(n) + (fill == Fill::small_ints ? " ties" : ""));
    c.src[0] = f32(2, n, 1, 1, fill);
    c.call = [](const Slots& s) { return OpCall(ArgmaxOp{.x = s.src[0], .out = s.out}); };
    c.results = result_out_i;
    c.n_out_i = 1;
    v.push_back(c);
  }
}

}  // namespace

const Tolerance* tolerance(Op op) {
  for (const Tolerance& t : kTolerances)
    if (t.op == op) return &t;
  return nullptr;
}

bool on_tensor_cores(const Case& c, const std::string& backend) { return backend == "cuda" && c.tensor_cores; }

std::pair<double, double> limits(const Tolerance& t, const Case& c, const std::string& backend) {
  if (on_tensor_cores(c, backend)) return {t.tc_nmse, t.tc_max_abs};
  return {t.nmse, t.max_abs};
}

std::vector<Case> cases(Op op) {
  std::vector<Case> v;
  switch (op) {
    case Op::embed: embed_cases(v); break;
    case Op::rmsnorm: rmsnorm_cases(v); break;
    case Op::matmul: matmul_cases(v); break;
    case Op::add: add_cases(v); break;
    case Op::rope: rope_cases(v); break;
    case Op::attention_prefill: attention_cases(v, op); break;
    case Op::attention_decode: attention_cases(v, op); break;
    case Op::swiglu: swiglu_cases(v); break;
    case Op::copy_rows:
      copy_rows_cases(v);
      copy_rows_pair_cases(v);
      break;
    case Op::window_scores: window_scores_cases(v); break;
    case Op::pool1d: pool1d_cases(v); break;
    case Op::topk: topk_cases(v); break;
    case Op::gather_rows: gather_rows_cases(v); break;
    case Op::block_scores: block_scores_cases(v); break;
    case Op::kv_similarity: kv_similarity_cases(v); break;
    case Op::argmax: argmax_cases(v); break;
    case Op::key_bounds: key_bounds_cases(v); break;
    case Op::bound_scores: bound_scores_cases(v); break;
    case Op::count: break;
  }
  for (Case& c : v) {  // x is src[0] in both: [k, rows] and [hd, heads, positions]
    if (c.f32_inputs) continue;
    if (op == Op::matmul) c.tensor_cores = cuda::matmul_on_tensor_cores(c.src[0].ne[1]);
    if (op == Op::attention_prefill)
      c.tensor_cores = cuda::prefill_on_tensor_cores(cuda::kMmaMinComputeMajor, c.src[0].ne[0], c.src[0].ne[2]);
  }
  return v;
}

}  // namespace wt::parity
