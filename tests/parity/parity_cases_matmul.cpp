// The matmul parity cases: every weight type the backends read, a call's products in one
// grid, prefill rows, and MatmulOp's one-row fusions as a decode step calls them.
#include <string>
#include <vector>

#include "parity_specs.h"

namespace wt::parity {
namespace {

// dst[n, out] = x[n, k] . W[out, k]^T with f32 activations (the product the device
// kernels compute); the label says the shape, plus why the case exists.
// The reference (the CPU) runs f32 activations; a device runs the engine's default (CUDA: TF32
// tensor cores from 64 rows) unless `f32_inputs`.
Case matmul_case(DType t, int k, int out, int n, const char* why = "", bool f32_inputs = false) {
  Case c = make(Op::matmul, std::string(dtype_name(t)) + " k=" + std::to_string(k) + " out=" + std::to_string(out) +
                                " n=" + std::to_string(n) + (*why ? std::string(" (") + why + ")" : std::string()) +
                                (f32_inputs ? " f32" : ""));
  c.dst = f32(2, out, n);
  c.src[0] = f32(2, k, n);
  c.src[1] = typed(t, k, out, 0.1f);
  c.f32_inputs = f32_inputs;
  c.call = [f32_inputs](const Slots& s) {
    return OpCall(MatmulOp{.dst = s.dst, .x = s.src[0], .w = s.src[1], .f32_activations = s.reference || f32_inputs});
  };
  return c;
}

// MatmulOp's one-row fusions as a decode step calls them: the norm inside Q, K, V (two or
// three products of one input) and inside gate and up, silu(gate) * up into the down
// projection, the output projections adding into the residual stream (dst's random start).
// src[2] is the norm's weights or the gate; the reference is the CPU's own fused call.
void fused_matmul_cases(std::vector<Case>& v) {
  enum Kind { norm, gate, add_into, mixed_add_into, norm_glu, mixed_glu };
  struct F {
    DType t;
    int k, o1, o2, o3;
    Kind kind;
    bool accumulate;
    const char* why;
  };
  for (const F& f : {F{DType::q4_1, 576, 576, 192, 192, norm, false, "Q, K, V of the default model"},
                     F{DType::q4_1, 576, 1536, 1536, 0, norm, false, "gate and up"},
                     F{DType::q4_1, 1536, 576, 0, 0, gate, true, "down projection into the residual"},
                     F{DType::q4_1, 576, 576, 0, 0, add_into, true, "output projection into the residual"},
                     F{DType::q4_k, 1536, 256, 512, 0, norm, false, "K-quant, Qwen2.5-1.5B width"},
                     F{DType::q6_k, 8960, 40, 0, 0, gate, true, "Qwen2.5-1.5B's n_ff"},
                     F{DType::q8_0, 896, 70, 0, 0, norm, true, "norm and accumulate, odd outputs"},
                     F{DType::f32, 100, 33, 0, 0, gate, false, "k % 8 != 0"},
                     F{DType::q4_0, 12288, 16, 0, 0, gate, true, "a row past 48 KiB of shared memory"},
                     F{DType::q4_k, 256, 40, 24, 0, mixed_add_into, true, "mixed K-quants, one launch each"},
                     F{DType::f16, 256, 48, 16, 0, norm, true, "f16, k % 8 == 0"},
                     // From 8192 columns CUDA gives each warp several (matmul.cu's fused_row_cols):
                     // products whose last warp holds fewer; with and without the norm.
                     F{DType::q8_0, 576, 8195, 0, 0, norm, false, "an output head: columns per warp"},
                     F{DType::q4_1, 576, 4098, 4097, 3, add_into, true, "several columns per warp and three products"},
                     // MatmulOp::glu: silu(gate) * up left in the gate's product (backends with
                     // fuse_glu: CUDA's warp per column of both; Vulkan: swiglu after).
                     F{DType::q4_1, 576, 1536, 1536, 0, norm_glu, false, "gate and up into swiglu"},
                     F{DType::q8_0, 896, 70, 70, 0, norm_glu, false, "glu with odd widths"},
                     F{DType::q4_k, 256, 40, 40, 0, mixed_glu, false, "glu over mixed K-quants"}}) {
    const int outs = f.o1 + f.o2 + f.o3;
    const bool glu = f.kind == norm_glu || f.kind == mixed_glu;
    const bool mixed = f.kind == mixed_add_into || f.kind == mixed_glu;
    const char* kind = f.kind == norm ? "norm" : f.kind == gate ? "gate" : glu ? "glu" : "accumulate";
    Case c = make(Op::matmul, std::string("fused ") + kind + " " + dtype_name(f.t) + " k=" + std::to_string(f.k) +
                                  " out=" + std::to_string(f.o1) + "+" + std::to_string(f.o2) + "+" +
                                  std::to_string(f.o3) + " n=1 (" + f.why + ")");
    c.fused_k = f.k;
    c.dst = f32(2, outs, 1);
    c.src[0] = f32(2, f.k, 1, 1, Fill::normal, f.kind == norm ? 3.0f : 1.0f);
    c.src[1] = typed(f.t, f.k, mixed ? f.o1 : outs, 0.1f);
    if (f.kind == norm || f.kind == gate || f.kind == norm_glu) c.src[2] = f32(2, f.k, 1);
    if (mixed) c.src[2] = typed(DType::q6_k, f.k, f.o2, 0.1f);
    c.call = [f, glu, mixed](const Slots& s) {
      MatmulOp op{.dst = cols(s.dst, 0, f.o1), .x = s.src[0], .w = rows(s.src[1], 0, f.o1),
                  .f32_activations = s.reference, .accumulate = f.accumulate, .glu = glu};
      if (f.kind == norm || f.kind == norm_glu) {
        op.norm = s.src[2];
        op.norm_eps = 1e-5f;
      }
      if (f.kind == gate) op.gate = s.src[2];
      if (f.o2 > 0) {
        op.dst2 = cols(s.dst, f.o1, f.o2);
        op.w2 = mixed ? s.src[2] : rows(s.src[1], f.o1, f.o2);
      }
      if (f.o3 > 0) {
        op.dst3 = cols(s.dst, f.o1 + f.o2, f.o3);
        op.w3 = rows(s.src[1], f.o1 + f.o2, f.o3);
      }
      return OpCall(op);
    };
    v.push_back(c);
  }
}

// Q, K and V of a decode step with everything fused as the engine calls it: the norm, the
// biases (Qwen2), rope on Q and K (positions from the case's ids). src[2] holds the norm's
// weights, then the biases, then rope's divisors, one row. The mixed-type case (one launch
// per product on CUDA) has no norm or biases: its src[2] is the K and V weights.
void fused_qkv_rope_cases(std::vector<Case>& v) {
  struct R {
    DType t1, t2;
    int k, hd, heads, kv_heads, n_rot;
    bool neox, bias, divisors;
    int32_t pos;
    const char* why;
    bool angles = false;  // RopeOp::angles given (random: they are used as given), after the divisors
    float mscale = 1.0f;  // RopeOp::mscale (LongRoPE's factor on cos and sin)
  };
  for (const R& r : {R{DType::q4_1, DType::q4_1, 576, 64, 9, 3, 64, false, false, false, 37, "the default model"},
                     R{DType::q8_0, DType::q8_0, 896, 64, 14, 2, 64, true, true, false, 1000, "Qwen2.5-0.5B"},
                     R{DType::q4_0, DType::q4_0, 256, 64, 4, 2, 32, true, false, true, 5, "n_rot 32, divisors"},
                     R{DType::f16, DType::f16, 128, 32, 4, 4, 16, false, true, true, 8190, "n_rot 16, pairs (2i, 2i+1)"},
                     R{DType::q4_k, DType::q6_k, 1536, 128, 12, 2, 128, true, false, false, 31000,
                       "Qwen2.5-1.5B heads, mixed K-quants"},
                     R{DType::q4_1, DType::q4_1, 576, 64, 9, 3, 64, false, false, false, 37, "angles given", true},
                     R{DType::q8_0, DType::q8_0, 896, 64, 14, 2, 32, true, true, true, 1000,
                       "angles given with divisors and n_rot 32", true},
                     R{DType::q4_k, DType::q4_k, 256, 64, 4, 2, 48, true, false, true, 3000,
                       "Phi-4-mini's rope: 48 of 64 dims, divisors, mscale", false, 1.19f}}) {
    const int oq = r.hd * r.heads, okv = r.hd * r.kv_heads;
    const bool mixed = r.t1 != r.t2;
    Case c = make(Op::matmul, std::string("fused norm, bias, rope ") + dtype_name(r.t1) + "+" + dtype_name(r.t2) +
                                  " k=" + std::to_string(r.k) + " heads=" + std::to_string(r.heads) + "+" +
                                  std::to_string(r.kv_heads) + " hd=" + std::to_string(r.hd) + " n_rot=" +
                                  std::to_string(r.n_rot) + (r.neox ? " neox" : "") + " n=1 (" + r.why + ")");
    c.fused_k = r.k;
    c.dst = f32(2, oq + 2 * okv, 1);
    c.src[0] = f32(2, r.k, 1, 1, Fill::normal, 3.0f);
    c.src[1] = typed(r.t1, r.k, mixed ? oq : oq + 2 * okv, 0.1f);
    c.src[2] = mixed ? typed(r.t2, r.k, 2 * okv, 0.1f)
                     : f32(2, r.k + oq + 2 * okv + r.n_rot / 2 + r.n_rot, 1, 1, Fill::positive);
    c.ids = {r.pos};
    c.call = [r, oq, okv, mixed](const Slots& s) {
      auto heads = [&](const Tensor& out, int n_heads) {
        const int64_t ne[3] = {r.hd, n_heads, 1};
        return make_tensor(out.data, DType::f32, 3, ne);
      };
      MatmulOp op{.dst = cols(s.dst, 0, oq), .x = s.src[0], .w = rows(s.src[1], 0, oq), .f32_activations = s.reference};
      op.dst2 = cols(s.dst, oq, okv);
      op.dst3 = cols(s.dst, oq + okv, okv);
      op.w2 = mixed ? rows(s.src[2], 0, okv) : rows(s.src[1], oq, okv);
      op.w3 = mixed ? rows(s.src[2], okv, okv) : rows(s.src[1], oq + okv, okv);
      if (!mixed) {
        op.norm = cols(s.src[2], 0, r.k);
        op.norm_eps = 1e-6f;
      }
      if (r.bias) {
        op.bias = cols(s.src[2], r.k, oq);
        op.bias2 = cols(s.src[2], r.k + oq, okv);
        op.bias3 = cols(s.src[2], r.k + oq + okv, okv);
      }
      op.rope = RopeOp{.x = heads(op.dst, r.heads), .x2 = heads(op.dst2, r.kv_heads), .positions = s.ids,
                       .n_rot = r.n_rot, .neox = r.neox, .theta_base = r.neox ? 1e6f : 10000.0f,
                       .mscale = r.mscale};
      if (r.divisors) op.rope.freq_divisors = cols(s.src[2], r.k + oq + 2 * okv, r.n_rot / 2);
      if (r.angles) op.rope.angles = cols(s.src[2], r.k + oq + 2 * okv + r.n_rot / 2, r.n_rot);
      return OpCall(op);
    };
    v.push_back(c);
  }
}

}  // namespace

void matmul_cases(std::vector<Case>& v) {
  for (DType t : {DType::f32, DType::f16, DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1})
    for (auto [k, out, n] : {std::tuple{256, 67, 1}, std::tuple{96, 130, 5}, std::tuple{512, 33, 9}})
      v.push_back(matmul_case(t, k, out, n));
  // k not a multiple of 8: the subgroup kernel's 8-weight units do not apply (fallback).
  for (DType t : {DType::f32, DType::f16}) v.push_back(matmul_case(t, 100, 40, 6, "k % 8 != 0"));
  // Prefill-sized row counts: backends switch paths on many rows (CUDA: cuBLAS on
  // dequantized weight tiles from 64 rows).
  for (DType t : {DType::f32, DType::q4_1, DType::q5_0, DType::q5_1})
    v.push_back(matmul_case(t, 128, 40, 70, "prefill rows"));
  // Vulkan's tiled kernel (matmul_tiled.comp, 32 rows or more on the GPU kernels): tiles of
  // 64 x 64 cut ragged in both directions (67 rows, 130 outputs), k steps of 16 past k's end
  // (k 100), the types the cases above leave to fewer rows.
  for (DType t : {DType::f16, DType::q8_0, DType::q4_0})
    v.push_back(matmul_case(t, 96, 130, 67, "prefill rows, ragged tiles"));
  for (DType t : {DType::f32, DType::f16}) v.push_back(matmul_case(t, 100, 40, 40, "k % 16 != 0, prefill rows"));
  // The same rows asking for f32 (WT_MATMUL_F32): CUDA's cuBLAS path without TF32.
  for (DType t : {DType::f32, DType::q4_1}) v.push_back(matmul_case(t, 128, 40, 70, "prefill rows", true));
  // Qwen2.5-0.5B's width (896 = 28 blocks, not a multiple of 256; Q5_0 rows of 616 bytes,
  // whose blocks alternate between word and half-word offsets): decode and prefill.
  for (DType t : {DType::q5_0, DType::q5_1}) {
    v.push_back(matmul_case(t, 896, 72, 1, "Qwen2.5-0.5B width, decode"));
    v.push_back(matmul_case(t, 896, 72, 66, "Qwen2.5-0.5B width, prefill rows"));
  }
  // BF16 and the K-quants (rows of 256-element super-blocks): decode, a few rows, prefill
  // rows (CUDA: the cuBLAS path's dequantized tiles), Qwen2.5-1.5B's width (1536 = 6 blocks).
  // Backends whose weight_types_of lacks a type skip its cases, visibly (test_parity.cpp).
  for (DType t : {DType::bf16, DType::q4_k, DType::q5_k, DType::q6_k}) {
    v.push_back(matmul_case(t, 256, 67, 1));
    v.push_back(matmul_case(t, 512, 33, 9));
    v.push_back(matmul_case(t, 256, 40, 70, "prefill rows"));
    v.push_back(matmul_case(t, 1536, 24, 1, "Qwen2.5-1.5B width, decode"));
  }
  // Several products of one x (Q, K, V; gate and up): dst holds the products' columns side by
  // side, src[1] the first weights, src[2] the second's and third's rows stacked (one type);
  // "stacked": every product's rows in src[2], one allocation (Vulkan: one dispatch).
  struct Multi {
    DType t1, t23;
    int k, o1, o2, o3, n;
    const char* why;
    bool stacked = false;
    int skip = 0;  // stacked: rows of src[2] before the first product's (a binding that starts past 0)
  };
  for (const Multi& m : {Multi{DType::q4_1, DType::q4_1, 256, 67, 24, 24, 1, "Q, K, V in one grid"},
                         Multi{DType::q4_1, DType::q4_1, 256, 67, 24, 24, 5, "Q, K, V, rows"},
                         Multi{DType::q4_1, DType::q4_1, 128, 40, 16, 16, 70, "Q, K, V, prefill rows"},
                         Multi{DType::q8_0, DType::q8_0, 128, 96, 96, 0, 1, "gate and up"},
                         Multi{DType::q4_0, DType::q8_0, 64, 40, 24, 24, 3, "mixed types"},
                         Multi{DType::q4_k, DType::q6_k, 256, 40, 24, 24, 1, "mixed K-quants"},
                         Multi{DType::q4_1, DType::q4_1, 256, 67, 24, 24, 1, "Q, K, V stacked", true},
                         Multi{DType::q4_1, DType::q4_1, 128, 200, 40, 40, 9, "Q, K, V stacked, rows", true},
                         Multi{DType::q8_0, DType::q8_0, 128, 96, 96, 0, 70, "gate and up stacked, prefill", true},
                         Multi{DType::q6_k, DType::q6_k, 256, 40, 24, 24, 5, "K-quants stacked, rows", true},
                         Multi{DType::q4_1, DType::q4_1, 256, 67, 24, 24, 1, "Q, K, V stacked past other rows", true, 37},
                         Multi{DType::q8_0, DType::q8_0, 128, 96, 96, 0, 1, "gate and up stacked past other rows", true, 5}}) {
    Case c = make(Op::matmul, std::string(dtype_name(m.t1)) + "+" + dtype_name(m.t23) + " k=" + std::to_string(m.k) +
                                  " out=" + std::to_string(m.o1) + "+" + std::to_string(m.o2) + "+" + std::to_string(m.o3) +
                                  " n=" + std::to_string(m.n) + " (" + m.why + ")");
    c.dst = f32(2, m.o1 + m.o2 + m.o3, m.n);
    c.src[0] = f32(2, m.k, m.n);
    c.src[1] = typed(m.t1, m.k, m.o1, 0.1f);
    c.src[2] = typed(m.t23, m.k, m.skip + (m.stacked ? m.o1 : 0) + m.o2 + m.o3, 0.1f);
    c.call = [m](const Slots& s) {
      const int64_t r1 = m.skip + (m.stacked ? m.o1 : 0);  // where w2's rows start in src[2]
      MatmulOp op{.dst = cols(s.dst, 0, m.o1), .x = s.src[0], .w = m.stacked ? rows(s.src[2], m.skip, m.o1) : s.src[1],
                  .f32_activations = s.reference};
      op.dst2 = cols(s.dst, m.o1, m.o2);
      op.w2 = rows(s.src[2], r1, m.o2);
      if (m.o3 > 0) {
        op.dst3 = cols(s.dst, m.o1 + m.o2, m.o3);
        op.w3 = rows(s.src[2], r1 + m.o2, m.o3);
      }
      return OpCall(op);
    };
    v.push_back(c);
  }
  // A vocabulary-sized output: more workgroups than one grid dimension holds (65535).
  v.push_back(matmul_case(DType::q4_0, 64, 70001, 1, "grid spills into y"));
  fused_matmul_cases(v);
  fused_qkv_rope_cases(v);
}

}  // namespace wt::parity
