// Backend::enqueue for CUDA (Backend::launch has run validate_op): each op of
// kernels/ops.def maps to its kernel pair kernels/cuda/<op>.{cu,cuh} (a launch function and
// a workspace function) — or to a reason why the op is not implemented here. Nothing is
// allocated.
//
// Host arrays of a call are made device-visible first (kernels/cuda/launch.cuh): the input
// array a call passes (op_host_arrays: ids, positions, skip rows, key rows) is copied into
// the pinned mapped ring and the kernel gets a copy of the OpCall whose array points there;
// ops with a host result (argmax, topk) get a ring slot as their `out`, and enqueue
// synchronizes the compute stream and copies the slot to the caller's `out` before it
// returns. Every other launch returns without waiting.
#include <cstring>
#include <string>

#include "kernels/cuda/add.cuh"
#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/block_scores.cuh"
#include "kernels/cuda/copy_rows.cuh"
#include "kernels/cuda/embed.cuh"
#include "kernels/cuda/gather_rows.cuh"
#include "kernels/cuda/key_bounds.cuh"
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
constexpr OpEntry entry_key_bounds{&key_bounds, &key_bounds_workspace_bytes, nullptr};
constexpr OpEntry entry_bound_scores{&bound_scores, &bound_scores_workspace_bytes, nullptr};

constexpr OpEntry kOps[] = {
#define WT_OP(name, Args) entry_##name,
#include "kernels/ops.def"
#undef WT_OP
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(Op::count),
              "every op in ops.def needs a CUDA entry: a kernel or a reason");

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

Status CudaBackend::enqueue(const OpCall& call) {
  const OpEntry& e = kOps[static_cast<size_t>(call.op)];
  const char* name = op_name(call.op);
  if (!e.launch) return error(WT_ERR_UNSUPPORTED, std::string("cuda: ") + name + ": " + e.reason);
  WT_TRY(bind_thread());
  const HostProfile::Span span(profile_.on && step_replay_, &profile_.issue_ns, &profile_.finish_ns);

  OpCall c = call;
  const OpHostArrays h = op_host_arrays(c);  // pointers into c
  const int32_t* ids = h.in ? *h.in : nullptr;
  int32_t* out = h.out ? *h.out : nullptr;
  const int64_t n_ids = ids ? h.n_in : 0;
  const int64_t n_out = out ? h.n_out : 0;
  if (n_ids < 0 || n_out < 0) return error(WT_ERR_INVALID_ARGUMENT, std::string("cuda: ") + name + ": negative count");
  // Given ids stay given even when there are none: an empty key set is not "no ids"
  // (attention_decode then outputs 0, block_scores scores no block, as on the CPU).
  // One reservation for both arrays, so a wrap of the ring cannot separate them.
  const size_t ids_bytes = sizeof(int32_t) * static_cast<size_t>(n_ids);
  const size_t out_bytes = sizeof(int32_t) * static_cast<size_t>(n_out);
  // In a decode step the launch joins the step graph being captured; one that cannot (a host
  // result, cuBLAS) first launches what was captured, then runs on its own.
  const bool capture = step_replay_ && capturable(c, out != nullptr);
  if (!capture) WT_TRY(flush_graph());
  size_t slot = 0;
  if (ids || out) {
    WT_TRY(ring_reserve(align_up(ids_bytes, 256) + (out ? out_bytes : 0), &slot));
    if (ids) {
      std::memcpy(ring_host() + slot, ids, ids_bytes);
      *h.in = reinterpret_cast<const int32_t*>(ring_device() + slot);
    }
    if (out) *h.out = reinterpret_cast<int32_t*>(ring_device() + slot + align_up(ids_bytes, 256));
  }

  Launch l;
  WT_TRY(launch_args(e.workspace(c), name, &l));
  if (capture && !graphs_.capturing()) WT_TRY(graphs_.begin(streams_[0].get(), segment_));
  if (capture) graphs_.add(c.op);
  const Status launched = e.launch(c, l);
  if (!launched && graphs_.capturing()) graphs_.abandon(streams_[0].get());  // the capture is unusable now
  WT_TRY(launched);
  // A full segment goes to the GPU now, while the host captures the rest of the step.
  if (capture && segment_ops_ && graphs_.n_ops() >= segment_ops_) WT_TRY(flush_graph());

  if (out) {
    // A host result: wait for it, then hand it over (the ring is free again after the wait).
    WT_TRY(streams_[0].synchronize());
    ring_slots_.clear();
    if (out_bytes) std::memcpy(out, ring_host() + slot + align_up(ids_bytes, 256), out_bytes);
  }
  return Status::ok();
}

bool CudaBackend::capturable(const OpCall& call, bool host_result) const {
  if (host_result) return false;
  return call.op != Op::matmul || !matmul_may_use_cublas(call);
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
  if (!call.holds_op_args()) return 0;  // not validated: only shapes are read
  const OpEntry& e = kOps[static_cast<size_t>(call.op)];
  return e.workspace ? e.workspace(call) : 0;
}

}  // namespace wt::cuda
