// Typed launches of the ops of kernels/ops.def on a backend, and the tensor views the
// forward loop slices from the arena. Header-only: each call fills an OpCall on the stack.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "backends/backend.h"
#include "runtime/model/model.h"
#include "runtime/prune/policy.h"

namespace wt {


// [ne0 * ne1, ne2] view of a 3-D tensor (heads flattened into the row).
inline Tensor flatten_heads(Tensor t) {
  const int64_t ne[2] = {t.ne[0] * t.ne[1], t.ne[2]};
  return make_tensor(t.data, t.type, 2, ne);
}

// What a one-row matmul does in the same launch (MatmulOp's fusions; where the weights are
// split over bindings, bias, rope and glu may follow as ops of their own): the input is x's
// rmsnorm (norm) or silu(gate) * x (gate); accumulate adds the product into dst.
// The products' biases go into the same call; rope (rope.x set) rotates the first two
// products (Q and K) after them; glu leaves silu(first) * second in the first (gate, up).
struct MatmulFusion {
  Tensor norm{};
  float eps = 0;
  Tensor gate{};
  bool accumulate = false;
  RopeOp rope{};
  bool glu = false;
};

// RopeOp for x [rows, heads, head_dim] and x2 (a layer's queries and keys) at positions, as
// the model's hparams say; angles (optional, [rows][n_rot]): RopeOp::angles, rope_angles()'s
// for those positions.
inline RopeOp rope_op(const Tensor& x, const Tensor& x2, const int32_t* positions, const Hparams& hp,
                      const float* divisors, const float* angles = nullptr) {
  RopeOp r{.x = x,
           .x2 = x2,
           .positions = positions,
           .n_rot = hp.n_rot,
           .neox = hp.rope_type == RopeType::neox,
           .theta_base = hp.rope_theta,
           .position_scale = hp.rope_scaling == RopeScaling::linear ? 1.0f / hp.rope_factor : 1.0f,
           .mscale = hp.rope_attn_factor};
  if (divisors) r.freq_divisors = make_tensor_2d(const_cast<float*>(divisors), DType::f32, hp.n_rot / 2, 1);
  if (angles) r.angles = make_tensor_2d(const_cast<float*>(angles), DType::f32, hp.n_rot, x.ne[2]);
  return r;
}

// The engine's side of the ops: each call builds an op's argument struct (kernels/ops.h) on
// the stack and launches it. Where a call adds something — a bias after a matmul, rope from
// the model's hparams, the decode or prefill attention kernel, a policy's score request — it
// is here; Backend::launch validates every call the same way.
class OpRunner {
 public:
  OpRunner(Backend& b, bool f32_activations) : b_(b), f32_activations_(f32_activations) {}

  Status launch(const OpCall& call) { return b_.launch(call); }

