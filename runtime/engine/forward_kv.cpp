// The KV and policy steps of one layer of the forward pass (forward_llama.cpp), for the
// four kinds of pass: a pruned prompt (fresh: every layer's KV starts empty and the policy
// chooses what it keeps), or rows appended to the KV (a prompt chunk, a decode step), each
// with the KV resident in the arena's cache or in the pager's blocks. A paged multi-row
// pass reads the layer through one layer of staging (k_cache_[0]); a paged decode step
// reads the device pool through the block table.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "context.h"
#include "op_runner.h"

namespace wt {

Status Context::append_kv(OpRunner& run, const Pass& pass, int32_t l, const Tensor& k, const Tensor& v,
                          LayerKeys* out) {
  const int32_t rows = static_cast<int32_t>(k.ne[2]);
  int32_t& kv_len = kv_len_[static_cast<size_t>(l)];
  LayerKeys& keys = *out;
  keys.kv0 = pass.fresh ? 0 : kv_len;
  keys.cache = pass.paged ? 0 : static_cast<size_t>(l);
  keys.paged_step = pass.paged && !pass.fresh && rows == 1;
  if (pass.fresh) {  // a pruned prompt: attention reads this pass's rows; keep_kv writes the KV
    keys.k = k;
    keys.v = v;
    return Status::ok();
  }
  PagedKv* paged = pass.paged;
  const int32_t kv0 = keys.kv0;
  WT_TRY(check_kv_room(l, kv0 + rows));
  if (paged && rows > 1 && kv0 > 0) {  // the layer's earlier rows into the staging
    WT_TRY(paged->require(l, nullptr, 0));
    WT_TRY(paged->gather(run, l, k_cache_[0], v_cache_[0]));
  }
  const bool in_place = k.data == row_view(k_cache_[keys.cache], kv0).data;  // forward's kv_in_place
  if (!keys.paged_step && !in_place) {
    WT_TRY(run.copy_rows(flatten_heads(k_cache_[keys.cache]), flatten_heads(k), flatten_heads(v_cache_[keys.cache]),
                         flatten_heads(v), kv0));
  }
  if (paged) WT_TRY(paged->append(run, l, k, v, rows));
  set_kv_positions(l, kv0, positions_, nullptr, rows, 0);
  kv_len = kv0 + rows;
  // [kv0 + rows, n_head_kv, head_dim]; a paged decode step reads the blocks (attend) instead.
  keys.k = first_rows(k_cache_[keys.cache], kv0 + rows);
  keys.v = first_rows(v_cache_[keys.cache], kv0 + rows);
  return Status::ok();
}

Status Context::slide_kv(OpRunner& run, int32_t l, int32_t rows) {
  const size_t li = static_cast<size_t>(l);
  const int32_t len = kv_len_[li];
  if (!slides(l) || len + rows <= kv_cap_[li]) return Status::ok();
  const int32_t keep = std::min(len, model_.hp.swa_window - 1), from = len - keep;
  // sliding_kv_rows sizes the cache so that the rows kept lie past where they go.
  if (from < keep) return error(WT_ERR_INTERNAL, "layer " + std::to_string(l) + ": a sliding window's copy would overlap");
  if (keep > 0) {
    WT_TRY(run.copy_rows(flatten_heads(k_cache_[li]), flatten_heads(rows_view(k_cache_[li], from, keep)),
                         flatten_heads(v_cache_[li]), flatten_heads(rows_view(v_cache_[li], from, keep)), 0));
    for (int32_t h = 0; h < model_.hp.n_head_kv; ++h) {
      int32_t* pos = kv_pos_of(l, h);
      std::memmove(pos, pos + from, sizeof(int32_t) * static_cast<size_t>(keep));
    }
  }
  kv_len_[li] = keep;
  return Status::ok();
}

Status Context::ask_policy(OpRunner& run, const Pass& pass, int32_t l, const Tensor& q, const Tensor& k,
                           const Tensor& v, LayerKeys* keys, Decision* d) {
  *d = Decision{};
  if (!pass.fresh && !pass.decoder) return Status::ok();
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t rows = static_cast<int32_t>(k.ne[2]), n_keys = keys->kv0 + rows;
  const ScoreRequest req = pass.fresh ? pass.policy->request(l, rows) : pass.decoder->decode_request(l, n_keys);
  Observation obs;
  obs.layer = l;
  obs.n_rows = rows;
  obs.n_keys = n_keys;
  obs.positions = positions_;
  const int32_t* key_ids = nullptr;
  if (keys->paged_step) WT_TRY(paged_observe_keys(run, l, req, k, v, &keys->k, &keys->v, &key_ids));
  // Token Filtering's similarity reads this pass's own rows: the f32 values it computed,
  // not the cache's copy (the same bits in an f32 cache, rounded in an f16 one).
  const bool own_rows = req.kind == ScoreRequest::Kind::kv_similarity;
  WT_TRY(observe(req, l, rows, n_keys, q, own_rows ? k : keys->k, own_rows ? v : keys->v, key_ids, &obs));
  // The policy reads the observation on the host: on a device backend the score ops are
  // only queued until the compute stream is synchronized.
  if (req.kind != ScoreRequest::Kind::none) WT_TRY(backend_->synchronize(Stream::compute));
  BackendSelector selector(*backend_, arena_, host_arena_, topk_in_, score_capacity_);
  WT_TRY(pass.fresh ? pass.policy->decide(l, obs, selector, d) : pass.decoder->decode_decide(l, obs, selector, d));
  prune_stats_.score_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::ok();
}

Status Context::attend(OpRunner& run, const Pass& pass, int32_t l, const Tensor& attn, const Tensor& q,
                       const LayerKeys& keys, const Decision& d, int32_t row0) {
  if (pass.decoder && attended_) record_attended(l, d, keys.kv0 + static_cast<int32_t>(q.ne[2]));
  const float scale = attn_scale_;
  // A sliding-window layer (gemma3): cache rows are positions here, since contexts of such
  // models neither prune nor page (Context::setup refuses them: check_sliding_window).
  const int32_t window = layer_is_swa(model_.hp, l) ? model_.hp.swa_window : 0;
  if (!keys.paged_step)
    return run.attention({.dst = attn, .q = q, .k = keys.k, .v = keys.v, .pos0 = keys.kv0 + row0, .scale = scale,
                          .skip_rows = d.skip_rows ? d.skip_rows + row0 : nullptr, .key_rows = d.attend_rows,
                          .n_key_rows = d.n_attend_rows, .window = window});
  // Paged attention (a decode step, row0 0): the keys are device-pool rows slot * B + offset,
  // in logical order.
  if (row0 != 0) return error(WT_ERR_INTERNAL, "a paged decode step's row is its pass's first");
  PagedKv* paged = pass.paged;
  const int32_t n_keys = d.attend_rows ? d.n_attend_rows : keys.kv0 + 1;
  WT_TRY(paged->require(l, d.attend_rows, n_keys));
  // The next layer's blocks start on the copy stream now, under attention(l), o-proj,
  // FFN(l) and QKV(l + 1): the decision at layer l is made, nothing later informs them.
  WT_TRY(paged->prefetch((l + 1) % model_.hp.n_layer));
  const int32_t* ids = paged->device_rows(l, d.attend_rows, n_keys);
  const bool skipped = d.skip_rows && d.skip_rows[0] != 0;  // nothing computed: no keys read
  return run.attention({.dst = attn, .q = q, .k = paged->k_pool(), .v = paged->v_pool(), .pos0 = keys.kv0,
                        .scale = scale, .skip_rows = skipped ? d.skip_rows : nullptr, .key_rows = ids, .n_key_rows = n_keys});
}

void Context::record_attended(int32_t l, const Decision& d, int32_t n_keys) {
  int32_t* out = attended_ + static_cast<size_t>(l) * static_cast<size_t>(n_ctx_);
  if (d.attend_rows) {
    std::copy(d.attend_rows, d.attend_rows + d.n_attend_rows, out);
    attended_n_[static_cast<size_t>(l)] = d.n_attend_rows;
  } else {
    for (int32_t r = 0; r < n_keys; ++r) out[r] = r;
    attended_n_[static_cast<size_t>(l)] = n_keys;
  }
}

Status Context::keep_kv(OpRunner& run, const Pass& pass, int32_t l, const Tensor& k, const Tensor& v,
                        const Decision& d) {
  const int32_t rows = static_cast<int32_t>(k.ne[2]);
  const size_t cl = pass.paged ? 0 : static_cast<size_t>(l);  // the layer's cache (paged: staging)
  prune_stats_.hidden_rows[static_cast<size_t>(l)] = rows;
  if (d.kv == Decision::Kv::none) {  // a pass the policy restarts: nothing of it is read again
    kv_len_[static_cast<size_t>(l)] = 0;
    return Status::ok();
  }
  WT_TRY(check_kv_room(l, d.kv == Decision::Kv::all ? rows : d.n_kv_rows));
  if (d.kv == Decision::Kv::all) {  // every row (the policy keeps all of them by default)
    if (pass.paged) {
      WT_TRY(pass.paged->append(run, l, k, v, rows));
    } else {
      WT_TRY(run.copy_rows(flatten_heads(k_cache_[cl]), flatten_heads(k), 0));
      WT_TRY(run.copy_rows(flatten_heads(v_cache_[cl]), flatten_heads(v), 0));
    }
    set_kv_positions(l, 0, positions_, nullptr, rows, 0);
    kv_len_[static_cast<size_t>(l)] = rows;
  } else {  // the rows the policy chose: shared by the KV heads or per KV head
    const bool per_head = d.kv == Decision::Kv::per_head;
    const int32_t n_ids = per_head ? d.n_kv_rows * static_cast<int32_t>(model_.hp.n_head_kv) : d.n_kv_rows;
    WT_TRY(run.gather_rows(first_rows(k_cache_[cl], d.n_kv_rows), k, d.kv_rows, n_ids, per_head));
    WT_TRY(run.gather_rows(first_rows(v_cache_[cl], d.n_kv_rows), v, d.kv_rows, n_ids, per_head));
    if (pass.paged) WT_TRY(pass.paged->append(run, l, k_cache_[0], v_cache_[0], d.n_kv_rows));
    set_kv_positions(l, 0, positions_, d.kv_rows, d.n_kv_rows, per_head ? d.n_kv_rows : 0);
    kv_len_[static_cast<size_t>(l)] = d.n_kv_rows;
  }
  return Status::ok();
}

void Context::set_kv_positions(int32_t l, int32_t row0, const int32_t* positions, const int32_t* sel, int32_t n,
                               int32_t head_stride) {
  for (int32_t h = 0; h < model_.hp.n_head_kv; ++h) {
    int32_t* kv_pos = kv_pos_of(l, h) + row0;  // check_kv_room kept row0 + n within the layer's rows
    const int32_t* s = sel ? sel + static_cast<int64_t>(h) * head_stride : nullptr;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t p = positions[s ? s[i] : i];
      kv_pos[i] = p < reindexed_ ? origin_[p] : p + (reindexed_from_ - reindexed_);
    }
  }
}

