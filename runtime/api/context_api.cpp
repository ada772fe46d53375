// wt_context_*, sampling and generation entry points.
#include <algorithm>
#include <string>

#include "handles.h"
#include "params_abi.h"
#include "runtime/engine/context_layout.h"

using wt::Status;
using wt::api::guarded;
using wt::api::require;

namespace {

// The caller's params (by their struct_size; NULL: the defaults) as engine options.
Status read_options(const wt_context_params* params, wt_context_params* read, wt::ContextOptions* out) {
  WT_TRY(wt::api::read_params(params, read));
  const wt_context_params& p = *read;
  wt::ContextOptions& o = *out;
  o.n_ctx = p.n_ctx;
  o.n_threads = p.n_threads;
  o.logits_all = p.logits_all;
  o.progress = p.progress;
  o.progress_user = p.progress_user;
  const int32_t matmul_mode = wt::api::raw_value(p.matmul_mode);
  if (matmul_mode != WT_MATMUL_FAST && matmul_mode != WT_MATMUL_F32)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "matmul_mode " + std::to_string(matmul_mode) +
                                                  " is not WT_MATMUL_FAST (0) or WT_MATMUL_F32 (1)");
  o.f32_activations = matmul_mode == WT_MATMUL_F32;
  o.prune = p.prune;
  o.memory_budget_bytes = p.memory_budget_bytes;
  o.max_new_tokens = p.max_new_tokens;
  o.kv_device_blocks = p.kv_device_blocks;
  o.kv_block_tokens = p.kv_block_tokens;
  o.kv_sync_swaps = p.kv_sync_swaps;
  const int32_t kv_type = wt::api::raw_value(p.kv_type);
  if (kv_type != WT_KV_F32 && kv_type != WT_KV_F16 && kv_type != WT_KV_Q8_0)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "kv_type " + std::to_string(kv_type) +
                                                  " is not a wt_kv_type (WT_KV_F32 0, WT_KV_F16 1, WT_KV_Q8_0 2)");
  o.kv_type = wt::kv_dtype(static_cast<wt_kv_type>(kv_type));
  if (p.kv_pager_flags & ~WT_KV_PAGER_COPY)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "kv_pager_flags " + std::to_string(p.kv_pager_flags) +
                                                  ": the only flag is WT_KV_PAGER_COPY (1)");
  o.kv_pager_copy = (p.kv_pager_flags & WT_KV_PAGER_COPY) != 0;
  if (p.n_batch_rows < 0)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "n_batch_rows " + std::to_string(p.n_batch_rows) +
                                                  " is negative (0: WT_BATCH_ROWS_DEFAULT)");
  o.n_batch_rows = p.n_batch_rows;
  if (p.cpu_flags & ~WT_CPU_FIXED_THREADS)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "cpu_flags " + std::to_string(p.cpu_flags) +
                                                  ": the only flag is WT_CPU_FIXED_THREADS (1)");
  o.fixed_threads = (p.cpu_flags & WT_CPU_FIXED_THREADS) != 0;
  return Status::ok();
}

// A sampler reads n_vocab floats of its model from the logits row: the context's model
// must have as many.
Status check_sampler(const wt_sampler& s, const wt_context& ctx) {
  const int32_t n_vocab = ctx.ctx->model().hp.n_vocab;
  if (s.sampler.n_vocab() != n_vocab)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "the sampler was created for a model of " +
                                                  std::to_string(s.sampler.n_vocab()) +
                                                  " tokens; the context's model has " + std::to_string(n_vocab));
  return Status::ok();
}

// A layer of the context's model: in [lowest, n_layer). `note` says what a lowest below 0
// stands for.
Status check_layer(const wt::Context& c, int32_t layer, int32_t lowest = 0, const char* note = "") {
  const int32_t n_layer = c.model().hp.n_layer;
  if (layer < lowest || layer >= n_layer)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "layer " + std::to_string(layer) + " is outside [" +
                                                  std::to_string(lowest) + ", " + std::to_string(n_layer) + ")" +
                                                  note);
  return Status::ok();
}

}  // namespace

