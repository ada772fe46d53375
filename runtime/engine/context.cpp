// Context creation: every byte a context uses is laid out here, in one arena, before the
// first token runs. (The budget planner of platform/ will size this ahead of time and
// check it against the board; the layout below is what it has to account for.)
#include "context.h"

#include <chrono>
#include <cmath>
#include <string>

#include "model_device.h"

namespace wt {

namespace {

constexpr size_t kAlign = 64;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Hands out aligned slices of one allocation; first pass counts, second pass places.
class ArenaLayout {
 public:
  explicit ArenaLayout(char* base) : base_(base) {}
  void* take(size_t bytes) {
    void* p = base_ ? base_ + used_ : nullptr;
    used_ += align_up(bytes);
    return p;
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

Tensor f32_tensor(ArenaLayout& a, int32_t n_dims, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
  const int64_t ne[3] = {ne0, ne1, ne2};
  const size_t bytes = sizeof(float) * static_cast<size_t>(ne0 * ne1 * ne2);
  return make_tensor(a.take(bytes), DType::f32, n_dims, ne);
}

// Llama 3.1 frequency scaling, as divisors of each rotary frequency.
void llama3_divisors(const Hparams& hp, float* out) {
  const double pi = 3.14159265358979323846;
  const double low_wavelen = hp.rope_orig_ctx / hp.rope_low_freq_factor;
  const double high_wavelen = hp.rope_orig_ctx / hp.rope_high_freq_factor;
  for (int32_t i = 0; i < hp.n_rot / 2; ++i) {
    const double freq = std::pow(static_cast<double>(hp.rope_theta), -2.0 * i / hp.n_rot);
    const double wavelen = 2.0 * pi / freq;
    double scaled = freq;
    if (wavelen > low_wavelen) {
      scaled = freq / hp.rope_factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (hp.rope_orig_ctx / wavelen - hp.rope_low_freq_factor) /
                            (hp.rope_high_freq_factor - hp.rope_low_freq_factor);
      scaled = (1.0 - smooth) * freq / hp.rope_factor + smooth * freq;
    }
    out[i] = static_cast<float>(freq / scaled);
  }
}

}  // namespace

Status Context::create(const Model& model, const ContextOptions& options, std::unique_ptr<Context>* out) {
  const Hparams& hp = model.hp;
  if (options.n_ctx < 0)
    return error(WT_ERR_INVALID_ARGUMENT, "n_ctx must be >= 0 (0 = the model's " + std::to_string(hp.n_ctx_train) + ")");
  if (options.n_ctx > (1 << 20))
    return error(WT_ERR_INVALID_ARGUMENT, "n_ctx " + std::to_string(options.n_ctx) + " is above the limit of 1048576");
  if (options.n_threads < 0 || options.n_threads > 1024)
    return error(WT_ERR_INVALID_ARGUMENT, "n_threads must be in [0, 1024]");
  if (hp.n_rot > 512 || hp.n_rot % 2 != 0 || hp.head_dim > 256)
    return error(WT_ERR_UNSUPPORTED, "head_dim " + std::to_string(hp.head_dim) + " / n_rot " +
                                         std::to_string(hp.n_rot) + ": the CPU attention supports head_dim <= 256");
  std::unique_ptr<Context> ctx(new Context(model, options));
  ctx->n_ctx_ = options.n_ctx > 0 ? options.n_ctx : (hp.n_ctx_train > 0 ? hp.n_ctx_train : 4096);
  const PruneShape shape{hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, ctx->n_ctx_};
  WT_TRY(make_policy(options.prune, shape, &ctx->prune_, &ctx->policy_));
  const size_t nl = static_cast<size_t>(hp.n_layer);
  ctx->kv_len_.assign(nl, 0);
  ctx->prune_stats_.kv_rows.assign(nl, 0);
  ctx->prune_stats_.hidden_rows.assign(nl, 0);
  ctx->prune_stats_.kv_bytes.assign(nl, 0);
  if (model.device) {
    ctx->device_ = model.device.get();
    ctx->backend_ = &ctx->device_->backend();
  } else {
    BackendOptions bo;
    bo.n_threads = options.n_threads;
    WT_TRY(create_cpu_backend(bo, &ctx->own_backend_));
    ctx->backend_ = ctx->own_backend_.get();
  }
  {
    std::unique_lock<std::mutex> lock = ctx->claim_backend();
    WT_TRY(ctx->allocate());
  }
  *out = std::move(ctx);
  return Status::ok();
}

Context::~Context() {
  if (!backend_ || !arena_.host) return;
  std::unique_lock<std::mutex> lock = claim_backend();
  backend_->free(&arena_);
}

std::unique_lock<std::mutex> Context::claim_backend() {
  if (!device_) return {};
  std::unique_lock<std::mutex> lock = device_->lock();
  backend_->set_workspace(workspace_);
  return lock;
}

Status Context::allocate() {
  const Hparams& hp = model_.hp;
  const int64_t n = n_ctx_;
  const int64_t hd = hp.head_dim;
  n_logit_rows_ = options_.logits_all ? n_ctx_ : 1;

  // The largest workspace any op of a full-context prefill asks for.
  auto workspace_for = [&](int64_t rows) {
    size_t need = 0;
    auto consider = [&](const Tensor& w, int64_t k) {
      OpCall c;
      c.op = Op::matmul;
      c.i[0] = options_.f32_activations ? 1 : 0;
      c.src[0] = make_tensor_2d(nullptr, DType::f32, k, rows);
      c.src[1] = w;
      need = std::max(need, backend_->workspace_bytes(c));
    };
    for (const LayerWeights& lw : model_.layers) {
      for (const Tensor* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up}) consider(*w, w->ne[0]);
      consider(lw.w_down, lw.w_down.ne[0]);
    }
    consider(model_.output, hp.n_embd);
    OpCall att;
    att.op = Op::attention_prefill;
    const int64_t qne[3] = {hd, hp.n_head, rows};
    const int64_t kne[3] = {hd, hp.n_head_kv, n};
    att.src[0] = make_tensor(nullptr, DType::f32, 3, qne);
    att.src[1] = make_tensor(nullptr, DType::f32, 3, kne);
    need = std::max(need, backend_->workspace_bytes(att));
    if (policy_) {
      // The selection ops a policy may ask for, at their largest.
      OpCall ws;
      ws.op = Op::window_scores;
      ws.src[0] = att.src[0];
      ws.src[1] = att.src[1];
      const int64_t dne[3] = {n, hp.n_head, 1};
      ws.dst = make_tensor(nullptr, DType::f32, 3, dne);
      ws.i[0] = prune_.window;  // the widest window any method asks for
      need = std::max(need, backend_->workspace_bytes(ws));
      OpCall bs = ws;
      bs.op = Op::block_scores;
      need = std::max(need, backend_->workspace_bytes(bs));
      OpCall tk;  // top-k over a row of every head's scores
      tk.op = Op::topk;
      tk.src[0] = make_tensor_2d(nullptr, DType::f32, n, hp.n_head);
      tk.i[0] = static_cast<int32_t>(n);
      need = std::max(need, backend_->workspace_bytes(tk));
    }
    return need;
  };
  const size_t workspace_bytes = std::max(workspace_for(n), workspace_for(n_logit_rows_));

