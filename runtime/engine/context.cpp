// Context creation: every byte a context uses is in one arena (a device part and a pinned
// host part), allocated before the first token runs and laid out by lay_out_arena()
// (context_layout.h) — the same function the budget planner of platform/ measures with.
#include "context.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "backends/weight_types.h"
#include "context_budget.h"
#include "runtime/model/rope_scaling.h"
#include "runtime/prune/registry.h"
#include "model_device.h"
#include "op_runner.h"

namespace wt {

Status Context::setup(const Model& model, const ContextOptions& options, std::unique_ptr<Context>* out) {
  const Hparams& hp = model.hp;
  if (options.n_ctx < 0)
    return error(WT_ERR_INVALID_ARGUMENT, "n_ctx must be >= 0 (0 = the model's " + std::to_string(hp.n_ctx_train) + ")");
  if (options.n_ctx > kMaxContextTokens)
    return error(WT_ERR_INVALID_ARGUMENT, "n_ctx " + std::to_string(options.n_ctx) + " is above the limit of " +
                                              std::to_string(kMaxContextTokens));
  // The default is the model's context, which a file or YaRN's factor may put above the limit.
  if (options.n_ctx == 0 && hp.n_ctx_train > kMaxContextTokens)
    return error(WT_ERR_INVALID_ARGUMENT, "n_ctx 0 asks for the model's context, " + std::to_string(hp.n_ctx_train) +
                                              " tokens, above the limit of " + std::to_string(kMaxContextTokens) +
                                              ": give n_ctx");
  if (options.n_threads < 0 || options.n_threads > 1024)
    return error(WT_ERR_INVALID_ARGUMENT, "n_threads must be in [0, 1024]");
  if (hp.n_rot > 512 || hp.n_rot % 2 != 0 || hp.head_dim > 256)
    return error(WT_ERR_UNSUPPORTED, "head_dim " + std::to_string(hp.head_dim) + " / n_rot " +
                                         std::to_string(hp.n_rot) + ": the CPU attention supports head_dim <= 256");
  // The CPU attention's tiles hold the query heads of one KV head (at most 64) side by side.
  if (hp.n_head_kv <= 0 || hp.n_head / hp.n_head_kv > 64)
    return error(WT_ERR_UNSUPPORTED, std::to_string(hp.n_head) + " query heads over " + std::to_string(hp.n_head_kv) +
                                         " KV heads: the CPU attention supports at most 64 per KV head");
  std::unique_ptr<Context> ctx(new Context(model, options));
  ctx->n_ctx_ = options.n_ctx > 0 ? options.n_ctx : (hp.n_ctx_train > 0 ? hp.n_ctx_train : 4096);
  const PruneShape shape{hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, ctx->n_ctx_};
  WT_TRY(make_policy(options.prune, shape, &ctx->prune_, &ctx->policy_));
  const size_t nl = static_cast<size_t>(hp.n_layer);
  ctx->kv_len_.assign(nl, 0);
  ctx->attended_n_.assign(nl, -1);
  ctx->key_bounds_rows_.assign(nl, 0);
  if (options.max_new_tokens < 0)
    return error(WT_ERR_INVALID_ARGUMENT, "max_new_tokens must be >= 0 (0 = no bound: n_ctx KV rows in every layer)");
  ctx->kv_cap_.resize(nl);
  for (int32_t l = 0; l < hp.n_layer; ++l)
    ctx->kv_cap_[static_cast<size_t>(l)] =
        std::min(kv_capacity(ctx->policy_.get(), l, ctx->n_ctx_, options.max_new_tokens),
                 sliding_kv_rows(hp, l, ctx->n_ctx_, options.n_batch_rows));
  ctx->prune_stats_.kv_rows.assign(nl, 0);
  ctx->prune_stats_.hidden_rows.assign(nl, 0);
  ctx->prune_stats_.kv_bytes.assign(nl, 0);
  if (model.device) {
    const BackendCaps& caps = model.device->backend().caps();
    WT_TRY(check_kv_type(hp, options.kv_type, caps.kv_types, caps.name));
  } else {
    WT_TRY(check_kv_type(hp, options.kv_type, kv_types_of(WT_BACKEND_CPU), "cpu"));
  }
  if (model.device) {
    ctx->device_ = model.device.get();
    ctx->backend_ = &ctx->device_->backend();
  } else {
    BackendOptions bo;
    bo.n_threads = options.n_threads;
    bo.fixed_threads = options.fixed_threads;
    WT_TRY(create_cpu_backend(bo, &ctx->own_backend_));
    ctx->backend_ = ctx->own_backend_.get();
  }
  WT_TRY(check_sliding_window(hp, ctx->policy_ != nullptr, options.kv_device_blocks > 0,
                              ctx->backend_->caps().gemma_kernels, ctx->backend_->caps().name));
  // A policy that scores blocks by their key bounds needs the two ops on the backend (every
  // backend has them today): refused here, never at the first decode step.
  if (ctx->policy_ && ctx->policy_->key_bounds_block() > 0)
    for (Op op : {Op::key_bounds, Op::bound_scores}) {
      const char* why = nullptr;
      if (!ctx->backend_->supports(op, &why))
        return error(WT_ERR_UNSUPPORTED, std::string(find_prune_method(ctx->prune_.method)->name) +
                                             " with key bounds: the " + ctx->backend_->caps().name + " backend has no " +
                                             op_name(op) + " (" + (why ? why : "") + ")");
    }
  *out = std::move(ctx);
  return Status::ok();
}

Status Context::create(const Model& model, const ContextOptions& options, std::unique_ptr<Context>* out) {
  std::unique_ptr<Context> ctx;
  WT_TRY(setup(model, options, &ctx));
  {
    std::unique_lock<std::mutex> lock = ctx->claim_backend();
    WT_TRY(ctx->allocate());
  }
  *out = std::move(ctx);
  return Status::ok();
}

Status Context::plan(const Model& model, const ContextOptions& options, ContextPlan* out) {
  std::unique_ptr<Context> ctx;
  WT_TRY(setup(model, options, &ctx));
  ArenaInputs in;
  WT_TRY(ctx->arena_inputs(&in));
  // The rows create() would lower the default n_batch_rows to (memory_info needs no device
  // lock: Backend::memory_info); where the memory cannot be read (memory_limit then leaves
  // `limit` as it was), against memory_budget_bytes alone. No budget check here.
  MemoryLimit limit;
  limit.budget_bytes = options.memory_budget_bytes;
  (void)memory_limit(options.memory_budget_bytes, *ctx->backend_, &limit);
  ctx->fit_batch_rows(limit, &in);
  // Where no number of rows fits, the plan whose figures create's refusal gives.
  if (const int32_t rows = refused_batch_rows(in, limit)) in.n_batch_rows = rows;
  out->n_ctx = ctx->n_ctx_;
  out->batch_rows = slice_rows(in);
  out->weights_bytes = model.weight_bytes;
  out->arena = lay_out_arena(in, ArenaBases{}, nullptr);
  out->driver_bytes = ctx->backend_->caps().queued_work_bytes;
  return Status::ok();
}

Context::~Context() {
  if (!backend_ || (!arena_.device && !host_arena_.host)) return;
  std::unique_lock<std::mutex> lock = claim_backend();
  if (kv_) kv_->release();
  if (arena_.device) backend_->free(&arena_);
  if (host_arena_.host) backend_->free(&host_arena_);
}

std::unique_lock<std::mutex> Context::claim_backend() {
  if (!device_) return {};
  std::unique_lock<std::mutex> lock = device_->lock();
  backend_->set_workspace(workspace_);
  return lock;
}

Status Context::arena_inputs(ArenaInputs* out) const {
  ArenaInputs& in = *out;
  in.hp = &model_.hp;
  in.layers = &model_.layers;
  in.output = &model_.output;
  in.n_ctx = n_ctx_;
  in.n_logit_rows = options_.logits_all ? n_ctx_ : 1;
  in.f32_activations = options_.f32_activations;
  in.prune = policy_ ? &prune_ : nullptr;
  in.key_bounds_block = policy_ ? policy_->key_bounds_block() : 0;
  in.key_bounds_first_layer = policy_ ? policy_->key_bounds_first_layer() : 0;
  in.backend = backend_;
  in.kv_device_blocks = options_.kv_device_blocks;
  in.kv_block_tokens = options_.kv_block_tokens;
  in.kv_rows = &kv_cap_;
  in.kv_type = options_.kv_type;
  in.n_batch_rows = options_.n_batch_rows;
  in.kv_pager_in_place = pager_in_place(options_.kv_device_blocks, options_.kv_pager_copy, backend_->caps().unified_memory);
  in.device_part_unmapped = backend_->caps().device_only_unmapped;
  in.transfer_bytes = options_.transfer_bytes;
  if (options_.kv_device_blocks < 0)
    return error(WT_ERR_INVALID_ARGUMENT, "kv_device_blocks must be >= 0 (0 = no pager)");
  if (options_.kv_device_blocks > 0)
    WT_TRY(PagedKv::check_shape(n_ctx_, options_.kv_block_tokens, options_.kv_device_blocks));
  return Status::ok();
}

void Context::fit_batch_rows(const MemoryLimit& limit, ArenaInputs* in) {
  const int32_t rows = wt::fit_batch_rows(*in, limit);
  if (rows == 0) return;
  // In options_ too, so that every later arena_inputs() lays out the arena allocated.
  options_.n_batch_rows = in->n_batch_rows = rows;
  batch_rows_lowered_ = true;
}

Status Context::allocate() {
  n_logit_rows_ = options_.logits_all ? n_ctx_ : 1;
  ArenaInputs in;
  WT_TRY(arena_inputs(&in));
  MemoryLimit limit;
  WT_TRY(memory_limit(options_.memory_budget_bytes, *backend_, &limit));
  fit_batch_rows(limit, &in);
  output_rows_ = output_rows(in);
  batch_rows_ = slice_rows(in);

  // The same layout twice: measure, then place.
  const ArenaBytes bytes = lay_out_arena(in, ArenaBases{}, nullptr);
  WT_TRY(check_arena_budget(in, bytes, limit));
  // Kernels alone read and write the device part (the host through context_transfer.cpp).
  WT_TRY(backend_->alloc(bytes.total_bytes - bytes.host_bytes, MemoryKind::device_only, &arena_));
  WT_TRY(backend_->alloc(bytes.host_bytes, MemoryKind::host_pinned, &host_arena_));
  stats_.arena_bytes = bytes.total_bytes;
  stats_.kv_bytes = bytes.kv_bytes;
  if (options_.kv_device_blocks > 0) {
    PagedKvParams pp = paged_kv_params(in);
    pp.sync_swaps = options_.kv_sync_swaps;
    kv_ = std::make_unique<PagedKv>();
    WT_TRY(kv_->init(*backend_, pp));
    stats_.pager_device_bytes = bytes.pager_device_bytes;
    stats_.pager_host_bytes = bytes.pager_host_bytes;
  }
  ArenaViews v;
  lay_out_arena(in, ArenaBases{static_cast<char*>(arena_.device), static_cast<char*>(host_arena_.host)}, &v);
  act_ = v.act;
  k_cache_ = std::move(v.k_cache);
  v_cache_ = std::move(v.v_cache);
  positions_ = v.positions;
  token_ids_ = v.token_ids;
  rope_divisors_ = v.rope_divisors;
  rope_freqs_ = v.rope_freqs;
  rope_angles_ = v.rope_angles;
  rope_freqs_swa_ = v.rope_freqs_swa;
  rope_angles_swa_ = v.rope_angles_swa;
  row_tmp_ = v.row_tmp;
  tok_tmp_ = v.tok_tmp;
  kv_pos_ = v.kv_pos;
  kv_pos_at_ = std::move(v.kv_pos_at);
  origin_ = v.origin;
  scores_ = v.scores;
  pooled_ = v.pooled;
  topk_in_ = v.topk_in;
  score_capacity_ = v.score_capacity;
  anchors_ = v.anchors;
  transfer_ = v.transfer;
  transfer_bytes_ = v.transfer_bytes;
  key_bounds_ = v.key_bounds;
  if (v.ranking) ranking_ = RankingSink{v.ranking, model_.hp.n_layer, n_ctx_, 0};
  attended_ = v.attended;
  Buffer ws = arena_;
  ws.offset = v.workspace_offset;
  ws.size_bytes = bytes.workspace_bytes;
  workspace_ = ws;
  backend_->set_workspace(ws);

  const Hparams& hp = model_.hp;
  if (!model_.rope_freqs.empty()) {
    const float* f = static_cast<const float*>(model_.rope_freqs.data);
    for (int32_t i = 0; i < hp.n_rot / 2; ++i) rope_divisors_[i] = f[i];
  } else if (const std::vector<float>* f = longrope_factors(model_, n_ctx_)) {
    std::copy(f->begin(), f->end(), rope_divisors_);
  } else if (has_rope_divisors(hp)) {
    rope_divisors(hp, rope_divisors_);
  } else {
    rope_divisors_ = nullptr;
  }
  // The divisors are read here, once: a decode step makes its angles from these on the host.
  rope_freqs(rope_op(Tensor{}, Tensor{}, nullptr, hp, rope_divisors_), rope_freqs_);
  hp_swa_ = hp;
  hp_swa_.rope_theta = hp.rope_theta_swa;
  hp_swa_.rope_scaling = RopeScaling::none;
  hp_swa_.rope_factor = 1.0f;
  hp_swa_.rope_attn_factor = 1.0f;  // none on the sliding layers (refused with them at load anyway)
  if (rope_freqs_swa_) rope_freqs(rope_op(Tensor{}, Tensor{}, nullptr, hp_swa_, nullptr), rope_freqs_swa_);
  attn_scale_ = attention_scale(hp);
  return Status::ok();
}

Status Context::check_kv_room(int32_t l, int32_t rows_after) const {
  const int32_t cap = kv_cap_[static_cast<size_t>(l)];
  if (rows_after <= cap) return Status::ok();
  if (slides(l)) {  // it keeps its last window - 1 rows and takes a pass (at most) at a time
    const int32_t len = kv_len_[static_cast<size_t>(l)], pass = static_cast<int32_t>(act_.x.ne[1]);
    if (std::min(len, model_.hp.swa_window - 1) + std::min(rows_after - len, pass) <= cap) return Status::ok();
  }
  return error(WT_ERR_CONTEXT_FULL,
               "layer " + std::to_string(l) + " would hold " + std::to_string(rows_after) + " KV rows; it is sized for " +
                   std::to_string(cap) + " (the method's budget at a prompt of " +
                   std::to_string(n_ctx_ - options_.max_new_tokens) + " plus max_new_tokens " +
                   std::to_string(options_.max_new_tokens) + "); create the context with a larger max_new_tokens, or 0");
}

Status Context::check_tokens(const int32_t* tokens, int32_t n_tokens) const {
  if (!tokens || n_tokens <= 0) return error(WT_ERR_INVALID_ARGUMENT, "no tokens given");
  if (n_tokens > n_ctx_ - n_past_)
    return error(WT_ERR_CONTEXT_FULL, std::to_string(n_tokens) + " tokens do not fit: the context holds " +
                                          std::to_string(n_past_) + " of " + std::to_string(n_ctx_));
  for (int32_t i = 0; i < n_tokens; ++i) {
    if (tokens[i] < 0 || tokens[i] >= model_.hp.n_vocab)
      return error(WT_ERR_INVALID_ARGUMENT, "token " + std::to_string(i) + " has id " + std::to_string(tokens[i]) +
                                                " outside [0, " + std::to_string(model_.hp.n_vocab) + ")");
  }
  return Status::ok();
}

Status Context::prefill(const int32_t* tokens, int32_t n_tokens) {
  WT_TRY(check_tokens(tokens, n_tokens));
  std::unique_lock<std::mutex> lock = claim_backend();
  const auto t0 = std::chrono::steady_clock::now();
  prefill_tokens_ = n_tokens;  // for check_continue, as pass_row0_; both cleared on every way out
  struct Running {
    int32_t& n;
    int32_t& row0;
    ~Running() { n = 0, row0 = -1; }
  } running{prefill_tokens_, pass_row0_};
  Status st;
  if (policy_ && n_past_ == 0) {
    try {
      st = prefill_pruned(tokens, n_tokens);
    } catch (...) {  // see decode()
      reset();
      throw;
    }
  } else {
    for (int32_t l = 0; l < model_.hp.n_layer && st.is_ok(); ++l) st = check_kv_room(l, kv_len_[static_cast<size_t>(l)] + n_tokens);
    if (!st.is_ok()) return st;  // nothing changed
    for (int32_t i = 0; i < n_tokens; ++i) row_tmp_[i] = n_past_ + i;
    // In passes of the rows the activations hold (pass_rows()), each appending to the KV. Never
    // a last pass of one row: it would run the kernels of a decode step, whose rounding
    // differs from the prompt kernels' (the last two passes are then step - 1 and 2 rows;
    // pass_rows() is at least 3 where a binding holds 3).
    const int32_t step = static_cast<int32_t>(act_.x.ne[1]);
    try {
      for (int32_t r0 = 0, nr = 0; r0 < n_tokens && st.is_ok(); r0 += nr) {
        nr = std::min(step, n_tokens - r0);
        if (n_tokens - r0 - nr == 1 && nr > 2) nr -= 1;
        if (n_tokens > step) pass_row0_ = r0;  // progress counts the passes
        st = forward(tokens + r0, row_tmp_ + r0, nr, nullptr, nullptr, r0);
      }
    } catch (...) {
      reset();
      throw;
    }
    if (st.is_ok()) n_past_ += n_tokens;
  }
  abort_.store(false, std::memory_order_relaxed);
  if (!st.is_ok()) {
    reset();
    return st;
  }
  stats_.prefill_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  stats_.n_prefill_tokens += n_tokens;
  return Status::ok();
}

Status Context::decode(int32_t token) {
  WT_TRY(check_tokens(&token, 1));
  std::unique_lock<std::mutex> lock = claim_backend();
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t pos = n_past_;
  for (int32_t l = 0; l < model_.hp.n_layer; ++l) WT_TRY(check_kv_room(l, kv_len_[static_cast<size_t>(l)] + 1));
  Status st;
  try {
    st = forward(&token, &pos, 1, nullptr, nullptr);
  } catch (...) {
    // An allocation failing while an error's message is built (the API turns it into
    // WT_ERR_OUT_OF_MEMORY) leaves the layers as half done as a failed status does.
    reset();
    throw;
  }
  if (!st.is_ok()) {
    // The layers before the failure took the new row, the later ones did not (and the pager
    // and a decoding policy moved on with them): no state to continue from, so the context
    // starts over, as after a failed prefill.
    reset();
    return st;
  }
  n_past_ += 1;
  stats_.decode_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  stats_.n_decode_tokens += 1;
  return Status::ok();
}

const float* Context::logits(int32_t row) const {
  if (last_rows_ == 0 || row < -1) return nullptr;
  if (row == -1) row = last_rows_ - 1;
  if (row >= last_rows_) return nullptr;
  // Without logits_all (or after a pruned prefill) only the last row exists, at index 0.
  const bool all = options_.logits_all && !last_row_only_;
  const int32_t slot = all ? row : (row == last_rows_ - 1 ? 0 : -1);
  if (slot < 0) return nullptr;
  return act_.logits.row<float>(slot);
}

const float* Context::token_ranking(int32_t layer, int32_t* n_prompt) const {
  if (!ranking_.rows || ranking_.n_prompt == 0) return nullptr;
  *n_prompt = ranking_.n_prompt;
  return ranking_.row(layer);
}

void Context::begin_ranking(int32_t n_prompt) {
  if (!ranking_.rows) return;
  ranking_.n_prompt = n_prompt;
  for (int32_t l = -1; l < model_.hp.n_layer; ++l) ranking_.clear(l);
  policy_->set_ranking_sink(&ranking_);
}

const int32_t* Context::attended_rows(int32_t l, int32_t* n) const {
  const int32_t count = attended_n_[static_cast<size_t>(l)];
  if (!attended_ || count < 0) return nullptr;
  *n = count;
  return attended_ + static_cast<size_t>(l) * static_cast<size_t>(n_ctx_);
}

const int32_t* Context::kv_positions(int32_t l, int32_t h) const { return kv_pos_of(l, h); }

void Context::reset() {
  n_past_ = 0;
  reindexed_ = 0;
  reindexed_from_ = 0;
  last_rows_ = 0;
  last_row_only_ = false;
  policy_decoding_ = false;
  pruned_end_ = 0;
  ranking_.n_prompt = 0;
  if (policy_) policy_->set_ranking_sink(nullptr);  // a failed prefill may have left it set
  std::fill(attended_n_.begin(), attended_n_.end(), -1);
  std::fill(key_bounds_rows_.begin(), key_bounds_rows_.end(), 0);
  for (int32_t& len : kv_len_) len = 0;
  if (kv_) {
    kv_->clear();
    kv_->reset_counters();
  }
  stats_.n_prefill_tokens = stats_.n_decode_tokens = 0;
  stats_.prefill_ms = stats_.decode_ms = 0;
  backend_->worker_counts(&workers0_);
}

ContextStats Context::stats() const {
  ContextStats s = stats_;
  WorkerCounts now;
  if (backend_->worker_counts(&now) && now.launches > workers0_.launches)
    s.threads_per_op = static_cast<double>(now.worker_launches - workers0_.worker_launches) /
                       static_cast<double>(now.launches - workers0_.launches);
  return s;
}

Status Context::truncate(int32_t n) {
  if (n < 0 || n > n_past_)
    return error(WT_ERR_INVALID_ARGUMENT, "cannot keep " + std::to_string(n) + " tokens: the context holds " +
                                              std::to_string(n_past_));
  if (n == n_past_) return Status::ok();
  if (n == 0) {
    reset();
    return Status::ok();
  }
  if (n < pruned_end_)
    return error(WT_ERR_UNSUPPORTED, "cannot keep " + std::to_string(n) + " tokens: the first " +
                                         std::to_string(pruned_end_) +
                                         " are a pruned prompt (or a loaded state of one), whose KV was chosen over "
                                         "all of them; keep at least that many, or reset and prefill again");
  const Hparams& hp = model_.hp;
  const int32_t drop = n_past_ - n;
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    const int32_t len = kv_len_[static_cast<size_t>(l)];
    // A sliding layer holds the positions [n_past - len, n_past); the token at n reads back
    // to n - (window - 1).
    const int32_t first = n_past_ - len, needed = std::max(0, n - (hp.swa_window - 1));
    if (slides(l) && first > needed)
      return error(WT_ERR_UNSUPPORTED, "cannot keep " + std::to_string(n) + " tokens: sliding-window layer " +
                                           std::to_string(l) + " holds positions from " + std::to_string(first) +
                                           " on, and the next token reads back to " + std::to_string(needed));
    if (len < drop) return error(WT_ERR_INTERNAL, "layer " + std::to_string(l) + " holds fewer rows than it drops");
  }
  std::unique_lock<std::mutex> lock = claim_backend();
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    int32_t& len = kv_len_[static_cast<size_t>(l)];
    len -= drop;
    const Status st = kv_ ? kv_->truncate(l, len) : Status::ok();
    if (!st.is_ok()) {  // layers before this one were cut: nothing consistent to keep
      reset();
      return st;
    }
    int32_t& bounded = key_bounds_rows_[static_cast<size_t>(l)];
    if (bounded > len) bounded = 0;
  }
  std::fill(attended_n_.begin(), attended_n_.end(), -1);
  n_past_ = n;
  last_rows_ = 0;
  last_row_only_ = false;
  return Status::ok();
}

}  // namespace wt