  Status embed(const Tensor& dst, const Tensor& table, const int32_t* ids, float scale = 1.0f) {
    return b_.launch(EmbedOp{.dst = dst, .table = table, .ids = ids, .scale = scale});
  }
  // residual non-empty: x += residual first (RmsnormOp), dst may be the residual.
  Status rmsnorm(const Tensor& dst, const Tensor& x, const Tensor& w, float eps, const Tensor& residual = Tensor{}) {
    return b_.launch(RmsnormOp{.dst = dst, .x = x, .weight = w, .eps = eps, .residual = residual});
  }
  // Whether the backend fuses one-row matmuls over rows of length k.
  bool fuses(int64_t k) const { return b_.caps().fused_matmul_k >= k; }
  // Whether rope should join them (BackendCaps::fuse_rope).
  bool fuses_rope() const { return b_.caps().fuse_rope; }
  // Whether swiglu should join the gate and up matmul (BackendCaps::fuse_glu).
  bool fuses_glu() const { return b_.caps().fuse_glu; }
  // dst = x . w^T (+ bias when given)
  Status linear(const Tensor& dst, const Tensor& x, const Tensor& w, const Tensor& bias, const MatmulFusion& f = {}) {
    return linears(1, &dst, x, &w, &bias, f);
  }
  // dst[i] = x . w[i]^T (+ bias[i] when given) for i < n (1..3), as one matmul call (a GPU
  // backend runs same-typed products in one launch): Q, K and V; gate and up. Weights larger
  // than one binding make it several launches (linears_split).
  Status linears(int n, const Tensor* dst, const Tensor& x, const Tensor* w, const Tensor* bias, const MatmulFusion& f = {}) {
    const size_t limit = b_.caps().max_binding_bytes;  // 0 = no limit
    for (int i = 0; i < n && limit > 0; ++i)
      if (w[i].nb[1] * static_cast<size_t>(w[i].ne[1]) + kBindingSlackBytes > limit)
        return linears_split(n, dst, x, w, bias, f, limit);
    MatmulOp m{.dst = dst[0], .x = x, .w = w[0], .f32_activations = f32_activations_,
               .norm = f.norm, .norm_eps = f.eps, .gate = f.gate, .accumulate = f.accumulate, .rope = f.rope,
               .glu = f.glu};
    if (n > 1) {
      m.dst2 = dst[1];
      m.w2 = w[1];
    }
    if (n > 2) {
      m.dst3 = dst[2];
      m.w3 = w[2];
    }
    const bool fused = matmul_fused(m);  // then the biases are fused too
    if (fused) {
      m.bias = bias[0];
      if (n > 1) m.bias2 = bias[1];
      if (n > 2) m.bias3 = bias[2];
    }
    WT_TRY(b_.launch(m));
    for (int i = 0; i < n && !fused; ++i)
      if (!bias[i].empty()) WT_TRY(add(dst[i], dst[i], bias[i]));
    return Status::ok();
  }
  Status add(const Tensor& dst, const Tensor& a, const Tensor& b) {
    return b_.launch(AddOp{.dst = dst, .a = a, .b = b});
  }
  // x [rows, heads, head_dim] and x2 [rows, heads2, head_dim] (a layer's queries and keys)
  // rotated at positions[0..rows) as the model's hparams say, in one launch.
  Status rope(const Tensor& x, const Tensor& x2, const int32_t* positions, const Hparams& hp, const float* divisors,
              const float* angles = nullptr) {
    return b_.launch(rope_op(x, x2, positions, hp, divisors, angles));
  }
  Status copy_rows(const Tensor& dst, const Tensor& src, int32_t row0) {
    return b_.launch(CopyRowsOp{.dst = dst, .src = src, .row0 = row0});
  }
  // Two copies at the same row0 in one launch (a layer's keys and values into its cache).
  Status copy_rows(const Tensor& dst, const Tensor& src, const Tensor& dst2, const Tensor& src2, int32_t row0) {
    return b_.launch(CopyRowsOp{.dst = dst, .src = src, .row0 = row0, .dst2 = dst2, .src2 = src2});
  }
  // Causal attention of q's rows, at positions pos0.., over k and v: a row that attends
  // alone runs the decode kernel (over key_rows when given), every other call the prefill
  // kernel (skipping the rows skip_rows flags).
  struct Attention {
    Tensor dst, q, k, v;                 // dst, q [rows, n_head, hd]; k, v [keys, n_head_kv, hd]
    int32_t pos0 = 0;
    float scale = 1.0f;
    const int32_t* skip_rows = nullptr;  // [rows] or null
    const int32_t* key_rows = nullptr;   // one row: the key rows it attends, or null (0..pos0)
    int32_t n_key_rows = 0;
    int32_t window = 0;                  // > 0: each row's last `window` keys only (no key_rows)
  };
  Status attention(const Attention& a) {
    const bool one_row = a.q.ne[2] == 1;
    const int32_t* skip = one_row && a.skip_rows && a.skip_rows[0] == 0 ? nullptr : a.skip_rows;
    if (one_row && !skip)
      return b_.launch(AttentionDecodeOp{.dst = a.dst, .q = a.q, .k = a.k, .v = a.v, .pos0 = a.pos0,
                                         .scale = a.scale, .key_rows = a.key_rows, .n_key_rows = a.n_key_rows,
                                         .window = a.window});
    return b_.launch(AttentionPrefillOp{.dst = a.dst, .q = a.q, .k = a.k, .v = a.v, .pos0 = a.pos0,
                                        .scale = a.scale, .skip_rows = skip, .f32_inputs = f32_activations_,
                                        .window = a.window});
  }
  // gelu: gelu(gate) * up (Gemma 3) instead of silu(gate) * up.
  Status swiglu(const Tensor& dst, const Tensor& gate, const Tensor& up, bool gelu = false) {
    return b_.launch(SwigluOp{.dst = dst, .gate = gate, .up = up, .gelu = gelu});
  }
  // dst rows = src rows ids (per_head: ids[h * n_sel + r] per head h).
  Status gather_rows(const Tensor& dst, const Tensor& src, const int32_t* ids, int32_t n_ids, bool per_head) {
    return b_.launch(GatherRowsOp{.dst = dst, .src = src, .ids = ids, .n_ids = n_ids, .per_head = per_head});
  }
  // A policy's window request over keys that n_keys rows are visible of.
  Status window_scores(const Tensor& dst, const Tensor& q, const Tensor& k, const ScoreRequest& r, int32_t n_keys,
                       float scale) {
    return b_.launch(WindowScoresOp{.dst = dst, .q = q, .k = k, .window = r.window, .softmax = r.softmax,
                                    .per_query = r.per_query, .n_visible = n_keys, .scale = scale});
  }
  Status pool1d(const Tensor& dst, const Tensor& src, int32_t kernel, bool max) {
    return b_.launch(Pool1dOp{.dst = dst, .src = src, .kernel = kernel, .max = max});
  }
  // A policy's block request; key_ids (optional): key row r is row key_ids[r] of k.
  Status block_scores(const Tensor& dst, const Tensor& q, const Tensor& k, const ScoreRequest& r,
                      const int32_t* key_ids = nullptr, int32_t n_keys = 0) {
    return b_.launch(BlockScoresOp{.dst = dst, .q = q, .k = k, .block = r.block, .unit = r.unit,
                                   .query_rows = r.query_rows, .key_ids = key_ids, .n_keys = key_ids ? n_keys : 0});
  }
  Status kv_similarity(const Tensor& dst, const Tensor& k, const Tensor& v, const Tensor& anchors, float decay) {
    return b_.launch(KvSimilarityOp{.dst = dst, .k = k, .v = v, .anchors = anchors, .decay = decay});
  }
  // key_ids (optional): key row r is row key_ids[r] of k, for r < n_keys.
  Status key_bounds(const Tensor& dst, const Tensor& k, int32_t block, const int32_t* key_ids = nullptr,
                    int32_t n_keys = 0) {
    return b_.launch(KeyBoundsOp{.dst = dst, .k = k, .block = block, .key_ids = key_ids, .n_keys = key_ids ? n_keys : 0});
  }
  Status bound_scores(const Tensor& dst, const Tensor& q, const Tensor& bounds, float scale) {
    return b_.launch(BoundScoresOp{.dst = dst, .q = q, .bounds = bounds, .scale = scale});
  }
  Status argmax(const Tensor& x, int32_t* out) { return b_.launch(ArgmaxOp{.x = x, .out = out}); }