  // Two passes over the same layout: measure, then place.
  for (int pass = 0; pass < 2; ++pass) {
    char* base = pass == 0 ? nullptr : static_cast<char*>(arena_.host);
    ArenaLayout a(base);
    act_.x = f32_tensor(a, 2, hp.n_embd, n);
    act_.xn = f32_tensor(a, 2, hp.n_embd, n);
    act_.q = f32_tensor(a, 3, hd, hp.n_head, n);
    act_.k = f32_tensor(a, 3, hd, hp.n_head_kv, n);
    act_.v = f32_tensor(a, 3, hd, hp.n_head_kv, n);
    act_.attn = f32_tensor(a, 3, hd, hp.n_head, n);
    act_.gate = f32_tensor(a, 2, hp.n_ff, n);
    act_.up = f32_tensor(a, 2, hp.n_ff, n);
    act_.logits = f32_tensor(a, 2, hp.n_vocab, n_logit_rows_);
    k_cache_.assign(static_cast<size_t>(hp.n_layer), Tensor{});
    v_cache_.assign(static_cast<size_t>(hp.n_layer), Tensor{});
    const size_t kv_before = a.used();
    for (int32_t l = 0; l < hp.n_layer; ++l) {
      k_cache_[l] = f32_tensor(a, 3, hd, hp.n_head_kv, n);
      v_cache_[l] = f32_tensor(a, 3, hd, hp.n_head_kv, n);
    }
    stats_.kv_bytes = a.used() - kv_before;
    positions_ = static_cast<int32_t*>(a.take(sizeof(int32_t) * static_cast<size_t>(n)));
    token_ids_ = static_cast<int32_t*>(a.take(sizeof(int32_t) * static_cast<size_t>(n)));
    rope_divisors_ = static_cast<float*>(a.take(sizeof(float) * static_cast<size_t>(hp.n_rot / 2 + 1)));
    // Pruning state: sized for n_ctx so no pass allocates.
    const size_t n_sz = static_cast<size_t>(n);
    row_tmp_ = static_cast<int32_t*>(a.take(sizeof(int32_t) * n_sz));
    tok_tmp_ = static_cast<int32_t*>(a.take(sizeof(int32_t) * n_sz));
    kv_pos_ = static_cast<int32_t*>(a.take(sizeof(int32_t) * n_sz * static_cast<size_t>(hp.n_layer * hp.n_head_kv)));
    if (policy_) {
      score_capacity_ = n_sz * static_cast<size_t>(std::max(hp.n_head, 2 * hp.n_head_kv));
      scores_ = static_cast<float*>(a.take(sizeof(float) * score_capacity_));
      pooled_ = static_cast<float*>(a.take(sizeof(float) * score_capacity_));
      // Host-side scores to rank need a copy in backend memory unless it reads host pointers.
      if (!backend_->caps().reads_any_host_pointer) topk_in_ = static_cast<float*>(a.take(sizeof(float) * score_capacity_));
      anchors_ = static_cast<float*>(a.take(sizeof(float) * static_cast<size_t>(2 * hp.n_layer * hp.n_head_kv * hd)));
      if (prune_.record_ranking) {
        const size_t floats = static_cast<size_t>(hp.n_layer + 1) * n_sz;
        ranking_ = RankingSink{static_cast<float*>(a.take(sizeof(float) * floats)), hp.n_layer, n_ctx_, 0};
      }
    }
    void* workspace = a.take(workspace_bytes);
    if (pass == 0) {
      WT_TRY(backend_->alloc(a.used(), MemoryKind::device, &arena_));
      stats_.arena_bytes = a.used();
    } else {
      Buffer ws = arena_;
      ws.offset = static_cast<size_t>(static_cast<char*>(workspace) - static_cast<char*>(arena_.host));
      ws.size_bytes = workspace_bytes;
      workspace_ = ws;
      backend_->set_workspace(ws);
    }
  }