Status Context::keep_rows(OpRunner& run, const Decision& d, const Tensor& xn, Tensor* x, int32_t* rows) {
  // Kept row i is row keep_rows[i] >= i (ascending), so the rows a slice gathers lie at or past
  // its own, which no later slice reads again: each slice is gathered into xn, then copied down.
  const int32_t step = static_cast<int32_t>(xn.ne[1]);
  for (int32_t r0 = 0; r0 < d.n_keep_rows; r0 += step) {
    const int32_t nr = std::min(step, d.n_keep_rows - r0);
    const Tensor gathered = first_rows(xn, nr);  // [nr, n_embd]
    WT_TRY(run.gather_rows(gathered, *x, d.keep_rows + r0, nr, false));
    WT_TRY(run.copy_rows(*x, gathered, r0));
  }
  for (int32_t i = 0; i < d.n_keep_rows; ++i) row_tmp_[i] = positions_[d.keep_rows[i]];
  std::memcpy(positions_, row_tmp_, sizeof(int32_t) * static_cast<size_t>(d.n_keep_rows));
  *rows = d.n_keep_rows;
  *x = first_rows(*x, *rows);
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
      if (req.window < 1 || req.window > q.ne[2] || req.n_cols < 1 || req.n_cols > n_keys ||
          n_out * hp.n_head * req.n_cols > static_cast<int64_t>(score_capacity_))
        return error(WT_ERR_INTERNAL, "window scores: W " + std::to_string(req.window) + ", " +
                                          std::to_string(req.n_cols) + " columns over " + std::to_string(n) +
                                          " rows, the last " + std::to_string(q.ne[2]) + " of them with queries");
      const int64_t ne[3] = {req.n_cols, hp.n_head, n_out};
      const Tensor raw = make_tensor(scores_, DType::f32, 3, ne);  // [n_out, n_head, n_cols]
      WT_TRY(run.window_scores(raw, q, k, req, n_keys, attn_scale_));
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
      if (req.block < 1 || req.unit < 1 || req.query_rows < 1 || req.query_rows > q.ne[2] || keys > n_keys ||
          n_blocks > static_cast<int64_t>(score_capacity_))
        return error(WT_ERR_INTERNAL, "block scores: bad request");
      const Tensor dst = make_tensor_2d(scores_, DType::f32, n_blocks, 1);  // [n_blocks]
      WT_TRY(run.block_scores(dst, q, key_ids ? k : first_rows(k, keys), req, key_ids, static_cast<int32_t>(keys)));
      obs->scores = scores_;
      obs->n_cols = static_cast<int32_t>(n_blocks);
      return Status::ok();
    }
    case ScoreRequest::Kind::kv_similarity: {
      const int64_t ne[3] = {2, hp.n_head_kv, n};
      const Tensor dst = make_tensor(pooled_, DType::f32, 3, ne);  // [n, n_head_kv, 2]
      const int64_t ane[3] = {hp.head_dim, hp.n_head_kv, 2};
      const size_t anchor_elems = static_cast<size_t>(2 * hp.n_head_kv * hp.head_dim);
      // [2, n_head_kv, head_dim]: the layer's K and V anchors
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
    case ScoreRequest::Kind::key_bounds: {
      const int32_t block = policy_ ? policy_->key_bounds_block() : 0;
      const int32_t first = policy_ ? policy_->key_bounds_first_layer() : 0;  // the layers planned start there
      const int64_t n_blocks = block > 0 ? (req.n_cols + block - 1) / block : 0;
      if (!key_bounds_ || block < 1 || layer < first || n != 1 || req.n_cols < 1 || req.n_cols > n_keys ||
          n_blocks > static_cast<int64_t>(score_capacity_))
        return error(WT_ERR_INTERNAL, "key bounds: bad request");
      const Tensor bounds = key_bounds_tensor(hp, key_bounds_, layer - first, req.n_cols, n_ctx_, block);
      // Built once from the prompt's keys, then every step reads the bounds alone.
      int32_t& built = key_bounds_rows_[static_cast<size_t>(layer)];
      if (built != req.n_cols) {
        // With the pager, k is its host tier and key_ids the prompt rows' slots there.
        WT_TRY(run.key_bounds(bounds, key_ids ? k : first_rows(k, req.n_cols), block, key_ids, req.n_cols));
        built = req.n_cols;
      }
      const Tensor dst = make_tensor_2d(scores_, DType::f32, n_blocks, 1);  // [n_blocks]
      WT_TRY(run.bound_scores(dst, q, bounds, attn_scale_));
      obs->scores = scores_;
      obs->n_cols = static_cast<int32_t>(n_blocks);
      return Status::ok();
    }
  }
  return error(WT_ERR_INTERNAL, "unknown score request");
}

