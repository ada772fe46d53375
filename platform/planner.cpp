// The static budget planner (planner.h). planner.cpp is the one file of platform/ that
// reads runtime/: the arena layout and the pruning budgets are the engine's own code.
#include "planner.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "backends/weight_types.h"
#include "runtime/engine/paged_kv.h"
#include "runtime/prune/registry.h"

namespace wt {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  return buf;
}

const char* backend_name(wt_backend_kind kind) {
  return kind == WT_BACKEND_CUDA ? "cuda" : kind == WT_BACKEND_VULKAN ? "vulkan" : "cpu";
}

// A model the backend cannot read does not fit, however much memory there is: the first
// tensor whose type the backend's kernels do not decode, by name.
Status check_weight_types(const ModelShape& model, wt_backend_kind backend) {
  const uint64_t readable = weight_types_of(backend);
  auto check = [&](const std::string& name, const Tensor& t) -> Status {
    if (t.empty() || (readable & dtype_bit(t.type))) return Status::ok();
    return error(WT_ERR_UNSUPPORTED, "weight '" + name + "' is " + dtype_name(t.type) + ", which the " +
                                         backend_name(backend) + " backend does not read (it reads " +
                                         weight_type_names(readable) + ")");
  };
  WT_TRY(check("token_embd", model.tok_embd));
  for (size_t l = 0; l < model.layers.size(); ++l) {
    const LayerWeights& w = model.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::pair<const char*, const Tensor*> named[] = {
        {"attn_q", &w.wq},        {"attn_k", &w.wk},   {"attn_v", &w.wv},       {"attn_output", &w.wo},
        {"ffn_gate", &w.w_gate},  {"ffn_up", &w.w_up}, {"ffn_down", &w.w_down}, {"attn_norm", &w.attn_norm},
        {"ffn_norm", &w.ffn_norm},  {"attn_q_norm", &w.q_norm}, {"attn_k_norm", &w.k_norm},
        {"post_attention_norm", &w.attn_post_norm}, {"post_ffw_norm", &w.ffn_post_norm},
    };
    for (const auto& [name, t] : named) WT_TRY(check(p + name, *t));
  }
  return check("output", model.output);
}

