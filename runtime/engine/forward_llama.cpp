// The forward pass of the llama family (llama, qwen2, qwen3, smollm3, gemma3: qwen2 adds Q/K/V
// biases and uses neox rope, qwen3 RMS-norms each query and key head before neox rope, smollm3
// leaves every fourth layer without rope, gemma3 adds qwen3's head norms, scales the
// embeddings, RMS-norms each block's output before the residual add, gates with gelu and
// attends through a sliding window in five of every six layers; all of it is data in
// Hparams/LayerWeights). Reads
// top to bottom like llama2.c: every op runs on the backend over views of the context's arena. Where the KV lives (the
// cache or the pager's blocks) and what a pruning policy decides are the helpers of
// forward_kv.cpp, one call each; shapes are written outermost first, [rows, n_head,
// head_dim] (kernels/tensor.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "context.h"
#include "op_runner.h"

namespace wt {
namespace {

// Marks a decode step's launches for the backend (Backend::set_step_replay: the CUDA backend
// replays them as one graph) and ends the mark on every way out of forward, so nothing
// launched after the step is gathered with it.
class StepReplayMark {
 public:
  StepReplayMark(Backend& b, bool decode_step) : b_(decode_step ? &b : nullptr) {}
  StepReplayMark(const StepReplayMark&) = delete;
  StepReplayMark& operator=(const StepReplayMark&) = delete;
  ~StepReplayMark() {
    if (b_) (void)b_->set_step_replay(false);
  }
  Status start() { return b_ ? b_->set_step_replay(true) : Status::ok(); }
  Status end() {
    Backend* b = b_;
    b_ = nullptr;
    return b ? b->set_step_replay(false) : Status::ok();
  }

