// The arena layout of a context (context_layout.h): the one place its bytes are counted.
#include "context_layout.h"

#include "paged_kv.h"
#include "backends/weight_types.h"

#include <algorithm>

namespace wt {

namespace {

constexpr size_t kAlign = 64;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Hands out aligned slices of one allocation (a part of the arena); without a base it only counts.
class ArenaCursor {
 public:
  explicit ArenaCursor(char* base) : base_(base) {}
  void* take(size_t bytes) {
    void* p = base_ ? base_ + used_ : nullptr;
    used_ += align_up(bytes);
    return p;
  }
  template <typename T>
  T* take_n(size_t n) { return static_cast<T*>(take(sizeof(T) * n)); }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

// ne0 is a whole number of type's blocks (check_kv_type for the KV cache).
Tensor typed_tensor(ArenaCursor& a, DType type, int32_t n_dims, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
  const int64_t ne[3] = {ne0, ne1, ne2};
  size_t row = 0;
  dtype_row_bytes(type, ne0, &row);
  return make_tensor(a.take(row * static_cast<size_t>(ne1 * ne2)), type, n_dims, ne);
}

Tensor f32_tensor(ArenaCursor& a, int32_t n_dims, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
  return typed_tensor(a, DType::f32, n_dims, ne0, ne1, ne2);
}

// The largest workspace any op of a pass of `rows` rows over n_ctx keys asks for (the
// feed-forward block's matmuls see at most ffn_rows() of them).
size_t workspace_for(const ArenaInputs& in, int64_t rows) {
  const Hparams& hp = *in.hp;
  const Backend& backend = *in.backend;
  const int64_t n = in.n_ctx, hd = hp.head_dim;
  size_t need = 0;
  auto consider = [&](const Tensor& w, int64_t k, int64_t x_rows) {
    const MatmulOp mm{.dst = Tensor{}, .x = make_tensor_2d(nullptr, DType::f32, k, x_rows), .w = w,
                      .f32_activations = in.f32_activations};
    need = std::max(need, backend.workspace_bytes(mm));
  };
  const int64_t ffn = std::min<int64_t>(rows, ffn_rows(in));
  for (const LayerWeights& lw : *in.layers) {
    for (const Tensor* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo}) consider(*w, w->ne[0], rows);
    for (const Tensor* w : {&lw.w_gate, &lw.w_up, &lw.w_down}) consider(*w, w->ne[0], ffn);
  }
  consider(*in.output, hp.n_embd, rows);
  const int64_t qne[3] = {hd, hp.n_head, rows};
  const int64_t kne[3] = {hd, hp.n_head_kv, n};
  const Tensor q = make_tensor(nullptr, DType::f32, 3, qne);  // [rows, n_head, hd]
  const Tensor k = make_tensor(nullptr, DType::f32, 3, kne);  // [n_ctx, n_head_kv, hd]
  need = std::max(need, backend.workspace_bytes(AttentionPrefillOp{.dst = Tensor{}, .q = q, .k = k, .v = Tensor{}}));
  if (in.prune) {
    // The selection ops a policy may ask for, at their largest.
    const int64_t dne[3] = {n, hp.n_head, 1};
    const Tensor scores = make_tensor(nullptr, DType::f32, 3, dne);  // [1, n_head, n_ctx]
    // The widest window any method asks for.
    need = std::max(need, backend.workspace_bytes(WindowScoresOp{.dst = scores, .q = q, .k = k,
                                                                 .window = in.prune->window, .softmax = false}));
    need = std::max(need, backend.workspace_bytes(BlockScoresOp{.dst = scores, .q = q, .k = k,
                                                                .block = in.prune->window}));
    if (in.key_bounds_block > 0) {
      const Tensor bounds = key_bounds_tensor(hp, nullptr, 0, n, n, in.key_bounds_block);
      need = std::max(need, backend.workspace_bytes(KeyBoundsOp{.dst = bounds, .k = k, .block = in.key_bounds_block}));
      const Tensor block_scores = make_tensor_2d(nullptr, DType::f32, bounds.ne[2], 1);  // [n_blocks]
      need = std::max(need, backend.workspace_bytes(BoundScoresOp{.dst = block_scores, .q = q, .bounds = bounds}));
    }
    // top-k over a row of every head's scores
    need = std::max(need, backend.workspace_bytes(TopkOp{.scores = make_tensor_2d(nullptr, DType::f32, n, hp.n_head),
                                                         .k = static_cast<int32_t>(n)}));
  }
  return need;
}

// Rows of f32 logits one binding of the backend holds (0: no limit).
int64_t logit_rows_per_binding(const ArenaInputs& in) {
  const size_t limit = in.backend->caps().max_binding_bytes;
  return limit > 0 ? rows_per_binding(limit, sizeof(float) * static_cast<size_t>(in.hp->n_vocab)) : 0;
}

// wt_context_params.n_batch_rows resolved: the default for 0, at most n_ctx.
int64_t batch_rows(const ArenaInputs& in) {
  return std::min<int64_t>(in.n_batch_rows > 0 ? in.n_batch_rows : WT_BATCH_ROWS_DEFAULT, in.n_ctx);
}

}  // namespace

int32_t pass_rows(const ArenaInputs& in) {
  // A policy reads the whole prompt in one pass; the pager would gather every layer's earlier
  // rows back into its staging for each pass (forward_kv.cpp's append_kv).
  if (in.prune || in.kv_device_blocks > 0) return in.n_ctx;
  return slice_rows(in);
}

int32_t slice_rows(const ArenaInputs& in) {
  // At least 3: a one-row pass of a prompt would run the kernels of a decode step, whose
  // rounding differs, and from 3 rows Context::prefill splits a last row that would be left
  // over into passes of step - 1 and 2 (and a layer's slices are never shorter than half).
  int64_t rows = std::max<int64_t>(batch_rows(in), std::min(3, in.n_ctx));
  // x, xn, q, attn and (logits_all) the logits are f32 rows each bound whole by its ops. A
  // binding that holds fewer than 3 rows of logits bounds nothing: the output head's
  // launches would fail at any pass length, as they did before passes.
  const Hparams& hp = *in.hp;
  const size_t limit = in.backend->caps().max_binding_bytes;  // 0: no limit
  if (limit > 0) {
    const size_t widest = static_cast<size_t>(std::max(hp.n_embd, hp.n_head * hp.head_dim));  // x, q
    rows = std::min(rows, rows_per_binding(limit, sizeof(float) * widest));
    const int64_t logit_rows = logit_rows_per_binding(in);
    if (in.n_logit_rows > 1 && logit_rows >= 3) rows = std::min(rows, logit_rows);
  }
  // A policy's observation reads the queries of the prompt's last rows (its window, at most
  // the resolved window, or SlimInfer's local query rows), which must lie in the last slice;
  // slices are at least half this many rows (forward_llama.cpp), so twice them. (A few dozen
  // rows: a binding that holds x's n_ctx rows holds them, unless q is far wider than x.)
  if (in.prune) {
    const int32_t query_rows = in.prune->method == WT_PRUNE_SLIMINFER ? in.prune->slim_query : 0;
    rows = std::max<int64_t>(rows, 2 * static_cast<int64_t>(std::max(in.prune->window, query_rows)));
  }
  return static_cast<int32_t>(std::clamp<int64_t>(rows, 1, in.n_ctx));
}

int32_t output_rows(const ArenaInputs& in) {
  const int64_t rows = slice_rows(in), logit_rows = logit_rows_per_binding(in);
  return static_cast<int32_t>(logit_rows > 0 ? std::clamp<int64_t>(logit_rows, 1, rows) : rows);
}

int32_t ffn_rows(const ArenaInputs& in) {
  int64_t rows = std::min<int64_t>(batch_rows(in), slice_rows(in));
  // gate and up are f32 rows of n_ff, each bound whole by its ops
  const size_t limit = in.backend->caps().max_binding_bytes;  // 0: no limit
  if (limit > 0) rows = std::min(rows, rows_per_binding(limit, sizeof(float) * static_cast<size_t>(in.hp->n_ff)));
  return static_cast<int32_t>(std::max<int64_t>(rows, 1));
}

int32_t largest_batch_rows(int32_t below, const std::function<bool(int32_t rows)>& fits) {
  int32_t lo = 0, hi = (below - 1) / kBatchRowsStep + 1;  // steps: lo fits (or is 0), hi is not tried
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    (fits(mid * kBatchRowsStep) ? lo : hi) = mid;
  }
  return lo * kBatchRowsStep;
}