extern "C" {

wt_context_params wt_context_default_params(void) {
  wt_context_params p;
  p.struct_size = sizeof p;
  p.n_ctx = 0;
  p.n_threads = 0;
  p.logits_all = false;
  p.progress = nullptr;
  p.progress_user = nullptr;
  p.matmul_mode = WT_MATMUL_FAST;
  p.prune = wt_prune_default_params();
  p.memory_budget_bytes = 0;
  p.max_new_tokens = 0;
  p.kv_device_blocks = 0;
  p.kv_block_tokens = 64;
  p.kv_sync_swaps = false;
  p.kv_type = WT_KV_F16;
  p.kv_pager_flags = 0;
  p.n_batch_rows = 0;
  p.cpu_flags = 0;
  return p;
}

wt_status wt_context_plan(const wt_model* model, const wt_context_params* params, wt_context_plan_info* out_plan) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_plan, "out_plan"));
    wt_context_params p;
    wt::ContextOptions o;
    WT_TRY(read_options(params, &p, &o));
    wt::ContextPlan cp;
    WT_TRY(wt::Context::plan(*model->model, o, &cp));
    wt_context_plan_info plan{};
    plan.n_ctx = cp.n_ctx;
    plan.weights_bytes = cp.weights_bytes;
    plan.arena_bytes = cp.arena.total_bytes;
    plan.kv_bytes = cp.arena.kv_bytes;
    plan.pager_device_bytes = cp.arena.pager_device_bytes;
    plan.pager_host_bytes = cp.arena.pager_host_bytes;
    plan.context_bytes = cp.arena.all_bytes();
    plan.driver_bytes = cp.driver_bytes;
    plan.batch_rows = cp.batch_rows;
    return wt::api::write_output(plan, out_plan);
  });
}

wt_status wt_context_create(const wt_model* model, const wt_context_params* params, wt_context** out_ctx) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_ctx, "out_ctx"));
    wt_context_params p;
    wt::ContextOptions o;
    WT_TRY(read_options(params, &p, &o));
    auto c = std::make_unique<wt_context>();
    c->owner = model;
    WT_TRY(wt::Context::create(*model->model, o, &c->ctx));
    const wt::ContextStats& st = c->ctx->stats();
    wt::api::log(WT_LOG_INFO, "context: n_ctx " + std::to_string(c->ctx->n_ctx()) + ", arena " +
                                  std::to_string(st.arena_bytes) + " bytes (KV " + std::to_string(st.kv_bytes) +
                                  "), prompt rows at once " + std::to_string(c->ctx->batch_rows()) +
                                  ", backend " + c->ctx->backend().caps().name + " x" +
                                  std::to_string(c->ctx->backend().caps().n_threads) + " threads, matmul " +
                                  c->ctx->backend().caps().simd +
                                  (p.prune.method != WT_PRUNE_FULL
                                       ? std::string(", prune ") + wt_prune_method_name(p.prune.method)
                                       : std::string()));
    if (c->ctx->batch_rows_lowered())
      wt::api::log(WT_LOG_WARN, "context: the default n_batch_rows (" +
                                    std::to_string(std::min(WT_BATCH_ROWS_DEFAULT, c->ctx->n_ctx())) +
                                    " rows at once) would not fit the memory limit; the prompt runs " +
                                    std::to_string(c->ctx->batch_rows()) + " rows at once");
    *out_ctx = c.release();
    return Status::ok();
  });
}

void wt_context_free(wt_context* ctx) { delete ctx; }

wt_status wt_context_prefill(wt_context* ctx, const wt_token* tokens, size_t n_tokens) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    const wt::api::RunGuard run(*ctx, "wt_context_prefill");
    WT_TRY(run.status());
    WT_TRY(require(tokens, "tokens"));
    if (n_tokens == 0) return wt::error(WT_ERR_INVALID_ARGUMENT, "n_tokens is 0");
    if (n_tokens > static_cast<size_t>(INT32_MAX))
      return wt::error(WT_ERR_CONTEXT_FULL, std::to_string(n_tokens) + " tokens exceed any context");
    return ctx->ctx->prefill(tokens, static_cast<int32_t>(n_tokens));
  });
}

wt_status wt_context_decode(wt_context* ctx, wt_token token) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    const wt::api::RunGuard run(*ctx, "wt_context_decode");
    WT_TRY(run.status());
    return ctx->ctx->decode(token);
  });
}