 private:
  Backend* b_;
};

// A pass's rows as its layers run them: n slices of at most `cap` rows, as even as they come
// (the first rows % n one row longer), so none is shorter than half of cap (never one row,
// whose attention would run a decode step's kernel, which rounds differently), and the last,
// the shortest, holds a policy's window (slice_rows() plans cap for twice it).
struct Slices {
  int32_t n = 1, base = 0, extra = 0;
  int32_t begin(int32_t i) const { return i * base + std::min(i, extra); }
  int32_t size(int32_t i) const { return base + (i < extra ? 1 : 0); }
};

Slices slices(int32_t rows, int32_t cap) {
  Slices s;
  s.n = std::max(1, (rows + cap - 1) / std::max(cap, 1));
  s.base = rows / s.n;
  s.extra = rows % s.n;
  return s;
}

}  // namespace

Status Context::forward(const int32_t* tokens, const int32_t* pos, int32_t n, PrunePolicy* policy,
                        Decision* restart, int32_t out_row0) {
  const Hparams& hp = model_.hp;
  OpRunner run(*backend_, options_.f32_activations);
  const Pass pass = begin_pass(tokens, pos, n, policy);
  StepReplayMark step(*backend_, n == 1 && !pass.fresh);  // one token: the same ops every step
  WT_TRY(step.start());
  int32_t rows = n;                    // hidden rows still alive (a policy may shrink them)
  Tensor x = first_rows(act_.x, n);    // [rows, n_embd] the residual stream
  const Tensor xn = act_.xn;           // [slice rows, n_embd] a block's normed input, then its output

  WT_TRY(run.embed(x, model_.tok_embd, token_ids_, hp.embed_scale));
  // A block's output is added into the residual stream by the norm that reads the sum
  // (RmsnormOp's residual): one op instead of add + rmsnorm. `pending`: x still lacks the
  // last feed-forward output, which waits in xn for the next norm.
  bool pending = false;
  // A decode step on a backend that fuses one-row matmuls (MatmulOp's fusions): each norm
  // runs inside the matmul that reads it, the Q, K, V biases and rope inside theirs, swiglu
  // inside the gate and up matmul (fuse_glu) or the down projection, and the output
  // projections add into x themselves (nothing is pending). Rope's pairs need an even
  // head_dim; a backend may keep rope apart.
  // gemma3 norms each block's output before the residual add: its output projections cannot
  // add into x themselves, so it runs the unfused ops.
  const bool post_norms = hp.arch == Arch::gemma3;
  const bool fuse = n == 1 && !post_norms && run.fuses(std::max({hp.n_embd, hp.n_head * hp.head_dim, hp.n_ff}));
  // qwen3's and gemma3's per-head norms come between the projections and rope: rope cannot
  // join them.
  const bool qk_norm = hp.arch == Arch::qwen3 || hp.arch == Arch::gemma3;
  const bool fuse_rope = fuse && run.fuses_rope() && hp.head_dim % 2 == 0 && !qk_norm;
  // Rows appended to a resident f32 cache are the K and V matmul's own outputs (rope rotates
  // the keys there): no copy into the cache after them (append_kv sees they are in place).
  const bool kv_in_place = !pass.fresh && !pass.paged && options_.kv_type == DType::f32;
  // One row: its rope angles made here once for every layer (RopeOp::angles), not by each
  // layer's kernel (on a GPU, per warp, in double).
  const float* angles = nullptr;
  const float* angles_swa = nullptr;  // the sliding-window layers' (gemma3)
  if (n == 1) {
    rope_angles(rope_op(Tensor{}, Tensor{}, nullptr, hp, rope_divisors_), rope_freqs_, positions_[0], rope_angles_);
    angles = rope_angles_;
    if (rope_freqs_swa_) {
      rope_angles(rope_op(Tensor{}, Tensor{}, nullptr, hp_swa_, nullptr), rope_freqs_swa_, positions_[0],
                  rope_angles_swa_);
      angles_swa = rope_angles_swa_;
    }
  }
  // A pass longer than a slice (act_.xn's rows, slice_rows()) runs each layer in slices: a
  // pruned prompt's and a paged one's pass holds x, k and v for all its rows, the rest for one
  // slice. The norm then cannot hold the feed-forward output back for the next layer (xn
  // holds one slice): each slice adds it into x itself.
  const int32_t slice_cap = static_cast<int32_t>(act_.xn.ne[1]);
  bool kv_dropped = false;  // a layer kept none of this pass's KV (Decision::Kv::none)
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& w = model_.layers[static_cast<size_t>(l)];
    const bool rope_here = layer_has_rope(hp, l);  // smollm3: not every fourth layer
    // The rope of this layer: a sliding-window layer's base and no scaling (gemma3).
    const bool swa = layer_is_swa(hp, l);
    const Hparams& hp_rope = swa ? hp_swa_ : hp;
    const float* divisors = swa ? nullptr : rope_divisors_;
    const float* layer_angles = swa ? angles_swa : angles;
    // qwen3: each head of the queries q and keys k ([rows, heads, head_dim], either may be
    // empty) RMS-normed in place, one row per head.
    const auto norm_heads = [&](const Tensor& q, const Tensor& k) -> Status {
      if (!qk_norm) return Status::ok();
      if (!q.empty()) WT_TRY(run.rmsnorm(q, q, w.q_norm, hp.rms_eps));
      return k.empty() ? Status::ok() : run.rmsnorm(k, k, w.k_norm, hp.rms_eps);
    };
    const Slices sl = slices(rows, slice_cap);
    const int32_t last = sl.n - 1;
    if (!pass.fresh && !pass.paged) WT_TRY(slide_kv(run, l, rows));  // gemma3's sliding layers
    Tensor k = first_rows(act_.k, rows);              // [rows, n_head_kv, head_dim]
    Tensor v = first_rows(act_.v, rows);              // [rows, n_head_kv, head_dim]
    if (kv_in_place) {  // the new keys and values go straight into the layer's cache rows
      const int32_t kv0 = kv_len_[static_cast<size_t>(l)];
      WT_TRY(check_kv_room(l, kv0 + rows));
      k = rows_view(k_cache_[static_cast<size_t>(l)], kv0, rows);
      v = rows_view(v_cache_[static_cast<size_t>(l)], kv0, rows);
    }

    // A slice's projections (unfused): its norm (adding a pending output), then its queries,
    // its keys and values, or both, with their biases, then qwen3's head norms and rope.
    const auto project = [&](int32_t i, bool with_q, bool with_kv) -> Status {
      const int32_t r0 = sl.begin(i), nr = sl.size(i);
      const Tensor xs = rows_view(x, r0, nr), xns = first_rows(xn, nr);  // [nr, n_embd]
      const Tensor qs = first_rows(act_.q, nr);                           // [nr, n_head, head_dim]
      const Tensor ks = rows_view(k, r0, nr), vs = rows_view(v, r0, nr);  // [nr, n_head_kv, head_dim]
      const Tensor dst[3] = {flatten_heads(qs), flatten_heads(ks), flatten_heads(vs)};
      const Tensor wts[3] = {w.wq, w.wk, w.wv};
      const Tensor bias[3] = {w.bq, w.bk, w.bv};
      const int first = with_q ? 0 : 1, count = (with_q ? 1 : 0) + (with_kv ? 2 : 0);
      WT_TRY(run.rmsnorm(xns, xs, w.attn_norm, hp.rms_eps, pending ? xns : Tensor{}));
      WT_TRY(run.linears(count, dst + first, xns, wts + first, bias + first));
      WT_TRY(norm_heads(with_q ? qs : Tensor{}, with_kv ? ks : Tensor{}));
      if (!rope_here) return Status::ok();
      return run.rope(with_q ? qs : ks, with_q && with_kv ? ks : Tensor{}, positions_ + r0, hp_rope, divisors,
                      layer_angles);
    };

    // Attention block: first every slice's keys and values (attention and the policy read
    // them all), and the last slice's queries (a policy's window is the last rows).
    if (fuse) {  // one row: the norm, the biases and (fuse_rope) rope in the same launch
      const Tensor q = first_rows(act_.q, 1);  // [1, n_head, head_dim]
      const Tensor dst[3] = {flatten_heads(q), flatten_heads(k), flatten_heads(v)};
      const Tensor wts[3] = {w.wq, w.wk, w.wv};
      const Tensor bias[3] = {w.bq, w.bk, w.bv};
      const RopeOp rope =
          fuse_rope && rope_here ? rope_op(q, k, positions_, hp_rope, divisors, layer_angles) : RopeOp{};
      WT_TRY(run.linears(3, dst, x, wts, bias, {.norm = w.attn_norm, .eps = hp.rms_eps, .rope = rope}));
      WT_TRY(norm_heads(q, k));
      if (!fuse_rope && rope_here) WT_TRY(run.rope(q, k, positions_, hp_rope, divisors, layer_angles));
    } else {
      for (int32_t i = 0; i < sl.n; ++i) WT_TRY(project(i, i == last, true));
    }
    LayerKeys keys;  // what attention reads: the layer's KV with this pass's rows
    WT_TRY(append_kv(run, pass, l, k, v, &keys));
    Decision d;      // the policy's answer: KV rows to keep, rows to skip or attend, rows that go on
    WT_TRY(ask_policy(run, pass, l, first_rows(act_.q, sl.size(last)), k, v, &keys, &d));
    if (d.restart) {
      if (!pass.fresh) return error(WT_ERR_INTERNAL, "a policy asked to restart during decode");
      *restart = d;
      return Status::ok();
    }
    if (pass.fresh) WT_TRY(keep_kv(run, pass, l, k, v, d));
    kv_dropped = kv_dropped || d.kv == Decision::Kv::none;

    // Then slice by slice, the last first (its queries are made): the queries, attention over
    // the keys, the output projection and the feed-forward block, which work row by row.
    for (int32_t j = 0; j < sl.n; ++j) {
      const int32_t i = j == 0 ? last : j - 1;
      const int32_t r0 = sl.begin(i), nr = sl.size(i);
      const Tensor xs = rows_view(x, r0, nr), xns = first_rows(xn, nr);  // [nr, n_embd]
      const Tensor qs = first_rows(act_.q, nr);                           // [nr, n_head, head_dim]
      const Tensor attn = first_rows(act_.attn, nr);                      // [nr, n_head, head_dim]
      if (i != last) WT_TRY(project(i, true, false));  // several slices: nothing is pending
      WT_TRY(attend(run, pass, l, attn, qs, keys, d, r0));
      if (fuse) {
        WT_TRY(run.linear(x, flatten_heads(attn), w.wo, Tensor{}, {.accumulate = true}));
      } else {
        WT_TRY(run.linear(xns, flatten_heads(attn), w.wo, Tensor{}));
        if (!w.attn_post_norm.empty()) WT_TRY(run.rmsnorm(xns, xns, w.attn_post_norm, hp.rms_eps));
      }
      WT_TRY(feed_forward(run, w, xs, xns, fuse, sl.n > 1));
    }
    pending = !fuse && sl.n == 1;

    // Token-selective propagation: later layers see only the rows the policy keeps (of the
    // whole residual stream: the pending output is added first).
    if (pass.fresh && d.keep_rows && d.n_keep_rows < rows) {
      if (pending) WT_TRY(run.add(x, x, first_rows(xn, rows)));
      pending = false;
      WT_TRY(keep_rows(run, d, xn, &x, &rows));
    }
    WT_TRY(check_continue(l, n));
  }
  if (kv_dropped) return error(WT_ERR_INTERNAL, "a policy dropped a layer's KV and did not restart its pass");

