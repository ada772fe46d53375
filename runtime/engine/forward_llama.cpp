// The forward pass of the llama family (llama, qwen2: qwen2 adds Q/K/V biases and uses
// neox rope; both are data in Hparams/LayerWeights). Reads top to bottom like llama2.c;
// every op runs on the backend over views of the context's arena.
#include <cmath>
#include <string>

#include "context.h"

namespace wt {

namespace {

// The first n rows (outermost dimension) of t.
Tensor first_rows(Tensor t, int64_t n) {
  t.ne[t.n_dims - 1] = n;
  return t;
}

// Row i of t (outermost dimension) as a one-row view.
Tensor row_view(Tensor t, int64_t i) {
  t.data = static_cast<char*>(t.data) + static_cast<size_t>(i) * t.nb[t.n_dims - 1];
  t.ne[t.n_dims - 1] = 1;
  return t;
}

// [ne0 * ne1, ne2] view of a 3-D tensor (heads flattened into the row).
Tensor flatten_heads(Tensor t) {
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
  Status attention(const Tensor& dst, const Tensor& q, const Tensor& k, const Tensor& v, int32_t pos0, float scale) {
    OpCall c = call(q.ne[2] == 1 ? Op::attention_decode : Op::attention_prefill, dst);
    c.src[0] = q;
    c.src[1] = k;
    c.src[2] = v;
    c.i[0] = pos0;
    c.f[0] = scale;
    return b_.launch(c);
  }
  Status swiglu(const Tensor& dst, const Tensor& gate, const Tensor& up) {
    OpCall c = call(Op::swiglu, dst);
    c.src[0] = gate;
    c.src[1] = up;
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

}  // namespace

Status Context::forward(const int32_t* tokens, int32_t n, bool report_progress) {
  const Hparams& hp = model_.hp;
  const int32_t pos0 = n_past_;
  const float attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  OpRunner run(*backend_, options_.f32_activations);

  for (int32_t i = 0; i < n; ++i) {
    positions_[i] = pos0 + i;
    token_ids_[i] = tokens[i];
  }
  const Tensor x = first_rows(act_.x, n);        // [n_embd, n]
  const Tensor xn = first_rows(act_.xn, n);      // [n_embd, n]
  const Tensor q = first_rows(act_.q, n);        // [head_dim, n_head, n]
  const Tensor k = first_rows(act_.k, n);        // [head_dim, n_head_kv, n]
  const Tensor v = first_rows(act_.v, n);        // [head_dim, n_head_kv, n]
  const Tensor attn = first_rows(act_.attn, n);  // [head_dim, n_head, n]
  const Tensor gate = first_rows(act_.gate, n);  // [n_ff, n]
  const Tensor up = first_rows(act_.up, n);      // [n_ff, n]

  WT_TRY(run.embed(x, model_.tok_embd, token_ids_, n));
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& w = model_.layers[static_cast<size_t>(l)];
    // Attention block.
    WT_TRY(run.rmsnorm(xn, x, w.attn_norm, hp.rms_eps));
    WT_TRY(run.linear(flatten_heads(q), xn, w.wq, w.bq));
    WT_TRY(run.linear(flatten_heads(k), xn, w.wk, w.bk));
    WT_TRY(run.linear(flatten_heads(v), xn, w.wv, w.bv));
    WT_TRY(run.rope(q, positions_, n, hp, rope_divisors_));
    WT_TRY(run.rope(k, positions_, n, hp, rope_divisors_));
    const Tensor kc = first_rows(k_cache_[l], pos0 + n);  // [head_dim, n_head_kv, pos0 + n]
    const Tensor vc = first_rows(v_cache_[l], pos0 + n);
    WT_TRY(run.copy_rows(flatten_heads(k_cache_[l]), flatten_heads(k), pos0));
    WT_TRY(run.copy_rows(flatten_heads(v_cache_[l]), flatten_heads(v), pos0));
    WT_TRY(run.attention(attn, q, kc, vc, pos0, attn_scale));
    WT_TRY(run.linear(xn, flatten_heads(attn), w.wo, Tensor{}));
    WT_TRY(run.add(x, x, xn));
    // Feed-forward block.
    WT_TRY(run.rmsnorm(xn, x, w.ffn_norm, hp.rms_eps));
    WT_TRY(run.linear(gate, xn, w.w_gate, Tensor{}));
    WT_TRY(run.linear(up, xn, w.w_up, Tensor{}));
    WT_TRY(run.swiglu(gate, gate, up));
    WT_TRY(run.linear(xn, gate, w.w_down, Tensor{}));
    WT_TRY(run.add(x, x, xn));

    if (report_progress && options_.progress &&
        !options_.progress(static_cast<float>(l + 1) / static_cast<float>(hp.n_layer), options_.progress_user)) {
      return error(WT_ERR_ABORTED, "prefill aborted by the progress callback after layer " + std::to_string(l));
    }
  }

  // Output head: every row when logits_all, otherwise only the last.
  const bool all = options_.logits_all;
  const Tensor out_x = all ? x : row_view(x, n - 1);        // [n_embd, rows]
  const Tensor out_xn = all ? xn : row_view(xn, n - 1);
  const Tensor logits = first_rows(act_.logits, all ? n : 1);  // [n_vocab, rows]
  WT_TRY(run.rmsnorm(out_xn, out_x, model_.output_norm, hp.rms_eps));
  WT_TRY(run.linear(logits, out_xn, model_.output, Tensor{}));
  WT_TRY(backend_->synchronize(Stream::compute));

  n_past_ += n;
  last_rows_ = n;
  return Status::ok();
}

}  // namespace wt