 private:
  // linears() where some weights are larger than one binding reaches (ARCHITECTURE.md:
  // large tensors are split): each product in launches over row ranges of its weights, each
  // writing its columns of dst (a view with dst's row stride), with the call's input fusions
  // and its bias's columns; then the bias (unfused calls), rope and swiglu the call asked
  // for, as ops of their own. Every output element is the same dot product as unsplit.
  Status linears_split(int n, const Tensor* dst, const Tensor& x, const Tensor* w, const Tensor* bias,
                       const MatmulFusion& f, size_t limit) {
    const bool fused = !f.norm.empty() || !f.gate.empty() || f.accumulate;  // kept in each launch
    for (int i = 0; i < n; ++i) {
      const int64_t n_out = w[i].ne[1];
      const size_t row_bytes = w[i].nb[1];
      const int64_t step = rows_per_binding(limit, row_bytes);
      if (step < 1)
        return error(WT_ERR_UNSUPPORTED, "matmul: a weight row of " + std::to_string(row_bytes) +
                                             " bytes is more than one binding reaches (" + std::to_string(limit) + ")");
      for (int64_t r0 = 0; r0 < n_out; r0 += step) {
        const int64_t rows = std::min(step, n_out - r0);
        MatmulOp m{.dst = columns(dst[i], r0, rows), .x = x, .w = rows_view(w[i], r0, rows),
                   .f32_activations = f32_activations_, .norm = f.norm, .norm_eps = f.eps, .gate = f.gate,
                   .accumulate = f.accumulate};
        if (fused && !bias[i].empty()) m.bias = columns(bias[i], r0, rows);
        WT_TRY(b_.launch(m));
      }
      if (!fused && !bias[i].empty()) WT_TRY(add(dst[i], dst[i], bias[i]));
    }
    if (!f.rope.x.empty()) WT_TRY(b_.launch(f.rope));
    if (f.glu) WT_TRY(swiglu(dst[0], dst[0], dst[1]));
    return Status::ok();
  }
  // Columns [c, c + n) of every row of an f32 tensor, as a view with its row stride.
  static Tensor columns(Tensor t, int64_t c, int64_t n) {
    t.data = static_cast<char*>(t.data) + static_cast<size_t>(c) * sizeof(float);
    t.ne[0] = n;
    return t;
  }