// The plan of the request as it stands (n_batch_rows 0: the default's rows).
Status plan_at(const BoardProfile& board, const ModelShape& model, const PlanRequest& req, const Backend& sizing,
               Plan* out) {
  const Hparams& hp = model.hp;
  WT_TRY(check_weight_types(model, req.backend));
  if (req.n_ctx < 1 || req.n_ctx > (1 << 20))
    return error(WT_ERR_INVALID_ARGUMENT, "n_ctx " + std::to_string(req.n_ctx) + " is outside [1, 1048576]");
  if (req.n_new < 0 || req.n_new >= req.n_ctx)
    return error(WT_ERR_INVALID_ARGUMENT, "n_new " + std::to_string(req.n_new) + " must be in [0, n_ctx)");
  if (hp.n_layer < 1 || static_cast<size_t>(hp.n_layer) != model.layers.size())
    return error(WT_ERR_INVALID_ARGUMENT, "the model shape has no layers");
  if (hp.n_rot > 512 || hp.n_rot % 2 != 0 || hp.head_dim > 256)
    return error(WT_ERR_UNSUPPORTED, "head_dim " + std::to_string(hp.head_dim) + ": the attention supports head_dim <= 256");

  Plan p;
  p.board = board;
  p.model_name = model.name;
  p.request = req;
  p.request.sizing_backend = nullptr;
  const PruneShape shape{hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, req.n_ctx};
  std::unique_ptr<PrunePolicy> policy;
  WT_TRY(make_policy(req.prune, shape, &p.prune, &policy));

  ArenaInputs in;
  in.hp = &hp;
  in.layers = &model.layers;
  in.output = &model.output;
  in.n_ctx = req.n_ctx;
  in.n_logit_rows = req.logits_all ? req.n_ctx : 1;
  in.f32_activations = req.f32_activations;
  in.prune = policy ? &p.prune : nullptr;
  in.backend = &sizing;
  in.kv_device_blocks = req.kv_device_blocks;
  in.kv_block_tokens = req.kv_block_tokens;
  in.kv_type = req.kv_type;
  in.n_batch_rows = req.n_batch_rows;
  in.kv_pager_in_place = pager_in_place(req.kv_device_blocks, req.kv_pager_copy, board.unified);
  in.device_part_unmapped = req.sizing_backend ? req.sizing_backend->caps().device_only_unmapped
                                               : device_only_unmapped_of(req.backend, board.unified);
  // KV as the method keeps it, which is what a context created with max_new_tokens = n_new
  // allocates (kv_capacity: the policy's peak at a prompt of n_ctx - n_new, plus every
  // generated row; full KV: n_ctx rows).
  p.kv_rows.resize(static_cast<size_t>(hp.n_layer));
  for (int32_t l = 0; l < hp.n_layer; ++l)
    p.kv_rows[static_cast<size_t>(l)] = std::min(kv_capacity(policy.get(), l, req.n_ctx, req.n_new),
                                                 sliding_kv_rows(hp, l, req.n_ctx, req.n_batch_rows));
  in.kv_rows = &p.kv_rows;
  const bool paged = req.kv_device_blocks > 0;
  if (paged) WT_TRY(PagedKv::check_shape(req.n_ctx, req.kv_block_tokens, req.kv_device_blocks));
  // What wt_context_create refuses, refused here too (the same checks).
  WT_TRY(check_kv_type(hp, req.kv_type, kv_types_of(req.backend), backend_name(req.backend)));
  // Every backend has the kernels sliding-window models need (BackendCaps::gemma_kernels).
  WT_TRY(check_sliding_window(hp, policy != nullptr, paged, true, backend_name(req.backend)));
  p.arena = lay_out_arena(in, ArenaBases{}, nullptr);
  p.batch_rows = slice_rows(in);

  // K and V of kv_type, n_head_kv heads.
  const uint64_t row_bytes = kv_row_bytes(hp, req.kv_type);
  p.kv_layer_bytes.resize(p.kv_rows.size());
  for (size_t l = 0; l < p.kv_rows.size(); ++l) {
    p.kv_layer_bytes[l] = row_bytes * static_cast<uint64_t>(p.kv_rows[l]);
    p.kv_bytes += p.kv_layer_bytes[l];
  }
  // The same context without max_new_tokens reserves n_ctx rows in every layer.
  ArenaInputs unbounded = in;
  unbounded.kv_rows = nullptr;
  const ArenaBytes unbounded_arena = lay_out_arena(unbounded, ArenaBases{}, nullptr);

  p.weights_bytes = model.weight_bytes;
  const bool device = req.backend != WT_BACKEND_CPU;
  const bool cuda_libraries = req.backend == WT_BACKEND_CUDA && board.unified;
  p.overhead_bytes = kRuntimeOverheadBytes + (device ? kDeviceRuntimeOverheadBytes : 0) +
                     (cuda_libraries ? kCudaLibraryBytes : 0);
  // With the pager the KV is the device pool plus one layer of staging in the arena; the
  // pinned host pool is the same DRAM on a unified board and host memory on a discrete one.
  const uint64_t pager_counted = p.arena.pager_device_bytes + (board.unified ? p.arena.pager_host_bytes : 0);
  // The arena's host part (logits, positions, token ids, rope divisors, row scratch, KV
  // positions, the transfer staging, the policies' scores: pinned host memory,
  // context_layout.h) is device memory only on a unified board.
  auto arena_counted = [&](const ArenaBytes& a) { return board.unified ? a.total_bytes : a.total_bytes - a.host_bytes; };
  p.total_bytes = p.weights_bytes + arena_counted(p.arena) + pager_counted + p.overhead_bytes;
  p.allocated_total_bytes = p.weights_bytes + arena_counted(unbounded_arena) + unbounded_arena.pager_device_bytes +
                            (board.unified ? unbounded_arena.pager_host_bytes : 0) + p.overhead_bytes;
  p.usable_bytes = board.usable_bytes();
  p.fits = p.total_bytes <= p.usable_bytes;
  p.spare_bytes = static_cast<int64_t>(p.usable_bytes) - static_cast<int64_t>(p.total_bytes);
  p.allocated_fits = p.allocated_total_bytes <= p.usable_bytes;

  // The host part's index arrays (the rest of it: the logits, the scores the policies read).
  const uint64_t host_index_bytes = p.arena.host_bytes - p.arena.logits_bytes - p.arena.prune_host_bytes;
  const char* weights_note = board.unified
      ? (device ? "unified memory: counted once (the loader uploads, then drops the file's pages)"
                : "the mapped file's pages, counted once")
      : (device ? "the device copy; the host's mapped file is not device memory" : "the mapped file's pages");
  p.components = {
      {"weights", p.weights_bytes, weights_note},
      paged ? PlanComponent{"kv staging", p.arena.kv_bytes, "one layer of n_ctx rows: what a multi-row pass reads"}
            : PlanComponent{"kv cache", p.arena.kv_bytes,
                            std::string(policy                 ? "per-layer budgets of the method + n_new rows, "
                                        : hp.swa_window > 0 ? "n_ctx rows in global layers, 2 (window - 1) + a pass in sliding ones, "
                                                            : "n_ctx rows every layer, ") +
                                kv_type_name(req.kv_type)},
      {"activations", p.arena.activations_bytes,
       pass_rows(in) == slice_rows(in)
           ? "x, xn, q, k, v, attn for " + std::to_string(pass_rows(in)) + " rows; gate, up for " +
                 std::to_string(ffn_rows(in)) + " rows"
           : "x, k, v for " + std::to_string(pass_rows(in)) + " rows; xn, q, attn for " +
                 std::to_string(slice_rows(in)) + " rows; gate, up for " + std::to_string(ffn_rows(in)) + " rows"},
      {"logits", board.unified ? p.arena.logits_bytes : 0,
       std::string(req.logits_all ? "every row" : "the last row") +
           (board.unified ? "" : ": pinned host memory (" + mib(p.arena.logits_bytes) + "), not device memory")},
      {"index + scratch", board.unified ? p.arena.index_bytes : p.arena.index_bytes - host_index_bytes,
       "positions, token ids, rope, row scratch, KV positions" +
           std::string(in.device_part_unmapped ? ", transfer staging" : "") +
           (board.unified ? "" : ": pinned host memory (" + mib(host_index_bytes) + "), not device memory")},
      {"pruning state", board.unified ? p.arena.prune_bytes : p.arena.prune_bytes - p.arena.prune_host_bytes,
       board.unified || p.arena.prune_host_bytes == 0
           ? "scores, pooled, top-k staging, anchors, ranking"
           : "anchors; scores, pooled, top-k staging and ranking are pinned host memory (" +
                 mib(p.arena.prune_host_bytes) + "), not device memory"},
      {"op workspace", p.arena.workspace_bytes, "largest op of a full-context prefill"},
      {"runtime overhead", p.overhead_bytes,
       cuda_libraries ? "host runtime + device backend + cuBLAS's code and data (estimate)"
       : device       ? "host runtime + device backend (estimate)"
                      : "host runtime (estimate)"},
  };
  if (paged) {
    const std::string blocks = " blocks of " + std::to_string(req.kv_block_tokens) + " tokens";
    if (in.kv_pager_in_place) {
      p.components.insert(p.components.begin() + 2,
                          {"pager pool", p.arena.pager_device_bytes,
                           "in place: " + std::to_string(paged_kv_params(in).n_device_blocks) + blocks +
                               ", every block of every layer, read where it was written (no host pool, no copies)"});
      p.notes.push_back("unified memory: the pager works in place (one pool of every block, no copies); "
                        "WT_KV_PAGER_COPY (--pager-copy) plans the device pool and the host pool instead");
    } else {
      p.components.insert(p.components.begin() + 2,
                          {"pager device pool", p.arena.pager_device_bytes,
                           std::to_string(req.kv_device_blocks) + blocks + " shared by all layers"});
      p.components.insert(p.components.begin() + 3,
                          {"pager host pool", board.unified ? p.arena.pager_host_bytes : 0,
                           board.unified ? "pinned, every block of every layer: the same DRAM on this board"
                                         : "pinned host memory (" + mib(p.arena.pager_host_bytes) +
                                               "), not device memory"});
      if (board.unified)
        p.notes.push_back("unified memory, the copying pager: it bounds the device pool, not DRAM use — the host "
                          "pool is the same DRAM, so paging adds " + mib(pager_counted) +
                          " where resident KV would need " + mib(p.kv_bytes));
    }
  }
  if (req.backend != WT_BACKEND_CPU && !req.sizing_backend)
    p.notes.push_back("op workspaces are the CPU backend's sizes; the device's own kernels may ask for different ones");
  if (!board.unified)
    p.notes.push_back("discrete device: only device memory is planned; the host holds the mapped file and the process");
  if (policy && p.allocated_total_bytes > p.total_bytes)
    p.notes.push_back("this plan is a context created with max_new_tokens = " + std::to_string(req.n_new) +
                      " (KV sized by the method); without it the context reserves n_ctx KV rows in every layer: total " +
                      mib(p.allocated_total_bytes) + (p.allocated_fits ? ", fits" : ", does NOT fit"));
  *out = std::move(p);
  return Status::ok();
}

