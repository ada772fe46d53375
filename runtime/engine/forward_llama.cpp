// The forward pass of the llama family (llama, qwen2: qwen2 adds Q/K/V biases and uses
// neox rope; both are data in Hparams/LayerWeights). Reads top to bottom like llama2.c;
// every op runs on the backend over views of the context's arena. A pruning policy, when
// one is given, is asked at every layer after Q/K exist and may keep fewer KV rows, skip
// rows' attention, shrink the hidden rows after the layer, or restart the pass.
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "context.h"
#include "op_runner.h"

namespace wt {

Status Context::forward(const int32_t* tokens, const int32_t* pos, int32_t n, PrunePolicy* policy,
                        Decision* restart) {
  const Hparams& hp = model_.hp;
  const float attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  const bool fresh = policy != nullptr;  // a pruned prompt: every layer's KV starts empty
  // After a pruned prefill, single-token steps ask the policy its decode questions.
  PrunePolicy* decoder = !fresh && n == 1 && policy_decoding_ ? policy_.get() : nullptr;
  OpRunner run(*backend_, options_.f32_activations);
  BackendSelector selector(*backend_, arena_, topk_in_, score_capacity_);
  const int64_t n_kv = hp.n_head_kv;

  // With the pager, layer l's KV lives in its blocks; k_cache_[0] / v_cache_[0] are the
  // staging a multi-row pass's attention reads contiguously.
  PagedKv* paged = kv_.get();
  if (paged && fresh) paged->clear();
  std::memmove(positions_, pos, sizeof(int32_t) * static_cast<size_t>(n));
  std::memmove(token_ids_, tokens, sizeof(int32_t) * static_cast<size_t>(n));
  int32_t rows = n;  // hidden rows still alive (a policy may shrink them)
  Tensor x = first_rows(act_.x, n);    // [n_embd, rows]  residual stream
  Tensor xn = first_rows(act_.xn, n);  // [n_embd, rows]

  WT_TRY(run.embed(x, model_.tok_embd, token_ids_, n));
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& w = model_.layers[static_cast<size_t>(l)];
    const Tensor q = first_rows(act_.q, rows);        // [head_dim, n_head, rows]
    const Tensor k = first_rows(act_.k, rows);        // [head_dim, n_head_kv, rows]
    const Tensor v = first_rows(act_.v, rows);        // [head_dim, n_head_kv, rows]
    const Tensor attn = first_rows(act_.attn, rows);  // [head_dim, n_head, rows]
    const Tensor gate = first_rows(act_.gate, rows);  // [n_ff, rows]
    const Tensor up = first_rows(act_.up, rows);      // [n_ff, rows]
    int32_t& kv_len = kv_len_[static_cast<size_t>(l)];
    const int32_t kv0 = fresh ? 0 : kv_len;  // KV rows before this pass
    int32_t* kv_pos = kv_pos_ + static_cast<size_t>(l) * n_kv * n_ctx_;

    // Attention block.
    WT_TRY(run.rmsnorm(xn, x, w.attn_norm, hp.rms_eps));
    WT_TRY(run.linear(flatten_heads(q), xn, w.wq, w.bq));
    WT_TRY(run.linear(flatten_heads(k), xn, w.wk, w.bk));
    WT_TRY(run.linear(flatten_heads(v), xn, w.wv, w.bv));
    WT_TRY(run.rope(q, positions_, rows, hp, rope_divisors_));
    WT_TRY(run.rope(k, positions_, rows, hp, rope_divisors_));
    const size_t cl = paged ? 0 : static_cast<size_t>(l);  // the layer's cache (paged: staging)
    const bool paged_step = paged && !fresh && rows == 1;  // decode attention reads the blocks
    if (!fresh) {
      // Append to this layer's KV; attention reads the cache.
      WT_TRY(check_kv_room(l, kv0 + rows));
      if (paged && rows > 1 && kv0 > 0) {
        WT_TRY(paged->require(l, nullptr, 0));
        WT_TRY(paged->gather(run, l, k_cache_[0], v_cache_[0]));
      }
      if (!paged_step) {
        WT_TRY(run.copy_rows(flatten_heads(k_cache_[cl]), flatten_heads(k), kv0));
        WT_TRY(run.copy_rows(flatten_heads(v_cache_[cl]), flatten_heads(v), kv0));
      }
      if (paged) WT_TRY(paged->append(run, l, k, v, rows));
      for (int64_t h = 0; h < n_kv; ++h)
        for (int32_t i = 0; i < rows; ++i) kv_pos[h * n_ctx_ + kv0 + i] = positions_[i];
      kv_len = kv0 + rows;
    }
    // [head_dim, n_head_kv, keys]; a paged decode step reads the blocks (below) instead.
    Tensor kc = fresh ? k : first_rows(k_cache_[cl], kv0 + rows);
    Tensor vc = fresh ? v : first_rows(v_cache_[cl], kv0 + rows);

    Decision d;
    if (fresh || decoder) {
      const auto t0 = std::chrono::steady_clock::now();
      const ScoreRequest req = fresh ? policy->request(l, rows) : decoder->decode_request(l, kv0 + rows);
      Observation obs;
      obs.layer = l;
      obs.n_rows = rows;
      obs.n_keys = kv0 + rows;
      obs.positions = positions_;
      const int32_t* key_ids = nullptr;
      if (paged_step) WT_TRY(paged_observe_keys(run, l, req, k, v, &kc, &vc, &key_ids));
      WT_TRY(observe(req, l, rows, kv0 + rows, q, kc, vc, key_ids, &obs));
      // The policy reads the observation on the host: on a device backend the score ops
      // are only queued until the compute stream is synchronized.
      if (req.kind != ScoreRequest::Kind::none) WT_TRY(backend_->synchronize(Stream::compute));
      WT_TRY(fresh ? policy->decide(l, obs, selector, &d) : decoder->decode_decide(l, obs, selector, &d));
      prune_stats_.score_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (d.restart) {
        if (!fresh) return error(WT_ERR_INTERNAL, "a policy asked to restart during decode");
        *restart = d;
        return Status::ok();
      }
    }
    if (paged_step) {
      // Paged attention: the keys are device-pool rows slot * B + offset, in logical order.
      const int32_t n_keys = d.attend_rows ? d.n_attend_rows : kv0 + 1;
      WT_TRY(paged->require(l, d.attend_rows, n_keys));
      // The next layer's blocks start on the copy stream now, under attention(l), o-proj,
      // FFN(l) and QKV(l + 1): the decision at layer l is made, nothing later informs them.
      WT_TRY(paged->prefetch((l + 1) % hp.n_layer));
      const int32_t* ids = paged->device_rows(l, d.attend_rows, n_keys);
      const bool skipped = d.skip_rows && d.skip_rows[0] != 0;  // nothing computed: no keys read
      WT_TRY(run.attention(attn, q, paged->k_pool(), paged->v_pool(), kv0, attn_scale, skipped ? d.skip_rows : nullptr,
                           ids, n_keys));
    } else {
      WT_TRY(run.attention(attn, q, kc, vc, kv0, attn_scale, d.skip_rows, d.attend_rows, d.n_attend_rows));
    }
    if (fresh) {
      // Write the KV rows the policy keeps (all of them by default).
      WT_TRY(check_kv_room(l, d.kv == Decision::Kv::all ? rows : d.n_kv_rows));
      const Tensor kd = flatten_heads(k_cache_[cl]);
      const Tensor vd = flatten_heads(v_cache_[cl]);
      if (d.kv == Decision::Kv::all) {
        if (paged) {
          WT_TRY(paged->append(run, l, k, v, rows));
        } else {
          WT_TRY(run.copy_rows(kd, flatten_heads(k), 0));
          WT_TRY(run.copy_rows(vd, flatten_heads(v), 0));
        }
        for (int64_t h = 0; h < n_kv; ++h)
          for (int32_t i = 0; i < rows; ++i) kv_pos[h * n_ctx_ + i] = positions_[i];
        kv_len = rows;
      } else {
        const bool per_head = d.kv == Decision::Kv::per_head;
        const int32_t n_ids = per_head ? d.n_kv_rows * static_cast<int32_t>(n_kv) : d.n_kv_rows;
        WT_TRY(run.gather_rows(first_rows(k_cache_[cl], d.n_kv_rows), k, d.kv_rows, n_ids, per_head));
        WT_TRY(run.gather_rows(first_rows(v_cache_[cl], d.n_kv_rows), v, d.kv_rows, n_ids, per_head));
        if (paged) WT_TRY(paged->append(run, l, k_cache_[0], v_cache_[0], d.n_kv_rows));
        for (int64_t h = 0; h < n_kv; ++h) {
          const int32_t* sel = d.kv_rows + (per_head ? h * d.n_kv_rows : 0);
          for (int32_t i = 0; i < d.n_kv_rows; ++i) kv_pos[h * n_ctx_ + i] = positions_[sel[i]];
        }
        kv_len = d.n_kv_rows;
      }
      prune_stats_.hidden_rows[static_cast<size_t>(l)] = rows;
    }
    WT_TRY(run.linear(xn, flatten_heads(attn), w.wo, Tensor{}));
    WT_TRY(run.add(x, x, xn));
    // Feed-forward block.
    WT_TRY(run.rmsnorm(xn, x, w.ffn_norm, hp.rms_eps));
    WT_TRY(run.linear(gate, xn, w.w_gate, Tensor{}));
    WT_TRY(run.linear(up, xn, w.w_up, Tensor{}));
    WT_TRY(run.swiglu(gate, gate, up));
    WT_TRY(run.linear(xn, gate, w.w_down, Tensor{}));
    WT_TRY(run.add(x, x, xn));

    if (fresh && d.keep_rows && d.n_keep_rows < rows) {
      // Token-selective propagation: later layers see only the kept rows, at their
      // original positions.
      WT_TRY(run.gather_rows(first_rows(xn, d.n_keep_rows), x, d.keep_rows, d.n_keep_rows, false));
      std::swap(x, xn);
      for (int32_t i = 0; i < d.n_keep_rows; ++i) row_tmp_[i] = positions_[d.keep_rows[i]];
      std::memcpy(positions_, row_tmp_, sizeof(int32_t) * static_cast<size_t>(d.n_keep_rows));
      rows = d.n_keep_rows;
      x = first_rows(x, rows);
      xn = first_rows(xn, rows);
    }

    if (n > 1 && abort_.load(std::memory_order_relaxed))
      return error(WT_ERR_ABORTED, "prefill aborted by wt_context_abort after layer " + std::to_string(l));
    if (n > 1 && options_.progress &&
        !options_.progress(static_cast<float>(l + 1) / static_cast<float>(hp.n_layer), options_.progress_user)) {
      return error(WT_ERR_ABORTED, "prefill aborted by the progress callback after layer " + std::to_string(l));
    }
  }

