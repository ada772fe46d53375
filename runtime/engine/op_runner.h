// Typed launches of the ops of kernels/ops.def on a backend, and the tensor views the
// forward loop slices from the arena. Header-only: each call fills an OpCall on the stack.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "backends/backend.h"
#include "runtime/model/model.h"
#include "runtime/prune/policy.h"

namespace wt {

// The first n rows (outermost dimension) of t.
inline Tensor first_rows(Tensor t, int64_t n) {
  t.ne[t.n_dims - 1] = n;
  return t;
}

// Row i of t (outermost dimension) as a one-row view.
inline Tensor row_view(Tensor t, int64_t i) {
  t.data = static_cast<char*>(t.data) + static_cast<size_t>(i) * t.nb[t.n_dims - 1];
  t.ne[t.n_dims - 1] = 1;
  return t;
}

// [ne0 * ne1, ne2] view of a 3-D tensor (heads flattened into the row).
inline Tensor flatten_heads(Tensor t) {
  const int64_t ne[2] = {t.ne[0] * t.ne[1], t.ne[2]};
  return make_tensor(t.data, t.type, 2, ne);
}

class OpRunner {
 public:
  OpRunner(Backend& b, bool f32_activations) : b_(b), f32_activations_(f32_activations) {}

  Status embed(const Tensor& dst, const Tensor& table, const int32_t* ids, int32_t n) {
    OpCall c = call(Op::embed, dst);
    c.src[0] = table;
    c.ids = ids;
    c.n_ids = n;
    return b_.launch(c);
  }
  Status rmsnorm(const Tensor& dst, const Tensor& x, const Tensor& w, float eps) {
    OpCall c = call(Op::rmsnorm, dst);
    c.src[0] = x;
    c.src[1] = w;
    c.f[0] = eps;
    return b_.launch(c);
  }
  // dst = x . w^T (+ bias when given)
  Status linear(const Tensor& dst, const Tensor& x, const Tensor& w, const Tensor& bias) {
    OpCall c = call(Op::matmul, dst);
    c.i[0] = f32_activations_ ? 1 : 0;
    c.src[0] = x;
    c.src[1] = w;
    WT_TRY(b_.launch(c));
    return bias.empty() ? Status::ok() : add(dst, dst, bias);
  }
  Status add(const Tensor& dst, const Tensor& a, const Tensor& b) {
    OpCall c = call(Op::add, dst);
    c.src[0] = a;
    c.src[1] = b;
    return b_.launch(c);
  }
  Status rope(const Tensor& x, const int32_t* positions, int32_t n, const Hparams& hp, const float* divisors) {
    OpCall c = call(Op::rope, x);
    c.src[0] = x;
    if (divisors) c.src[1] = make_tensor_2d(const_cast<float*>(divisors), DType::f32, hp.n_rot / 2, 1);
    c.ids = positions;
    c.n_ids = n;
    c.i[0] = hp.n_rot;
    c.i[1] = hp.rope_type == RopeType::neox ? 1 : 0;
    c.f[0] = hp.rope_theta;
    c.f[1] = hp.rope_scaling == RopeScaling::linear ? 1.0f / hp.rope_factor : 1.0f;
    return b_.launch(c);
  }
  Status copy_rows(const Tensor& dst, const Tensor& src, int32_t row0) {
    OpCall c = call(Op::copy_rows, dst);
    c.src[0] = src;
    c.i[0] = row0;
    return b_.launch(c);
  }
  // Causal attention of q's rows at positions pos0.. against k/v rows 0..pos0 + n. ids: per
  // query row skip flags, or (one row, skip == false) the key rows to attend.
  Status attention(const Tensor& dst, const Tensor& q, const Tensor& k, const Tensor& v, int32_t pos0, float scale,
                   const int32_t* skip, const int32_t* key_rows, int32_t n_key_rows) {
    if (skip && q.ne[2] == 1 && skip[0] == 0) skip = nullptr;  // one row that attends: the decode kernel
    const bool decode = q.ne[2] == 1 && !skip;
    OpCall c = call(decode ? Op::attention_decode : Op::attention_prefill, dst);
    c.src[0] = q;
    c.src[1] = k;
    c.src[2] = v;
    c.i[0] = pos0;
    c.f[0] = scale;
    if (skip) {
      c.ids = skip;
      c.n_ids = static_cast<int32_t>(q.ne[2]);
    } else if (decode && key_rows) {
      c.ids = key_rows;
      c.n_ids = n_key_rows;
    }
    return b_.launch(c);
  }
  Status swiglu(const Tensor& dst, const Tensor& gate, const Tensor& up) {
    OpCall c = call(Op::swiglu, dst);
    c.src[0] = gate;
    c.src[1] = up;
    return b_.launch(c);
  }
  // dst rows = src rows ids (per_head: ids[h * n_sel + r] per head h).
  Status gather_rows(const Tensor& dst, const Tensor& src, const int32_t* ids, int32_t n_ids, bool per_head) {
    OpCall c = call(Op::gather_rows, dst);
    c.src[0] = src;
    c.ids = ids;
    c.n_ids = n_ids;
    c.i[0] = per_head ? 1 : 0;
    return b_.launch(c);
  }
  Status window_scores(const Tensor& dst, const Tensor& q, const Tensor& k, const ScoreRequest& r, int32_t n_keys,
                       float scale) {
    OpCall c = call(Op::window_scores, dst);
    c.src[0] = q;
    c.src[1] = k;
    c.i[0] = r.window;
    c.i[1] = (r.softmax ? 1 : 0) | (r.per_query ? 2 : 0);
    c.i[2] = n_keys;
    c.f[0] = scale;
    return b_.launch(c);
  }
  Status pool1d(const Tensor& dst, const Tensor& src, int32_t kernel, bool max) {
    OpCall c = call(Op::pool1d, dst);
    c.src[0] = src;
    c.i[0] = kernel;
    c.i[1] = max ? 1 : 0;
    return b_.launch(c);
  }
  // key_ids (optional): key row r is row key_ids[r] of k, for n_keys rows.
  Status block_scores(const Tensor& dst, const Tensor& q, const Tensor& k, const ScoreRequest& r,
                      const int32_t* key_ids = nullptr, int32_t n_keys = 0) {
    OpCall c = call(Op::block_scores, dst);
    c.src[0] = q;
    c.src[1] = k;
    c.ids = key_ids;
    c.n_ids = key_ids ? n_keys : 0;
    c.i[0] = r.block;
    c.i[1] = r.unit;
    c.i[2] = r.query_rows;
    return b_.launch(c);
  }
  Status kv_similarity(const Tensor& dst, const Tensor& k, const Tensor& v, const Tensor& anchors, float decay) {
    OpCall c = call(Op::kv_similarity, dst);
    c.src[0] = k;
    c.src[1] = v;
    c.src[2] = anchors;
    c.f[0] = decay;
    return b_.launch(c);
  }
  Status argmax(const Tensor& x, int32_t* out) {
    OpCall c = call(Op::argmax, Tensor{});
    c.src[0] = x;
    c.out_i = out;
    return b_.launch(c);
  }

 private:
  static OpCall call(Op op, const Tensor& dst) {
    OpCall c;
    c.op = op;
    c.dst = dst;
    return c;
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
  BackendSelector(Backend& b, const Buffer& arena, float* staging, size_t staging_floats)
      : b_(b), arena_(arena), staging_(staging), staging_floats_(staging_floats) {}
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
    OpCall c;
    c.op = Op::topk;
    c.src[0] = make_tensor_2d(const_cast<float*>(scores), DType::f32, n, rows);
    c.i[0] = k;
    c.out_i = out;
    return b_.launch(c);
  }

 private:
  bool in_arena(const float* p, size_t floats) const {
    const char* base = static_cast<const char*>(arena_.host) + arena_.offset;
    const char* q = reinterpret_cast<const char*>(p);
    return base && q >= base && q + sizeof(float) * floats <= base + arena_.size_bytes;
  }
  Backend& b_;
  Buffer arena_;
  float* staging_;
  size_t staging_floats_;
};

}  // namespace wt