// plan_at, with the default n_batch_rows lowered where its plan does not fit the board, as
// a context lowers it where its arena does not fit its memory (fit_batch_rows,
// runtime/engine/context_budget.h): the largest multiple of kBatchRowsStep whose plan fits.
// Where none fits, the plan at kBatchRowsStep rows, as a context's refusal counts it: what
// is short then is what fewer rows cannot help.
Status plan_on(const BoardProfile& board, const ModelShape& model, const PlanRequest& req, const Backend& sizing,
               Plan* out) {
  WT_TRY(plan_at(board, model, req, sizing, out));
  // A context of at most kBatchRowsStep tokens has no fewer rows to take.
  if (req.n_batch_rows != 0 || out->fits || req.n_ctx <= kBatchRowsStep) return Status::ok();
  PlanRequest r = req;
  // The request was valid at the default's rows, and fewer rows change no check.
  const int32_t rows = largest_batch_rows(std::min(WT_BATCH_ROWS_DEFAULT, req.n_ctx), [&](int32_t n) {
    r.n_batch_rows = n;
    Plan p;
    return plan_at(board, model, r, sizing, &p).is_ok() && p.fits;
  });
  r.n_batch_rows = rows > 0 ? rows : kBatchRowsStep;
  Plan p;
  WT_TRY(plan_at(board, model, r, sizing, &p));
  p.request.n_batch_rows = 0;  // as asked
  // p.batch_rows: a policy's window may need more rows than asked (slice_rows()).
  const std::string at_default = "the default n_batch_rows (" + std::to_string(std::min(WT_BATCH_ROWS_DEFAULT, req.n_ctx)) +
                                 " rows) does not fit by " + mib(out->total_bytes - out->usable_bytes);
  p.notes.insert(p.notes.begin(),
                 rows > 0 ? at_default + ": planned with " + std::to_string(p.batch_rows) +
                                " rows at once, the most in steps of " + std::to_string(kBatchRowsStep) +
                                " that fit; a context lowers the default the same way where its arena does not fit "
                                "the memory it finds (wt_context_create with n_batch_rows 0)"
                          : at_default + ", and fewer rows do not make it fit: planned with " +
                                std::to_string(p.batch_rows) + " rows at once, the fewest a context lowers the default to");
  *out = std::move(p);
  return Status::ok();
}

