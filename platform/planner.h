// The static budget planner: every byte a context of a model needs on a board, before
// anything is allocated. The arena figure comes from the context's own layout function
// (runtime/engine/context_layout.h) and the KV rows per layer from the pruning policy's own
// kv_budget(), so the plan and the engine cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "whittle.h"
#include "runtime/engine/context_layout.h"
#include "board.h"
#include "model_shape.h"

namespace wt {

struct PlanRequest {
  int32_t n_ctx = 4096;      // context rows (prompt + generated)
  int32_t n_new = 256;       // generated tokens: the prompt is n_ctx - n_new
  wt_prune_params prune = wt_prune_default_params();
  wt_backend_kind backend = WT_BACKEND_CPU;
  int32_t n_threads = 0;     // the CPU backend's threads (its workspace depends on them); 0 = all
  bool logits_all = false;
  bool f32_activations = false;
  // Op workspaces come from this backend when given; otherwise from a CPU backend made with
  // n_threads (exact for WT_BACKEND_CPU, an estimate for a device: see Plan::notes).
  const Backend* sizing_backend = nullptr;
  // The KV pager (wt_context_params): > 0 bounds the device pool to this many blocks; the
  // pinned host pool then holds every block of every layer at n_ctx.
  int32_t kv_device_blocks = 0;
  int32_t kv_block_tokens = 64;
  // WT_KV_PAGER_COPY: the two pools and their copies on a unified board too; otherwise the
  // pager is in place there (one pool of every block), as a context on that board makes it.
  bool kv_pager_copy = false;
  DType kv_type = DType::f32;  // the KV cache's element: f32, f16 or q8_0 (wt_context_params.kv_type)
  int32_t n_batch_rows = 0;    // wt_context_params.n_batch_rows (0: the default)
  // solve_max_ctx stops at the model's training context (Hparams::n_ctx_train, when the
  // model states one): past it the model was never trained and its answers degrade. True
  // lifts the cap (the user's explicit choice).
  bool beyond_train_ctx = false;
};

// Host runtime overhead the planner adds (an estimate, not a measurement): the process's
// code and libraries, the tokenizer's tables, thread stacks and page tables.
inline constexpr uint64_t kRuntimeOverheadBytes = uint64_t{64} << 20;
// Added for a device backend: upload staging, pipelines and descriptor pools, the driver's
// storage of queued commands (Vulkan: BackendCaps::queued_work_bytes, 2 MiB), cuBLAS handles
// (CUDA). The driver context itself is in the board's reserve.
inline constexpr uint64_t kDeviceRuntimeOverheadBytes = uint64_t{64} << 20;
// Added for CUDA on a unified board (Jetson), where host memory is the board's DRAM: cuBLAS's
// code and data, resident once the backend opens it (backends/cuda/cublas_library.h).
// Measured on x86-64 as the RSS a dlopen of libcublas adds: 95 MiB for CUDA 12.2, 122 MiB
// for 12.6 (JetPack 6.1/6.2's release; its aarch64 libcublasLt has the same data sections as
// the x86-64 one), 150 MiB for 13.0 (docs/results/cuda-libraries.md).
inline constexpr uint64_t kCudaLibraryBytes = uint64_t{160} << 20;
// Solve mode searches contexts in steps of this many tokens.
inline constexpr int32_t kPlanCtxStep = 256;

struct PlanComponent {
  std::string name;
  uint64_t bytes = 0;
  std::string note;
};

struct Plan {
  BoardProfile board;
  std::string model_name;
  PlanRequest request;
  wt_prune_params prune{};       // resolved (model-dependent defaults filled in)
  // What counts against the board: weights, the context's arena (KV sized by the method),
  // the pager's pools where they are device memory or the same DRAM, overhead.
  std::vector<PlanComponent> components;
  uint64_t weights_bytes = 0;
  int32_t batch_rows = 0;            // rows of a prompt's pass or slice (slice_rows()): with
                                     // n_batch_rows 0 the default's, or where that plan does
                                     // not fit, the largest multiple of kBatchRowsStep that
                                     // does (as wt_context_create lowers it), or where none
                                     // does, those of kBatchRowsStep (as its refusal counts)
  ArenaBytes arena;                  // the arena of a context created with max_new_tokens = n_new
                                     // (== its stats.arena_bytes on the CPU)
  std::vector<int32_t> kv_rows;      // [n_layer] KV rows each layer is sized for (kv_capacity:
                                     // the method's peak at a prompt of n_ctx - n_new, + n_new)
  std::vector<uint64_t> kv_layer_bytes;  // [n_layer]
  uint64_t kv_bytes = 0;             // sum of kv_layer_bytes
  uint64_t overhead_bytes = 0;
  uint64_t total_bytes = 0;          // planned: weights + arena + counted pools + overhead
  uint64_t usable_bytes = 0;         // board total - reserve
  bool fits = false;
  int64_t spare_bytes = 0;           // usable - total (negative: short by that much)
  // The same context created without max_new_tokens reserves n_ctx KV rows in every layer:
  // its total, and whether it fits.
  uint64_t allocated_total_bytes = 0;
  bool allocated_fits = false;
  std::vector<std::string> notes;
};

// WT_ERR_INVALID_ARGUMENT for a bad request (n_ctx, n_new, prune parameters, naming the
// field); WT_ERR_UNSUPPORTED when the model cannot run: head_dim > 256, or a weight whose type
// the request's backend does not read (named, with the types it reads).
Status plan(const BoardProfile& board, const ModelShape& model, const PlanRequest& request, Plan* out);

// The largest n_ctx (a multiple of kPlanCtxStep, <= 1048576, and <= the model's training
// context unless request.beyond_train_ctx) whose plan fits, with request.n_new generated
// tokens; 0 when none does.
Status solve_max_ctx(const BoardProfile& board, const ModelShape& model, const PlanRequest& request,
                     int32_t* out_n_ctx);
// For a pruned method at request.n_ctx: the largest keep (in steps of 0.001, <= 1) whose
// plan fits; 0 when none does. WT_ERR_INVALID_ARGUMENT for full KV or a constant budget.
Status solve_max_keep(const BoardProfile& board, const ModelShape& model, const PlanRequest& request,
                      float* out_keep);

}  // namespace wt