PagedKvParams paged_kv_params(const ArenaInputs& in) {
  PagedKvParams p;
  p.n_layer = in.hp->n_layer;
  p.n_ctx = in.n_ctx;
  p.block_tokens = in.kv_block_tokens;
  p.n_device_blocks = in.kv_device_blocks;
  p.head_dim = in.hp->head_dim;
  p.n_head_kv = in.hp->n_head_kv;
  p.kv_type = in.kv_type;
  p.in_place = in.kv_pager_in_place;
  const int32_t layer_blocks = (in.n_ctx + in.kv_block_tokens - 1) / in.kv_block_tokens;
  p.n_host_blocks = 0;
  for (int32_t l = 0; l < p.n_layer; ++l) {
    const int32_t rows = in.kv_rows ? (*in.kv_rows)[static_cast<size_t>(l)] : in.n_ctx;
    p.n_host_blocks += in.kv_rows ? (rows + in.kv_block_tokens - 1) / in.kv_block_tokens : layer_blocks;
  }
  if (p.in_place) {  // the one pool holds every block (paged_kv.h)
    p.n_device_blocks = p.n_host_blocks;
    p.n_host_blocks = 0;
  }
  return p;
}

ArenaBytes lay_out_arena(const ArenaInputs& in, ArenaBases bases, ArenaViews* views) {
  const Hparams& hp = *in.hp;
  const int64_t n = in.n_ctx;
  const int64_t hd = hp.head_dim;
  const size_t n_sz = static_cast<size_t>(n);
  ArenaViews scratch;
  ArenaViews& v = bases.device && views ? *views : scratch;
  ArenaBytes b;
  ArenaCursor a(bases.device);  // the device part
  ArenaCursor h(bases.host);    // the host part (context_layout.h)
  size_t mark = 0, host_mark = 0;
  auto part = [&](uint64_t* into) {
    *into += a.used() - mark + h.used() - host_mark;
    mark = a.used();
    host_mark = h.used();
  };

  const int64_t n_pass = pass_rows(in), n_slice = slice_rows(in);
  v.act.x = f32_tensor(a, 2, hp.n_embd, n_pass);
  v.act.xn = f32_tensor(a, 2, hp.n_embd, n_slice);
  v.act.q = f32_tensor(a, 3, hd, hp.n_head, n_slice);
  v.act.k = f32_tensor(a, 3, hd, hp.n_head_kv, n_pass);
  v.act.v = f32_tensor(a, 3, hd, hp.n_head_kv, n_pass);
  v.act.attn = f32_tensor(a, 3, hd, hp.n_head, n_slice);
  const int64_t n_ffn = ffn_rows(in);
  v.act.gate = f32_tensor(a, 2, hp.n_ff, n_ffn);
  v.act.up = f32_tensor(a, 2, hp.n_ff, n_ffn);
  part(&b.activations_bytes);
  v.act.logits = f32_tensor(h, 2, hp.n_vocab, in.n_logit_rows);  // the sampler reads it every token
  part(&b.logits_bytes);
  const size_t kv_layers = in.kv_device_blocks > 0 ? 1 : static_cast<size_t>(hp.n_layer);
  v.k_cache.assign(kv_layers, Tensor{});
  v.v_cache.assign(kv_layers, Tensor{});
  for (size_t l = 0; l < kv_layers; ++l) {
    const int64_t rows = in.kv_device_blocks > 0 || !in.kv_rows ? n : (*in.kv_rows)[l];
    v.k_cache[l] = typed_tensor(a, in.kv_type, 3, hd, hp.n_head_kv, rows);
    v.v_cache[l] = typed_tensor(a, in.kv_type, 3, hd, hp.n_head_kv, rows);
  }
  part(&b.kv_bytes);
  // Written by the host every pass; kernels get positions and ids through the backend's
  // upload of op arrays (OpHostArrays), never from here.
  v.positions = h.take_n<int32_t>(n_sz);
  v.token_ids = h.take_n<int32_t>(n_sz);
  // Written once by the host, read by rope: host memory the kernels reach, so that the host
  // never writes the device part (on a discrete GPU it has no host address).
  v.rope_divisors = h.take_n<float>(static_cast<size_t>(hp.n_rot / 2 + 1));
  // A decode step's rope angles, made once for every layer (RopeOp::angles); the kernels read
  // them where the host wrote them.
  v.rope_freqs = h.take_n<double>(static_cast<size_t>(hp.n_rot / 2 + 1));
  v.rope_angles = h.take_n<float>(static_cast<size_t>(hp.n_rot + 1));
  if (hp.swa_window > 0) {
    v.rope_freqs_swa = h.take_n<double>(static_cast<size_t>(hp.n_rot / 2 + 1));
    v.rope_angles_swa = h.take_n<float>(static_cast<size_t>(hp.n_rot + 1));
  }
  // Pruning state: sized for n_ctx so no pass allocates.
  v.row_tmp = h.take_n<int32_t>(n_sz);
  v.tok_tmp = h.take_n<int32_t>(n_sz);
  // Each layer's KV positions have as many rows as its KV (Context::kv_pos_of): a pruned
  // prompt's layers keep a tenth of n_ctx, and n_ctx rows in every layer would be 32 MiB for
  // an 8B model at 32k.
  v.kv_pos_at.assign(static_cast<size_t>(hp.n_layer), 0);
  size_t kv_pos_n = 0;
  for (size_t l = 0; l < v.kv_pos_at.size(); ++l) {
    v.kv_pos_at[l] = kv_pos_n;
    kv_pos_n += (in.kv_rows ? static_cast<size_t>((*in.kv_rows)[l]) : n_sz) * static_cast<size_t>(hp.n_head_kv);
  }
  v.kv_pos = h.take_n<int32_t>(kv_pos_n);
  v.origin = h.take_n<int32_t>(n_sz);
  if (in.device_part_unmapped) {
    // What the host moves to or from the device part (a state's KV and anchors) goes through
    // here a chunk at a time where that part has no host address.
    size_t kv_row = 0;
    dtype_row_bytes(in.kv_type, hd, &kv_row);
    const int64_t most_rows = in.kv_rows && in.kv_device_blocks == 0
                                  ? *std::max_element(in.kv_rows->begin(), in.kv_rows->end())
                                  : n;
    const size_t layer = kv_row * static_cast<size_t>(hp.n_head_kv) * static_cast<size_t>(most_rows);
    const size_t anchors = in.prune ? anchor_bytes(hp) : 0;
    const size_t cap = in.transfer_bytes > 0 ? in.transfer_bytes : kTransferBytes;
    v.transfer_bytes = std::max<size_t>(64, std::min(cap, std::max(layer, anchors)));
    v.transfer = h.take_n<char>(v.transfer_bytes);
  }
  part(&b.index_bytes);
  const size_t prune_host_mark = h.used();
  if (in.prune) {
    // The policies read the scores on the host after every scored layer, and write the
    // scores they rank into topk_in: host memory, which the kernels reach, not device pages
    // the host would pull over and the GPU pull back each layer.
    v.score_capacity = n_sz * static_cast<size_t>(std::max(hp.n_head, 2 * hp.n_head_kv));
    v.scores = h.take_n<float>(v.score_capacity);
    v.pooled = h.take_n<float>(v.score_capacity);
    // Host-side scores to rank need a copy in backend memory unless it reads host pointers.
    if (!in.backend->caps().reads_any_host_pointer) v.topk_in = h.take_n<float>(v.score_capacity);
    v.anchors = a.take_n<float>(anchor_bytes(hp) / sizeof(float));
    const int32_t bound_layers = hp.n_layer - std::min(hp.n_layer, std::max(0, in.key_bounds_first_layer));
    if (in.key_bounds_block > 0 && bound_layers > 0)  // written and read by kernels only
      v.key_bounds = a.take_n<uint16_t>(static_cast<size_t>(bound_layers) * key_bounds_halves(hp, n, in.key_bounds_block));
    if (in.prune->record_ranking) {
      v.ranking = h.take_n<float>(static_cast<size_t>(hp.n_layer + 1) * n_sz);
      v.attended = h.take_n<int32_t>(static_cast<size_t>(hp.n_layer) * n_sz);
    }
  }
  b.prune_host_bytes = h.used() - prune_host_mark;
  part(&b.prune_bytes);
  // Decode steps are one row (a backend's fused one-row matmuls may want their own scratch).
  const size_t workspace_bytes = std::max(
      {workspace_for(in, n_slice), workspace_for(in, std::min<int64_t>(in.n_logit_rows, n_slice)), workspace_for(in, 1)});
  v.workspace_offset = a.used();
  a.take(workspace_bytes);
  part(&b.workspace_bytes);
  b.host_bytes = h.used();
  b.total_bytes = a.used() + h.used();
  if (in.kv_device_blocks > 0) {
    const PagedKvParams pp = paged_kv_params(in);
    b.pager_device_bytes = PagedKv::device_pool_bytes(pp);
    b.pager_host_bytes = PagedKv::host_pool_bytes(pp);
  }
  return b;
}