wt_status wt_context_logits(const wt_context* ctx, int32_t row, const float** out_logits) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_logits, "out_logits"));
    const float* l = ctx->ctx->logits(row);
    if (!l) {
      if (ctx->ctx->n_last_rows() == 0)
        return wt::error(WT_ERR_INVALID_ARGUMENT, "no logits yet: run a prefill or decode first");
      return wt::error(WT_ERR_INVALID_ARGUMENT, "no logits for row " + std::to_string(row) + ": the last call ran " +
                                                    std::to_string(ctx->ctx->n_last_rows()) +
                                                    " rows; row -1 is the last, and rows other than the last need "
                                                    "logits_all");
    }
    *out_logits = l;
    return Status::ok();
  });
}

void wt_context_abort(wt_context* ctx) {
  if (ctx && ctx->ctx) ctx->ctx->request_abort();
}

int32_t wt_context_n_past(const wt_context* ctx) { return ctx ? ctx->ctx->n_past() : 0; }

void wt_context_reset(wt_context* ctx) {
  // From a callback of a running call it would pull the KV from under it: ignored (whittle.h).
  if (ctx && !ctx->running) ctx->ctx->reset();
}

wt_status wt_context_truncate(wt_context* ctx, int32_t n_keep) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    const wt::api::RunGuard run(*ctx, "wt_context_truncate");
    WT_TRY(run.status());
    return ctx->ctx->truncate(n_keep);
  });
}

wt_status wt_context_get_stats(const wt_context* ctx, wt_context_stats* out_stats) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_stats, "out_stats"));
    const wt::ContextStats& s = ctx->ctx->stats();
    wt_context_stats o{};
    o.n_prefill_tokens = s.n_prefill_tokens;
    o.prefill_ms = s.prefill_ms;
    o.n_decode_tokens = s.n_decode_tokens;
    o.decode_ms = s.decode_ms;
    o.arena_bytes = s.arena_bytes;
    o.kv_bytes = s.kv_bytes;
    o.pager_device_bytes = s.pager_device_bytes;
    o.pager_host_bytes = s.pager_host_bytes;
    const wt::PagedKv* kv = ctx->ctx->paged_kv();
    const wt::PagerCounters c = kv ? kv->counters() : wt::PagerCounters{};
    o.pager_bytes_to_device = c.bytes_to_device;
    o.pager_bytes_to_host = c.bytes_to_host;
    o.pager_blocks_in = c.n_blocks_in;
    o.pager_blocks_on_demand = c.n_blocks_on_demand;
    o.pager_blocks_evicted = c.n_blocks_evicted;
    o.pager_sync_wait_ms = c.sync_wait_ms;
    o.pager_copy_ms = kv ? c.copy_ms : 0;
    o.pager_wait_ms = kv ? c.wait_ms : 0;
    o.pager_transfers = c.n_transfers;
    o.batch_rows = ctx->ctx->batch_rows();
    o.threads_per_op = s.threads_per_op;
    return wt::api::write_output(o, out_stats);
  });
}

wt_status wt_context_get_kv_residency(const wt_context* ctx, int32_t layer, uint64_t* out_device_bytes,
                                      uint64_t* out_host_bytes) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_device_bytes, "out_device_bytes"));
    WT_TRY(require(out_host_bytes, "out_host_bytes"));
    const wt::Context& c = *ctx->ctx;
    const wt::Hparams& hp = c.model().hp;
    if (layer < 0 || layer >= hp.n_layer)
      return wt::error(WT_ERR_INVALID_ARGUMENT, "layer " + std::to_string(layer) + " outside [0, " +
                                                    std::to_string(hp.n_layer) + ")");
    const uint64_t row_bytes = c.kv_row_bytes();
    uint64_t dev_rows = 0, host_rows = 0;
    if (const wt::PagedKv* kv = c.paged_kv()) {
      const wt::BlockTable& t = kv->pager().table(layer);
      for (int32_t b = 0; b < t.n_blocks(); ++b) {
        if (t.at(b).device_valid) dev_rows += static_cast<uint64_t>(t.n_rows(b));
        if (t.at(b).host_valid) host_rows += static_cast<uint64_t>(t.n_rows(b));
      }
    } else {
      dev_rows = static_cast<uint64_t>(c.kv_len(layer));
    }
    *out_device_bytes = dev_rows * row_bytes;
    *out_host_bytes = host_rows * row_bytes;
    return Status::ok();
  });
}