  if (!model_.rope_freqs.empty()) {
    const float* f = static_cast<const float*>(model_.rope_freqs.data);
    for (int32_t i = 0; i < hp.n_rot / 2; ++i) rope_divisors_[i] = f[i];
  } else if (hp.rope_scaling == RopeScaling::llama3) {
    llama3_divisors(hp, rope_divisors_);
  } else {
    rope_divisors_ = nullptr;
  }
  return Status::ok();
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
  Status st;
  if (policy_ && n_past_ == 0) {
    st = prefill_pruned(tokens, n_tokens);
  } else {
    for (int32_t i = 0; i < n_tokens; ++i) row_tmp_[i] = n_past_ + i;
    st = forward(tokens, row_tmp_, n_tokens, nullptr, nullptr);
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
  WT_TRY(forward(&token, &pos, 1, nullptr, nullptr));
  n_past_ += 1;
  stats_.decode_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  stats_.n_decode_tokens += 1;
  return Status::ok();
}

const float* Context::logits(int32_t row) const {
  if (last_rows_ == 0) return nullptr;
  if (row < 0) row = last_rows_ - 1;
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

const int32_t* Context::kv_positions(int32_t l, int32_t h) const {
  return kv_pos_ + (static_cast<size_t>(l) * static_cast<size_t>(model_.hp.n_head_kv) + static_cast<size_t>(h)) *
                       static_cast<size_t>(n_ctx_);
}

void Context::reset() {
  n_past_ = 0;
  last_rows_ = 0;
  last_row_only_ = false;
  policy_decoding_ = false;
  ranking_.n_prompt = 0;
  if (policy_) policy_->set_ranking_sink(nullptr);  // a failed prefill may have left it set
  for (int32_t& len : kv_len_) len = 0;
  stats_.n_prefill_tokens = stats_.n_decode_tokens = 0;
  stats_.prefill_ms = stats_.decode_ms = 0;
}

}  // namespace wt