Status sizing_backend(const PlanRequest& req, std::unique_ptr<Backend>* own, const Backend** out) {
  if (req.sizing_backend) {
    *out = req.sizing_backend;
    return Status::ok();
  }
  BackendOptions bo;
  bo.n_threads = req.n_threads;
  WT_TRY(create_cpu_backend(bo, own));
  *out = own->get();
  return Status::ok();
}

}  // namespace

Status plan(const BoardProfile& board, const ModelShape& model, const PlanRequest& request, Plan* out) {
  std::unique_ptr<Backend> own;
  const Backend* sizing = nullptr;
  WT_TRY(sizing_backend(request, &own, &sizing));
  return plan_on(board, model, request, *sizing, out);
}

Status solve_max_ctx(const BoardProfile& board, const ModelShape& model, const PlanRequest& request,
                     int32_t* out_n_ctx) {
  std::unique_ptr<Backend> own;
  const Backend* sizing = nullptr;
  WT_TRY(sizing_backend(request, &own, &sizing));
  PlanRequest r = request;
  auto fits = [&](int32_t steps, bool* ok) -> Status {
    r.n_ctx = steps * kPlanCtxStep;
    Plan p;
    WT_TRY(plan_on(board, model, r, *sizing, &p));
    *ok = p.fits;
    return Status::ok();
  };
  // Steps lo fit (or lo = the smallest context that holds n_new), hi do not.
  int32_t lo = request.n_new / kPlanCtxStep + 1, hi = (1 << 20) / kPlanCtxStep + 1;
  const int32_t train = model.hp.n_ctx_train;
  if (train > 0 && !request.beyond_train_ctx) {
    hi = std::min(hi, train / kPlanCtxStep + 1);  // steps up to the training context
    if (lo >= hi) {
      *out_n_ctx = 0;  // n_new alone reaches the training context
      return Status::ok();
    }
  }
  bool ok = false;
  WT_TRY(fits(lo, &ok));
  if (!ok) {
    *out_n_ctx = 0;
    return Status::ok();
  }
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    WT_TRY(fits(mid, &ok));
    (ok ? lo : hi) = mid;
  }
  *out_n_ctx = lo * kPlanCtxStep;
  return Status::ok();
}

