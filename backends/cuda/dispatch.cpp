// Backend::launch for CUDA: each op of kernels/ops.def maps to its kernel pair
// kernels/cuda/<op>.{cu,cuh} (a launch function and a workspace function) — or to a reason
// why the op is not implemented here. Nothing is allocated.
//
// Host arrays of a call are made device-visible first (kernels/cuda/launch.cuh): the ids a
// call passes are copied into the pinned mapped ring and the kernel gets a copy of the
// OpCall whose ids point there; ops with a host result (argmax, topk) get a ring slot as
// out_i, and launch synchronizes the compute stream and copies the slot to the caller's
// out_i before it returns. Every other launch returns without waiting.
#include <cstring>
#include <string>

#include "kernels/cuda/add.cuh"
#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/block_scores.cuh"
#include "kernels/cuda/copy_rows.cuh"
#include "kernels/cuda/embed.cuh"
#include "kernels/cuda/gather_rows.cuh"
#include "kernels/cuda/kv_similarity.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/pool1d.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda/window_scores.cuh"
#include "cuda_backend.h"
#include "cuda_status.h"

namespace wt::cuda {
namespace {

using LaunchFn = Status (*)(const OpCall&, const Launch&);
using WorkspaceFn = size_t (*)(const OpCall&);

struct OpEntry {
  LaunchFn launch;        // nullptr: not implemented on CUDA
  WorkspaceFn workspace;  // scratch bytes of one call (0 when it needs none)
  const char* reason;     // why not (shown by supports() and the parity suite)
};

// ---- the op table (one entry per line of ops.def) -----------------------------------------

// An op without a kernel gets {nullptr, nullptr, "why"}: launch() then returns
// WT_ERR_UNSUPPORTED with that reason, supports() returns false with it, and tests/parity
// shows it as a skip.
constexpr OpEntry entry_embed{&embed, &embed_workspace_bytes, nullptr};
constexpr OpEntry entry_rmsnorm{&rmsnorm, &rmsnorm_workspace_bytes, nullptr};
constexpr OpEntry entry_matmul{&matmul, &matmul_workspace_bytes, nullptr};
constexpr OpEntry entry_add{&add, &add_workspace_bytes, nullptr};
constexpr OpEntry entry_rope{&rope, &rope_workspace_bytes, nullptr};
constexpr OpEntry entry_attention_prefill{&attention_prefill, &attention_prefill_workspace_bytes, nullptr};
constexpr OpEntry entry_attention_decode{&attention_decode, &attention_decode_workspace_bytes, nullptr};
constexpr OpEntry entry_swiglu{&swiglu, &swiglu_workspace_bytes, nullptr};
constexpr OpEntry entry_copy_rows{&copy_rows, &copy_rows_workspace_bytes, nullptr};
constexpr OpEntry entry_window_scores{&window_scores, &window_scores_workspace_bytes, nullptr};
constexpr OpEntry entry_pool1d{&pool1d, &pool1d_workspace_bytes, nullptr};
constexpr OpEntry entry_topk{&topk, &topk_workspace_bytes, nullptr};
constexpr OpEntry entry_gather_rows{&gather_rows, &gather_rows_workspace_bytes, nullptr};
constexpr OpEntry entry_block_scores{&block_scores, &block_scores_workspace_bytes, nullptr};
constexpr OpEntry entry_kv_similarity{&kv_similarity, &kv_similarity_workspace_bytes, nullptr};
constexpr OpEntry entry_argmax{&argmax, &argmax_workspace_bytes, nullptr};

constexpr OpEntry kOps[] = {
#define WT_OP(name) entry_##name,
#include "kernels/ops.def"
#undef WT_OP
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(Op::count),
              "every op in ops.def needs a CUDA entry: a kernel or a reason");

// How many ids an op reads (ops.def): embed one per dst row, rope one position per row of
// x, the others n_ids. Negative: a malformed call.
int64_t ids_count(const OpCall& c) {
  switch (c.op) {
    case Op::embed: return c.dst.ne[1];
    case Op::rope: return c.src[0].ne[2];
    default: return c.n_ids;
  }
}

// How many ints an op with a host result writes to out_i: argmax one, topk i0 per row.
int64_t out_count(const OpCall& c) {
  switch (c.op) {
    case Op::argmax: return 1;
    case Op::topk: return c.i[0] > 0 ? c.src[0].n_rows() * c.i[0] : 0;
    default: return 0;
  }
}

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

Status CudaBackend::launch(const OpCall& call) {
  if (call.op >= Op::count) return error(WT_ERR_INVALID_ARGUMENT, "cuda: unknown op");
  const OpEntry& e = kOps[static_cast<size_t>(call.op)];
  const char* name = op_name(call.op);
  if (!e.launch) return error(WT_ERR_UNSUPPORTED, std::string("cuda: ") + name + ": " + e.reason);
  WT_TRY(bind_thread());

  OpCall c = call;
  const int64_t n_ids = call.ids ? ids_count(call) : 0;
  const int64_t n_out = call.out_i ? out_count(call) : 0;
  if (n_ids < 0 || n_out < 0) return error(WT_ERR_INVALID_ARGUMENT, std::string("cuda: ") + name + ": negative count");
  // Given ids stay given even when there are none: an empty key set is not "no ids"
  // (attention_decode then outputs 0, block_scores scores no block, as on the CPU).
  // One reservation for both arrays, so a wrap of the ring cannot separate them.
  const size_t ids_bytes = sizeof(int32_t) * static_cast<size_t>(n_ids);
  const size_t out_bytes = sizeof(int32_t) * static_cast<size_t>(n_out);
  size_t slot = 0;
  if (c.ids || call.out_i) {
    WT_TRY(ring_reserve(align_up(ids_bytes, 256) + (call.out_i ? out_bytes : 0), &slot));
    if (c.ids) {
      std::memcpy(ring_host() + slot, call.ids, ids_bytes);
      c.ids = reinterpret_cast<const int32_t*>(ring_device() + slot);
    }
    if (call.out_i) c.out_i = reinterpret_cast<int32_t*>(ring_device() + slot + align_up(ids_bytes, 256));
  }

  Launch l;
  WT_TRY(launch_args(e.workspace(c), name, &l));
  WT_TRY(e.launch(c, l));

  if (call.out_i) {
    // A host result: wait for it, then hand it over (the ring is free again after the wait).
    WT_TRY(streams_[0].synchronize());
    ring_head_ = 0;
    if (out_bytes) std::memcpy(call.out_i, ring_host() + slot + align_up(ids_bytes, 256), out_bytes);
  }
  return Status::ok();
}

bool CudaBackend::supports(Op op, const char** reason) const {
  if (op >= Op::count) {
    if (reason) *reason = "unknown op";
    return false;
  }
  const OpEntry& e = kOps[static_cast<size_t>(op)];
  if (reason) *reason = e.launch ? "" : e.reason;
  return e.launch != nullptr;
}

size_t CudaBackend::workspace_bytes(const OpCall& call) const {
  if (call.op >= Op::count) return 0;
  const OpEntry& e = kOps[static_cast<size_t>(call.op)];
  return e.workspace ? e.workspace(call) : 0;
}

}  // namespace wt::cuda