size_t anchor_bytes(const Hparams& hp) {
  return sizeof(float) * 2 * static_cast<size_t>(hp.n_layer) * static_cast<size_t>(hp.n_head_kv) *
         static_cast<size_t>(hp.head_dim);
}

size_t key_bounds_halves(const Hparams& hp, int64_t n_ctx, int32_t block) {
  return static_cast<size_t>((n_ctx + block - 1) / block) * static_cast<size_t>(hp.n_head_kv) * 2 *
         static_cast<size_t>(hp.head_dim);
}

Tensor key_bounds_tensor(const Hparams& hp, uint16_t* base, int32_t layer, int64_t n_rows, int64_t n_ctx,
                         int32_t block) {
  const int64_t ne[3] = {2 * hp.head_dim, hp.n_head_kv, (n_rows + block - 1) / block};
  uint16_t* at = base ? base + static_cast<size_t>(layer) * key_bounds_halves(hp, n_ctx, block) : nullptr;
  return make_tensor(at, DType::f16, 3, ne);
}

uint64_t kv_row_bytes(const Hparams& hp, DType kv_type) {
  size_t head = 0;
  dtype_row_bytes(kv_type, hp.head_dim, &head);
  return 2 * static_cast<uint64_t>(head) * static_cast<uint64_t>(hp.n_head_kv);
}