wt_status wt_context_get_prune_stats(const wt_context* ctx, wt_prune_stats* out_stats) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_stats, "out_stats"));
    const wt::PruneStats& s = ctx->ctx->prune_stats();
    wt_prune_stats o{};
    o.method = ctx->ctx->prune_params().method;
    o.n_prompt = s.n_prompt;
    o.n_layer = static_cast<int32_t>(s.kv_rows.size());
    o.selection_layer = s.report.selection_layer;
    o.triggered = s.report.triggered;
    o.n_selected = s.report.n_selected;
    o.kv_rows = s.kv_rows.data();
    o.hidden_rows = s.hidden_rows.data();
    o.kv_bytes = s.kv_bytes.data();
    o.n_attention_skipped = ctx->ctx->policy() ? ctx->ctx->policy()->report().n_attention_skipped : 0;
    o.n_block_swaps = ctx->ctx->policy() ? ctx->ctx->policy()->report().n_block_swaps : 0;
    o.asl_min_ratio = s.report.asl_min_ratio;
    o.asl_min_ratio_layer = s.report.asl_min_ratio_layer;
    o.asl_ratios = s.report.asl_ratios;
    o.score_ms = s.score_ms;
    o.pass1_ms = s.pass1_ms;
    o.prefill_ms = s.prefill_ms;
    return wt::api::write_output(o, out_stats);
  });
}

wt_status wt_context_get_token_ranking(const wt_context* ctx, int32_t layer, const float** out_scores,
                                       int32_t* out_n) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_scores, "out_scores"));
    WT_TRY(require(out_n, "out_n"));
    const wt::Context& c = *ctx->ctx;
    WT_TRY(check_layer(c, layer, -1, " (-1: the final ranking)"));
    if (!c.records_ranking())
      return wt::error(WT_ERR_INVALID_ARGUMENT,
                       "token rankings are not recorded: create the context with a pruning method and "
                       "prune.record_ranking = 1");
    int32_t n = 0;
    const float* row = c.token_ranking(layer, &n);
    if (!row) return wt::error(WT_ERR_INVALID_ARGUMENT, "no pruned prefill since the last reset: nothing is ranked");
    *out_scores = row;
    *out_n = n;
    return Status::ok();
  });
}

wt_status wt_context_get_attended_rows(const wt_context* ctx, int32_t layer, const int32_t** out_rows,
                                       int32_t* out_n) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_rows, "out_rows"));
    WT_TRY(require(out_n, "out_n"));
    const wt::Context& c = *ctx->ctx;
    WT_TRY(check_layer(c, layer));
    if (!c.records_ranking())
      return wt::error(WT_ERR_INVALID_ARGUMENT,
                       "attended rows are not recorded: create the context with a pruning method and "
                       "prune.record_ranking = 1");
    int32_t n = 0;
    const int32_t* rows = c.attended_rows(layer, &n);
    if (!rows)
      return wt::error(WT_ERR_INVALID_ARGUMENT,
                       "the last call that ran the model was not a decode step after a pruned prefill: no rows recorded");
    *out_rows = rows;
    *out_n = n;
    return Status::ok();
  });
}

wt_status wt_context_get_kv_positions(const wt_context* ctx, int32_t layer, int32_t kv_head,
                                      const int32_t** out_positions, int32_t* out_n) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_positions, "out_positions"));
    WT_TRY(require(out_n, "out_n"));
    const wt::Context& c = *ctx->ctx;
    WT_TRY(check_layer(c, layer));
    const int32_t n_head_kv = static_cast<int32_t>(c.model().hp.n_head_kv);
    if (kv_head < 0 || kv_head >= n_head_kv)
      return wt::error(WT_ERR_INVALID_ARGUMENT, "kv_head " + std::to_string(kv_head) + " is outside [0, " +
                                                    std::to_string(n_head_kv) + ")");
    *out_positions = c.kv_positions(layer, kv_head);
    *out_n = c.kv_len(layer);
    return Status::ok();
  });
}

wt_sampler_params wt_sampler_default_params(void) {
  const wt::SamplerOptions d;  // the sampler's own defaults, one place for both
  wt_sampler_params p;
  p.struct_size = sizeof p;
  p.temperature = d.temperature;
  p.top_k = d.top_k;
  p.top_p = d.top_p;
  p.seed = d.seed;
  p.min_p = d.min_p;
  p.repeat_penalty = d.repeat_penalty;
  p.frequency_penalty = d.frequency_penalty;
  p.presence_penalty = d.presence_penalty;
  p.penalty_last_n = d.penalty_last_n;
  return p;
}