  // Output head: every row when logits_all (unpruned passes, in slices of output_rows()),
  // otherwise only the last.
  const bool all = options_.logits_all && !pass.fresh;
  const int32_t out0 = all ? 0 : rows - 1;
  const Slices out = slices(all ? rows : 1, output_rows_);
  for (int32_t i = 0; i < out.n; ++i) {
    const int32_t r0 = out0 + out.begin(i), nr = out.size(i);
    const Tensor xs = rows_view(x, r0, nr);                                      // [nr, n_embd]
    const Tensor xns = pending ? rows_view(xn, r0, nr) : first_rows(xn, nr);    // (pending: one slice)
    const Tensor logits = all ? rows_view(act_.logits, out_row0 + out.begin(i), nr) : first_rows(act_.logits, 1);  // [nr, n_vocab]
    if (fuse) {
      WT_TRY(run.linear(logits, xs, model_.output, Tensor{}, {.norm = model_.output_norm, .eps = hp.rms_eps}));
    } else {
      WT_TRY(run.rmsnorm(xns, xs, model_.output_norm, hp.rms_eps, pending ? xns : Tensor{}));
      WT_TRY(run.linear(logits, xns, model_.output, Tensor{}));
    }
  }
  WT_TRY(step.end());
  WT_TRY(backend_->synchronize(Stream::compute));
  if (pass.paged && n > 1) WT_TRY(pass.paged->finish_prefill(bounded_from_layer()));
  last_rows_ = out_row0 + n;
  last_row_only_ = pass.fresh;
  return Status::ok();
}