bool Context::host_tier_bindable() const {
  const Tensor& h = kv_->k_host();
  return static_cast<uint64_t>(h.nb[2]) * static_cast<uint64_t>(h.ne[2]) <= backend_->caps().max_binding_bytes;
}

Status Context::paged_observe_keys(OpRunner& run, int32_t l, const ScoreRequest& req, const Tensor& k,
                                   const Tensor& v, Tensor* kc, Tensor* vc, const int32_t** key_ids) {
  // The prompt's first n keys of layer l read where they are complete since the prefill, on
  // the host tier (zero-copy): no block needs to come to the device for them.
  const auto host_keys = [&](int32_t n) {
    *kc = kv_->k_host();
    *key_ids = kv_->host_rows(l, nullptr, n);
  };
  switch (req.kind) {
    case ScoreRequest::Kind::none:
      return Status::ok();
    case ScoreRequest::Kind::kv_similarity:  // this step's row only
      *kc = k;
      *vc = v;
      return Status::ok();
    case ScoreRequest::Kind::blocks:
      if (req.n_key_rows > 0 && host_tier_bindable()) {
        host_keys(req.n_key_rows);  // blocks that are not active need not come back to be scored
      } else {
        WT_TRY(kv_->require(l, nullptr, 0));
        *kc = kv_->k_pool();
        *key_ids = kv_->device_rows(l, nullptr, kv_->n_rows(l));
      }
      return Status::ok();
    case ScoreRequest::Kind::key_bounds:
      // The bounds need no key once built; they are built from the host tier (finish_prefill
      // predicts none of the layer's own blocks; the prefetch may still follow the layer
      // before's choice, paged_kv.cpp).
      if (key_bounds_rows_[static_cast<size_t>(l)] == req.n_cols) return Status::ok();
      if (host_tier_bindable()) {
        host_keys(req.n_cols);
        return Status::ok();
      }
      [[fallthrough]];  // a host tier too large for one binding: the layer's blocks, gathered
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