wt_status wt_sampler_create(const wt_model* model, const wt_sampler_params* params, wt_sampler** out_sampler) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_sampler, "out_sampler"));
    wt_sampler_params p;
    WT_TRY(wt::api::read_params(params, &p));
    const wt::SamplerOptions o{.temperature = p.temperature,
                               .top_k = p.top_k,
                               .top_p = p.top_p,
                               .seed = p.seed,
                               .min_p = p.min_p,
                               .repeat_penalty = p.repeat_penalty,
                               .frequency_penalty = p.frequency_penalty,
                               .presence_penalty = p.presence_penalty,
                               .penalty_last_n = p.penalty_last_n};
    auto s = std::make_unique<wt_sampler>();
    WT_TRY(wt::Sampler::create(model->model->hp.n_vocab, o, &s->sampler));
    *out_sampler = s.release();
    return Status::ok();
  });
}

void wt_sampler_free(wt_sampler* sampler) { delete sampler; }

wt_status wt_sampler_accept(wt_sampler* sampler, const wt_token* tokens, size_t n_tokens) {
  return guarded([&]() -> Status {
    WT_TRY(require(sampler, "sampler"));
    const wt::api::Claim claim(sampler->user, "sampler");
    WT_TRY(claim.status());
    if (n_tokens > 0) WT_TRY(require(tokens, "tokens"));
    const int32_t n_vocab = sampler->sampler.n_vocab();
    for (size_t i = 0; i < n_tokens; ++i)
      if (tokens[i] < 0 || tokens[i] >= n_vocab)
        return wt::error(WT_ERR_INVALID_ARGUMENT, "token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                                                      ", outside the vocabulary of " + std::to_string(n_vocab));
    sampler->sampler.accept(tokens, n_tokens);
    return Status::ok();
  });
}

wt_status wt_sampler_reset(wt_sampler* sampler) {
  return guarded([&]() -> Status {
    WT_TRY(require(sampler, "sampler"));
    const wt::api::Claim claim(sampler->user, "sampler");
    WT_TRY(claim.status());
    sampler->sampler.reset_history();
    return Status::ok();
  });
}

wt_status wt_sampler_sample(wt_sampler* sampler, const wt_context* ctx, wt_token* out_token) {
  return guarded([&]() -> Status {
    WT_TRY(require(sampler, "sampler"));
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx"), sampler_claim(sampler->user, "sampler");
    WT_TRY(claim.status());
    WT_TRY(sampler_claim.status());
    WT_TRY(require(out_token, "out_token"));
    WT_TRY(check_sampler(*sampler, *ctx));
    const float* logits = ctx->ctx->logits(-1);
    if (!logits) return wt::error(WT_ERR_INVALID_ARGUMENT, "no logits yet: prefill first");
    *out_token = sampler->sampler.sample(logits);
    return Status::ok();
  });
}

wt_status wt_generate(wt_context* ctx, wt_sampler* sampler, int32_t n_max, wt_token_callback on_token, void* user,
                      int32_t* out_n_generated) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    WT_TRY(require(sampler, "sampler"));
    const wt::api::Claim claim(ctx->user, "ctx"), sampler_claim(sampler->user, "sampler");
    WT_TRY(claim.status());
    WT_TRY(sampler_claim.status());
    const wt::api::RunGuard run(*ctx, "wt_generate");
    WT_TRY(run.status());
    if (n_max < 0) return wt::error(WT_ERR_INVALID_ARGUMENT, "n_max must be >= 0, got " + std::to_string(n_max));
    WT_TRY(check_sampler(*sampler, *ctx));
    const float* logits = ctx->ctx->logits(-1);
    if (!logits) return wt::error(WT_ERR_INVALID_ARGUMENT, "no logits yet: prefill first");
    int32_t n = 0;
    Status st;
    while (n < n_max) {
      const wt_token tok = sampler->sampler.sample(ctx->ctx->logits(-1));
      ++n;
      const bool go_on = on_token ? on_token(tok, user) : true;
      if (wt_token_is_end(ctx->owner, tok) || !go_on || n == n_max) break;
      st = ctx->ctx->decode(tok);
      if (!st.is_ok()) break;
    }
    if (out_n_generated) *out_n_generated = n;
    return st;
  });
}

}  // extern "C"