  // Output head: every row when logits_all (unpruned passes), otherwise only the last.
  const bool all = options_.logits_all && !fresh;
  const Tensor out_x = all ? x : row_view(x, rows - 1);        // [n_embd, out rows]
  const Tensor out_xn = all ? xn : row_view(xn, rows - 1);
  const Tensor logits = first_rows(act_.logits, all ? rows : 1);  // [n_vocab, out rows]
  WT_TRY(run.rmsnorm(out_xn, out_x, model_.output_norm, hp.rms_eps));
  WT_TRY(run.linear(logits, out_xn, model_.output, Tensor{}));
  WT_TRY(backend_->synchronize(Stream::compute));
  if (paged && n > 1) WT_TRY(paged->finish_prefill());
  last_rows_ = n;
  last_row_only_ = fresh;
  return Status::ok();
}

Status Context::observe(const ScoreRequest& req, int32_t layer, int32_t n, int32_t n_keys, const Tensor& q,
                        const Tensor& k, const Tensor& v, const int32_t* key_ids, Observation* obs) {
  const Hparams& hp = model_.hp;
  OpRunner run(*backend_, options_.f32_activations);
  switch (req.kind) {
    case ScoreRequest::Kind::none:
      return Status::ok();
    case ScoreRequest::Kind::window: {
      const int64_t n_out = req.per_query ? req.window : 1;
      if (req.window < 1 || req.window > n || req.n_cols < 1 || req.n_cols > n_keys ||
          n_out * hp.n_head * req.n_cols > static_cast<int64_t>(score_capacity_))
        return error(WT_ERR_INTERNAL, "window scores: W " + std::to_string(req.window) + ", " +
                                          std::to_string(req.n_cols) + " columns over " + std::to_string(n) + " rows");
      const int64_t ne[3] = {req.n_cols, hp.n_head, n_out};
      const Tensor raw = make_tensor(scores_, DType::f32, 3, ne);  // [n_out, n_head, n_cols]
      WT_TRY(run.window_scores(raw, q, k, req, n_keys, 1.0f / std::sqrt(static_cast<float>(hp.head_dim))));
      obs->scores = scores_;
      if (req.pool_kernel > 1) {
        const Tensor pooled = make_tensor(pooled_, DType::f32, 3, ne);
        WT_TRY(run.pool1d(pooled, raw, req.pool_kernel, req.pool_max));
        obs->scores = pooled_;
      }
      obs->n_cols = req.n_cols;
      return Status::ok();
    }
    case ScoreRequest::Kind::blocks: {
      const int64_t keys = req.n_key_rows > 0 ? req.n_key_rows : n_keys;
      const int64_t n_blocks = (keys + req.block - 1) / req.block;
      if (req.block < 1 || req.unit < 1 || req.query_rows < 1 || req.query_rows > n || keys > n_keys ||
          n_blocks > static_cast<int64_t>(score_capacity_))
        return error(WT_ERR_INTERNAL, "block scores: bad request");
      const Tensor dst = make_tensor_2d(scores_, DType::f32, n_blocks, 1);
      WT_TRY(run.block_scores(dst, q, key_ids ? k : first_rows(k, keys), req, key_ids, static_cast<int32_t>(keys)));
      obs->scores = scores_;
      obs->n_cols = static_cast<int32_t>(n_blocks);
      return Status::ok();
    }
    case ScoreRequest::Kind::kv_similarity: {
      const int64_t ne[3] = {2, hp.n_head_kv, n};
      const Tensor dst = make_tensor(pooled_, DType::f32, 3, ne);
      const int64_t ane[3] = {hp.head_dim, hp.n_head_kv, 2};
      const size_t anchor_elems = static_cast<size_t>(2 * hp.n_head_kv * hp.head_dim);
      const Tensor anchors = make_tensor(anchors_ + static_cast<size_t>(layer) * anchor_elems, DType::f32, 3, ane);
      // Only this pass's rows: the newest n rows of k/v.
      Tensor kr = k, vr = v;
      const int64_t skip = k.ne[2] - n;
      kr.data = static_cast<char*>(kr.data) + static_cast<size_t>(skip) * kr.nb[2];
      vr.data = static_cast<char*>(vr.data) + static_cast<size_t>(skip) * vr.nb[2];
      kr.ne[2] = vr.ne[2] = n;
      WT_TRY(run.kv_similarity(dst, kr, vr, anchors, req.anchor_decay));
      obs->scores = pooled_;
      obs->n_cols = n;
      return Status::ok();
    }
  }
  return error(WT_ERR_INTERNAL, "unknown score request");
}