  Backend& b_;
  bool f32_activations_;
};

// The topk op behind the Selector interface the policies use. Policies often rank scores
// they combined on the host (their own vectors); a device backend can only read its own
// memory, so such scores are first copied into `staging`, a slice of the context's arena.
// Scores already in the arena (the observation buffers), or any scores on a backend that
// reads host pointers (the CPU), are ranked in place.
class BackendSelector final : public Selector {
 public:
  // arena, host_arena: the context arena's two parts (backend memory both).
  BackendSelector(Backend& b, const Buffer& arena, const Buffer& host_arena, float* staging, size_t staging_floats)
      : b_(b), arena_{arena, host_arena}, staging_(staging), staging_floats_(staging_floats) {}
  Status topk(const float* scores, int32_t rows, int32_t n, int32_t k, int32_t* out) override {
    if (k < 0 || k > n) return error(WT_ERR_INTERNAL, "topk of " + std::to_string(k) + " from " + std::to_string(n));
    if (k == 0) return Status::ok();
    const size_t floats = static_cast<size_t>(rows) * static_cast<size_t>(n);
    if (!b_.caps().reads_any_host_pointer && !in_arena(scores, floats)) {
      if (!staging_ || floats > staging_floats_)
        return error(WT_ERR_INTERNAL, "topk over " + std::to_string(floats) + " host scores, the staging holds " +
                                          std::to_string(staging_floats_));
      // The previous topk (a host-result op) has completed, so the staging is free.
      std::memcpy(staging_, scores, sizeof(float) * floats);
      scores = staging_;
    }
    return b_.launch(TopkOp{.scores = make_tensor_2d(const_cast<float*>(scores), DType::f32, n, rows), .k = k, .out = out});
  }

 private:
  bool in_arena(const float* p, size_t floats) const {
    const char* q = reinterpret_cast<const char*>(p);
    for (const Buffer& part : arena_) {  // Buffer::device: the device part may have no host address
      const char* base = static_cast<const char*>(part.device) + part.offset;
      if (part.device && q >= base && q + sizeof(float) * floats <= base + part.size_bytes) return true;
    }
    return false;
  }
  Backend& b_;
  Buffer arena_[2];
  float* staging_;
  size_t staging_floats_;
};

}  // namespace wt