Status solve_max_keep(const BoardProfile& board, const ModelShape& model, const PlanRequest& request,
                      float* out_keep) {
  if (request.prune.method == WT_PRUNE_FULL)
    return error(WT_ERR_INVALID_ARGUMENT, "full KV has no keep ratio to solve for");
  if (request.prune.budget > 0)
    return error(WT_ERR_INVALID_ARGUMENT, "a constant budget is set: solve for n_ctx instead of keep");
  std::unique_ptr<Backend> own;
  const Backend* sizing = nullptr;
  WT_TRY(sizing_backend(request, &own, &sizing));
  PlanRequest r = request;
  auto fits = [&](int32_t milli, bool* ok) -> Status {
    r.prune.keep = static_cast<float>(milli) / 1000.0f;
    Plan p;
    WT_TRY(plan_on(board, model, r, *sizing, &p));
    *ok = p.fits;
    return Status::ok();
  };
  bool ok = false;
  WT_TRY(fits(1000, &ok));
  if (ok) {
    *out_keep = 1.0f;
    return Status::ok();
  }
  WT_TRY(fits(1, &ok));
  if (!ok) {
    *out_keep = 0.0f;
    return Status::ok();
  }
  int32_t lo = 1, hi = 1000;
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    WT_TRY(fits(mid, &ok));
    (ok ? lo : hi) = mid;
  }
  *out_keep = static_cast<float>(lo) / 1000.0f;
  return Status::ok();
}

}  // namespace wt