Status Context::paged_observe_keys(OpRunner& run, int32_t l, const ScoreRequest& req, const Tensor& k,
                                   const Tensor& v, Tensor* kc, Tensor* vc, const int32_t** key_ids) {
  switch (req.kind) {
    case ScoreRequest::Kind::none:
      return Status::ok();
    case ScoreRequest::Kind::kv_similarity:  // this step's row only
      *kc = k;
      *vc = v;
      return Status::ok();
    case ScoreRequest::Kind::blocks:
      if (req.n_key_rows > 0) {
        // Prompt rows, complete on the host tier since the prefill: the scores read them
        // there (zero-copy), so blocks that are not active need not come back to be scored.
        *kc = kv_->k_host();
        *key_ids = kv_->host_rows(l, nullptr, req.n_key_rows);
      } else {
        WT_TRY(kv_->require(l, nullptr, 0));
        *kc = kv_->k_pool();
        *key_ids = kv_->device_rows(l, nullptr, kv_->n_rows(l));
      }
      return Status::ok();
    case ScoreRequest::Kind::window:
      // Window scores read every key contiguously: the layer's blocks into the staging.
      WT_TRY(kv_->require(l, nullptr, 0));
      WT_TRY(kv_->gather(run, l, k_cache_[0], v_cache_[0]));
      *kc = first_rows(k_cache_[0], kv_->n_rows(l));
      *vc = first_rows(v_cache_[0], kv_->n_rows(l));
      return Status::ok();
  }
  return error(WT_ERR_INTERNAL, "unknown score request");
}

}  // namespace wt