int32_t sliding_kv_rows(const Hparams& hp, int32_t layer, int32_t n_ctx, int32_t n_batch_rows) {
  if (!layer_is_swa(hp, layer)) return n_ctx;
  const int64_t pass = std::max<int64_t>(n_batch_rows > 0 ? n_batch_rows : WT_BATCH_ROWS_DEFAULT, 3);
  return static_cast<int32_t>(std::min<int64_t>(n_ctx, 2 * (int64_t{hp.swa_window} - 1) + pass));
}

Status check_sliding_window(const Hparams& hp, bool pruned, bool paged, bool gemma_kernels, const char* backend) {
  if (hp.swa_window <= 0 && !hp.gelu && hp.embed_scale == 1.0f) return Status::ok();
  if (!gemma_kernels)
    return error(WT_ERR_UNSUPPORTED, "the " + std::string(backend) +
                                         " backend has no sliding-window attention, gelu or embedding scale, "
                                         "which Gemma 3 needs");
  if (pruned && hp.swa_window > 0)
    return error(WT_ERR_UNSUPPORTED, "token pruning with sliding-window layers (Gemma 3) is not supported yet: "
                                     "use method full");
  if (paged && hp.swa_window > 0)
    return error(WT_ERR_UNSUPPORTED, "the KV pager with sliding-window layers (Gemma 3) is not supported yet");
  return Status::ok();
}

Status check_kv_type(const Hparams& hp, DType kv_type, uint64_t kv_types, const char* backend) {
  const std::string name = kv_type_name(kv_type);
  if (!is_kv_type(kv_type))
    return error(WT_ERR_INVALID_ARGUMENT, "kv_type " + name + ": the KV cache is f32, f16 or q8_0");
  size_t row = 0;
  if (!dtype_row_bytes(kv_type, hp.head_dim, &row))
    return error(WT_ERR_UNSUPPORTED, "kv_type " + name + " stores blocks of 32 values; this model's head_dim " +
                                         std::to_string(hp.head_dim) + " is not a multiple of 32 (use f32 or f16)");
  if (!(kv_types & dtype_bit(kv_type)))
    return error(WT_ERR_UNSUPPORTED, "the " + std::string(backend) + " backend does not keep a KV cache of " + name +
                                         " yet (it keeps " + weight_type_names(kv_types) + ")");
  return Status::ok();
}

}  // namespace wt