Status Context::feed_forward(OpRunner& run, const LayerWeights& w, const Tensor& x, const Tensor& xn, bool fuse,
                             bool add_out) {
  const Hparams& hp = model_.hp;
  const Tensor wts[2] = {w.w_gate, w.w_up};
  const Tensor bias[2] = {};
  if (fuse) {  // one row
    const Tensor gate = first_rows(act_.gate, 1), up = first_rows(act_.up, 1);  // [1, n_ff]
    const Tensor dst[2] = {gate, up};
    if (run.fuses_glu()) {  // gate and up leave silu(gate) * up in gate
      WT_TRY(run.linears(2, dst, x, wts, bias, {.norm = w.ffn_norm, .eps = hp.rms_eps, .glu = true}));
      return run.linear(x, gate, w.w_down, Tensor{}, {.accumulate = true});
    }
    // the down projection makes silu(gate) * up itself
    WT_TRY(run.linears(2, dst, x, wts, bias, {.norm = w.ffn_norm, .eps = hp.rms_eps}));
    return run.linear(x, up, w.w_down, Tensor{}, {.gate = gate, .accumulate = true});
  }
  const int32_t rows = static_cast<int32_t>(x.ne[1]), slice = static_cast<int32_t>(act_.gate.ne[1]);
  for (int32_t r0 = 0; r0 < rows; r0 += slice) {
    const int32_t nr = std::min(slice, rows - r0);
    const Tensor xs = rows_view(x, r0, nr), xns = rows_view(xn, r0, nr);        // [nr, n_embd]
    const Tensor gate = first_rows(act_.gate, nr), up = first_rows(act_.up, nr);  // [nr, n_ff]
    const Tensor dst[2] = {gate, up};
    WT_TRY(run.rmsnorm(xns, xs, w.ffn_norm, hp.rms_eps, xns));
    WT_TRY(run.linears(2, dst, xns, wts, bias));
    WT_TRY(run.swiglu(gate, gate, up, hp.gelu));
    WT_TRY(run.linear(xns, gate, w.w_down, Tensor{}));
    if (!w.ffn_post_norm.empty()) WT_TRY(run.rmsnorm(xns, xns, w.ffn_post_norm, hp.rms_eps));
    if (add_out) WT_TRY(run.add(xs, xs, xns));
  }
  return Status::ok();
}

Context::Pass Context::begin_pass(const int32_t* tokens, const int32_t* pos, int32_t n, PrunePolicy* policy) {
  Pass p;
  p.policy = policy;
  p.fresh = policy != nullptr;
  // After a pruned prefill, single-token steps ask the policy its decode questions.
  p.decoder = !p.fresh && n == 1 && policy_decoding_ ? policy_.get() : nullptr;
  p.paged = kv_.get();
  if (p.paged && p.fresh) p.paged->clear();
  if (attended_) std::fill(attended_n_.begin(), attended_n_.end(), -1);  // the tap describes this pass only
  if (key_bounds_ && !p.decoder) std::fill(key_bounds_rows_.begin(), key_bounds_rows_.end(), 0);
  std::memmove(positions_, pos, sizeof(int32_t) * static_cast<size_t>(n));
  std::memmove(token_ids_, tokens, sizeof(int32_t) * static_cast<size_t>(n));
  return p;
}

Status Context::check_continue(int32_t layer, int32_t n_rows) {
  const bool prefill = prefill_tokens_ > 1;
  if (prefill && abort_.load(std::memory_order_relaxed))
    return error(WT_ERR_ABORTED, "prefill aborted by wt_context_abort after layer " + std::to_string(layer));
  const float done = static_cast<float>(layer + 1) / static_cast<float>(model_.hp.n_layer);
  const float progress = pass_row0_ < 0 ? done
                                        : (static_cast<float>(pass_row0_) + done * static_cast<float>(n_rows)) /
                                              static_cast<float>(prefill_tokens_);
  if (prefill && options_.progress && !options_.progress(progress, options_.progress_user))
    return error(WT_ERR_ABORTED, "prefill aborted by the progress callback after layer " + std::to_string(layer));
  return Status::ok();
}

}  // namespace wt
