// The CPU backend: host memory, a worker pool as the compute stream, ops dispatched from
// kernels/ops.def to the kernels in kernels/cpu. The compute stream runs each launch to
// completion before returning, which is a valid in-order stream, so its events are complete
// when recorded. The copy stream is a thread of its own (copy_worker.h): copies on it
// overlap the kernels, and the compute stream's wait_event blocks until they are done.
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_cpu.h"
#include "base/fault_injection.h"
#include "backends/backend.h"
#include "backends/weight_types.h"
#include "copy_worker.h"
#include "thread_pool.h"

namespace wt {
namespace {

struct Launch {
  const OpCall* call;
  void* workspace;
};

using cpu::ThreadCtx;

void run_embed(const ThreadCtx& tc, const Launch& l) {
  const EmbedOp& a = l.call->get<EmbedOp>();
  cpu::embed(tc, a.dst, a.table, a.ids, a.scale);
}
void run_rmsnorm(const ThreadCtx& tc, const Launch& l) {
  const RmsnormOp& a = l.call->get<RmsnormOp>();
  cpu::rmsnorm(tc, a.dst, a.x, a.weight, a.eps, a.residual);
}
void rope(const ThreadCtx& tc, const RopeOp& a) {
  double freqs[256];  // n_rot <= 512 (validate_op)
  cpu::RopeParams p{.n_rot = a.n_rot, .neox = a.neox, .op = &a, .freqs = freqs};
  if (!a.angles.empty()) {
    p.angles = static_cast<const float*>(a.angles.data);
    p.angles_stride = static_cast<int64_t>(a.angles.nb[1] / sizeof(float));
  } else {
    rope_freqs(a, freqs);
  }
  cpu::rope(tc, a.x, a.x2, a.positions, p);
}
// A one-row call's scratch at the front of the workspace (MatmulOp's fusions): the fused
// input [k], then the products before they are added into dst [all outputs]; the matmul's
// own workspace follows.
size_t align64(size_t n) { return (n + 63) & ~size_t{63}; }
size_t fused_scratch_bytes(const MatmulOp& a) {
  if (a.x.n_rows() != 1) return 0;
  const MatmulProducts p = matmul_products(a);
  int64_t outs = 0;
  for (int i = 0; i < p.n; ++i) outs += p.w[i]->ne[1];
  return align64(sizeof(float) * static_cast<size_t>(a.x.ne[0])) + align64(sizeof(float) * static_cast<size_t>(outs));
}

void run_matmul(const ThreadCtx& tc, const Launch& l) {
  const MatmulOp& a = l.call->get<MatmulOp>();
  const MatmulProducts p = matmul_products(a);
  char* ws = static_cast<char*>(l.workspace) + fused_scratch_bytes(a);
  float* const sums0 =
      reinterpret_cast<float*>(static_cast<char*>(l.workspace) + align64(sizeof(float) * static_cast<size_t>(a.x.ne[0])));
  Tensor x = a.x;
  if (!a.norm.empty() || !a.gate.empty()) {  // the fused input, made once by the first worker
    x = make_tensor_2d(l.workspace, DType::f32, a.x.ne[0], 1);
    if (!a.norm.empty()) cpu::rmsnorm(tc, x, a.x, a.norm, a.norm_eps, Tensor{});
    if (!a.gate.empty()) cpu::swiglu(tc, x, a.gate, a.x);
    tc.sync();
  }
  // The products go into dst, or with accumulate into the scratch first (sums0).
  Tensor out[3];
  float* sums = sums0;
  for (int i = 0; i < p.n; ++i) {
    out[i] = *p.dst[i];
    if (a.accumulate) {
      out[i] = make_tensor_2d(sums, DType::f32, p.w[i]->ne[1], 1);
      sums += p.w[i]->ne[1];
    }
  }
  for (int i = 0; i < p.n; ++i) {
    // Several rows quantize x into the shared workspace: every worker must be done reading
    // the previous product's copy first (one row quantizes into each worker's own buffer).
    if (i > 0 && !a.f32_activations && a.x.n_rows() > 1) tc.sync();
    if (a.f32_activations) {
      cpu::matmul_f32(tc, out[i], *p.w[i], x, ws);
    } else {
      cpu::matmul(tc, out[i], *p.w[i], x, ws);
    }
  }
  if (!matmul_fused(a)) return;
  // The epilogue, in the order of the ops it stands for: bias, the residual add, swiglu, rope.
  tc.sync();
  for (int i = 0; i < p.n; ++i)
    if (!p.bias[i]->empty()) cpu::add(tc, out[i], out[i], *p.bias[i]);
  tc.sync();
  if (a.accumulate)
    for (int i = 0; i < p.n; ++i) cpu::add(tc, *p.dst[i], *p.dst[i], out[i]);
  if (a.glu) cpu::swiglu(tc, a.dst, a.dst, a.dst2);
  if (!a.rope.x.empty()) rope(tc, a.rope);
}
void run_add(const ThreadCtx& tc, const Launch& l) {
  const AddOp& a = l.call->get<AddOp>();
  cpu::add(tc, a.dst, a.a, a.b);
}
void run_rope(const ThreadCtx& tc, const Launch& l) { rope(tc, l.call->get<RopeOp>()); }
void run_attention_prefill(const ThreadCtx& tc, const Launch& l) {
  const AttentionPrefillOp& a = l.call->get<AttentionPrefillOp>();
  cpu::attention_prefill(tc, a.dst, a.q, a.k, a.v, a.pos0, a.scale, l.workspace, a.skip_rows, a.window);
}
void run_attention_decode(const ThreadCtx& tc, const Launch& l) {
  const AttentionDecodeOp& a = l.call->get<AttentionDecodeOp>();
  cpu::attention_decode(tc, a.dst, a.q, a.k, a.v, a.pos0, a.scale, l.workspace, a.key_rows, a.n_key_rows, a.window);
}
void run_swiglu(const ThreadCtx& tc, const Launch& l) {
  const SwigluOp& a = l.call->get<SwigluOp>();
  cpu::swiglu(tc, a.dst, a.gate, a.up, a.gelu);
}
void run_copy_rows(const ThreadCtx& tc, const Launch& l) {
  const CopyRowsOp& a = l.call->get<CopyRowsOp>();
  cpu::copy_rows(tc, a.dst, a.src, a.row0);
  if (!a.dst2.empty()) cpu::copy_rows(tc, a.dst2, a.src2, a.row0);
}
void run_window_scores(const ThreadCtx& tc, const Launch& l) {
  const WindowScoresOp& a = l.call->get<WindowScoresOp>();
  const cpu::WindowScoresParams p{a.window, a.softmax, a.per_query, a.n_visible, a.scale};
  cpu::window_scores(tc, a.dst, a.q, a.k, p, l.workspace);
}
void run_pool1d(const ThreadCtx& tc, const Launch& l) {
  const Pool1dOp& a = l.call->get<Pool1dOp>();
  cpu::pool1d(tc, a.dst, a.src, a.kernel, a.max);
}
void run_topk(const ThreadCtx& tc, const Launch& l) {
  const TopkOp& a = l.call->get<TopkOp>();
  cpu::topk(tc, a.scores, a.k, a.out, l.workspace);
}
void run_gather_rows(const ThreadCtx& tc, const Launch& l) {
  const GatherRowsOp& a = l.call->get<GatherRowsOp>();
  cpu::gather_rows(tc, a.dst, a.src, a.ids, a.n_ids, a.per_head);
}
void run_block_scores(const ThreadCtx& tc, const Launch& l) {
  const BlockScoresOp& a = l.call->get<BlockScoresOp>();
  const cpu::BlockScoresParams p{a.block, a.unit, a.query_rows, a.key_ids, a.key_ids ? a.n_keys : 0};
  cpu::block_scores(tc, a.dst, a.q, a.k, p, l.workspace);
}
void run_kv_similarity(const ThreadCtx& tc, const Launch& l) {
  const KvSimilarityOp& a = l.call->get<KvSimilarityOp>();
  cpu::kv_similarity(tc, a.dst, a.k, a.v, a.anchors, a.decay);
}
void run_key_bounds(const ThreadCtx& tc, const Launch& l) {
  const KeyBoundsOp& a = l.call->get<KeyBoundsOp>();
  cpu::key_bounds(tc, a.dst, a.k, a.block, l.workspace, a.key_ids, a.key_ids ? a.n_keys : 0);
}
void run_bound_scores(const ThreadCtx& tc, const Launch& l) {
  const BoundScoresOp& a = l.call->get<BoundScoresOp>();
  cpu::bound_scores(tc, a.dst, a.q, a.bounds, a.scale, l.workspace);
}
void run_argmax(const ThreadCtx& tc, const Launch& l) {
  const ArgmaxOp& a = l.call->get<ArgmaxOp>();
  if (tc.ith == 0) *a.out = cpu::argmax(a.x);
}

using RunFn = void (*)(const ThreadCtx&, const Launch&);
constexpr RunFn kDispatch[] = {
#define WT_OP(name, Args) &run_##name,
#include "kernels/ops.def"
#undef WT_OP
};
static_assert(sizeof(kDispatch) / sizeof(kDispatch[0]) == static_cast<size_t>(Op::count),
              "every op in ops.def needs a CPU kernel");

void job_trampoline(const ThreadCtx& tc, const void* arg) {
  const Launch& l = *static_cast<const Launch*>(arg);
  kDispatch[static_cast<size_t>(l.call->op)](tc, l);
}

class CpuBackend final : public Backend {
 public:
  // max_binding_bytes: BackendOptions' (0: no limit the engine would split for).
  CpuBackend(int n_threads, bool fixed_threads, size_t max_binding_bytes) : pool_(n_threads, fixed_threads) {
    caps_.name = "cpu";
    caps_.device_name = "host CPU";
    caps_.unified_memory = true;
    caps_.has_copy_queue = true;  // the copy worker
    caps_.reads_any_host_pointer = true;
    caps_.max_buffer_bytes = SIZE_MAX / 2;
    caps_.max_binding_bytes = max_binding_bytes > 0 ? max_binding_bytes : SIZE_MAX / 2;
    caps_.weight_types = weight_types_of(WT_BACKEND_CPU);
    caps_.kv_types = kv_types_of(WT_BACKEND_CPU);
    caps_.fused_matmul_k = INT64_MAX;
    caps_.fuse_rope = true;
    caps_.fuse_glu = true;  // the same swiglu, in the gate and up call instead of the down projection's
    caps_.gemma_kernels = true;
    caps_.n_threads = pool_.n_threads();
    caps_.simd = cpu::matmul_isa();
  }

  const BackendCaps& caps() const override { return caps_; }

  Status memory_info(MemoryInfo* out) const override {
    struct sysinfo si;
    if (sysinfo(&si) != 0) return error(WT_ERR_BACKEND, "cpu: sysinfo failed");
    out->total_bytes = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    out->free_bytes = static_cast<uint64_t>(si.freeram + si.bufferram) * si.mem_unit;
    return Status::ok();
  }

  Status alloc(size_t bytes, MemoryKind kind, Buffer* out) override {
    if (kind == MemoryKind::device_only) kind = MemoryKind::device;  // ordinary memory too (backend.h)
    if (bytes > SIZE_MAX - 64)
      return error(WT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = fault::should_fail(fault::Site::alloc) ? nullptr : std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) return error(WT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    fault::note_alloc();
    *out = Buffer{p, p, 0, 0, bytes, kind};
    return Status::ok();
  }

  void free(Buffer* buffer) override {
    copies_.wait(copies_.last());  // no queued copy may touch freed memory
    if (buffer && buffer->host) {
      std::free(buffer->host);
      fault::note_free();
    }
    if (buffer) *buffer = Buffer{};
  }

  Status copy_async(Stream stream, const Buffer& dst, const Buffer& src, size_t bytes) override {
    if (bytes > dst.size_bytes || bytes > src.size_bytes)
      return error(WT_ERR_INVALID_ARGUMENT, "cpu: copy of " + std::to_string(bytes) + " bytes exceeds a buffer view");
    void* d = static_cast<char*>(dst.host) + dst.offset;
    const void* s = static_cast<const char*>(src.host) + src.offset;
    if (stream == Stream::copy) {
      copies_.submit(d, s, bytes);
    } else {
      std::memcpy(d, s, bytes);
    }
    return Status::ok();
  }
  Status zero_async(Stream stream, const Buffer& dst, size_t bytes) override {
    WT_TRY(check_zero_range("cpu", dst, bytes));
    void* d = static_cast<char*>(dst.host) + dst.offset;
    if (stream == Stream::copy) {
      copies_.submit(d, nullptr, bytes);
    } else {
      std::memset(d, 0, bytes);
    }
    return Status::ok();
  }
  Status record_event(Stream stream, Event* out) override {
    // A copy-stream event is the copy worker's sequence number; compute events are complete.
    const uint64_t value = stream == Stream::copy ? copies_.last() : ++compute_timeline_;
    *out = Event{value, stream};
    return Status::ok();
  }
  Status wait_event(Stream stream, const Event& event) override {
    // The copy worker starts a copy only after the caller queued it, by which time every
    // earlier compute launch has returned: waits on compute events are already met.
    if (stream == Stream::compute && event.stream == Stream::copy) compute_wait_ns_ += copies_.wait(event.value);
    return Status::ok();
  }
  bool stream_times(StreamTimes* out) override {
    out->copy_busy_ms = static_cast<double>(copies_.busy_ns()) * 1e-6;
    out->compute_wait_ms = static_cast<double>(compute_wait_ns_) * 1e-6;
    return true;
  }
  Status synchronize(Stream stream) override {
    if (stream == Stream::copy) copies_.wait(copies_.last());
    return Status::ok();
  }
  bool worker_counts(WorkerCounts* out) const override {
    out->launches = pool_.launches();
    out->worker_launches = pool_.worker_launches();
    return true;
  }

  size_t workspace_bytes(const OpCall& c) const override {
    const int nth = pool_.n_threads();
    switch (c.op) {
      case Op::matmul: {
        const MatmulOp& a = c.get<MatmulOp>();
        if (a.f32_activations) return fused_scratch_bytes(a) + cpu::matmul_f32_workspace_bytes(a.x.ne[0], nth);
        const MatmulProducts p = matmul_products(a);
        size_t most = 0;  // the products run one after another in the one workspace
        for (int i = 0; i < p.n; ++i) most = std::max(most, cpu::matmul_workspace_bytes(p.w[i]->type, a.x.ne[0], a.x.n_rows()));
        return fused_scratch_bytes(a) + most;
      }
      case Op::attention_prefill: {
        const AttentionPrefillOp& a = c.get<AttentionPrefillOp>();
        return cpu::attention_workspace_bytes(a.q.ne[0], a.q.ne[1], a.k.ne[1], nth);
      }
      case Op::attention_decode: {
        const AttentionDecodeOp& a = c.get<AttentionDecodeOp>();
        return cpu::attention_workspace_bytes(a.q.ne[0], a.q.ne[1], a.k.ne[1], nth);
      }
      case Op::window_scores: {
        // The window is at most q's rows (the kernel clamps it), the bound a sizing call
        // that leaves the window unset gets.
        const WindowScoresOp& a = c.get<WindowScoresOp>();
        const int64_t rows = a.q.ne[2];
        const int64_t w = a.window > 0 && a.window < rows ? a.window : rows;
        return cpu::window_scores_workspace_bytes(a.q.ne[0], a.q.ne[1], static_cast<int32_t>(w), nth);
      }
      case Op::topk:
        return cpu::topk_workspace_bytes(c.get<TopkOp>().scores.ne[0], nth);
      case Op::block_scores: {
        const BlockScoresOp& a = c.get<BlockScoresOp>();
        return cpu::block_scores_workspace_bytes(a.q.ne[0], a.q.ne[1], nth);
      }
      case Op::key_bounds:
        return cpu::key_bounds_workspace_bytes(c.get<KeyBoundsOp>().k.ne[0], nth);
      case Op::bound_scores: {
        const BoundScoresOp& a = c.get<BoundScoresOp>();
        return cpu::bound_scores_workspace_bytes(a.q.ne[0], a.q.ne[1], a.bounds.ne[1], a.dst.ne[0], nth);
      }
      default:
        return 0;
    }
  }
  void set_workspace(const Buffer& workspace) override { workspace_ = workspace; }

  bool supports(Op op, const char** reason) const override {
    if (reason) *reason = "";
    return op < Op::count;
  }

 protected:
  Status enqueue(const OpCall& call) override {
    if (fault::should_fail(fault::Site::launch))
      return error(WT_ERR_BACKEND, std::string("cpu: launch of ") + op_name(call.op) + " failed (injected fault)");
    // A binding limit given in BackendOptions holds a matmul's weights to it as a device's
    // binding would (the engine splits larger ones: OpRunner::linears), so the CPU tests of
    // that split fail if it stops splitting.
    if (call.op == Op::matmul && caps_.max_binding_bytes < SIZE_MAX / 2) {
      const MatmulProducts p = matmul_products(call.get<MatmulOp>());
      for (int i = 0; i < p.n; ++i)
        if (p.w[i]->nb[1] * static_cast<size_t>(p.w[i]->ne[1]) > caps_.max_binding_bytes)
          return error(WT_ERR_UNSUPPORTED, "cpu: matmul weights of " +
                                               std::to_string(p.w[i]->nb[1] * static_cast<size_t>(p.w[i]->ne[1])) +
                                               " bytes, more than the binding limit (" +
                                               std::to_string(caps_.max_binding_bytes) + ")");
    }
    const size_t need = workspace_bytes(call);
    if (need > workspace_.size_bytes)
      return error(WT_ERR_INTERNAL, std::string("cpu: op ") + op_name(call.op) + " needs " + std::to_string(need) +
                                        " workspace bytes, the plan gave " + std::to_string(workspace_.size_bytes));
    Launch l{&call, static_cast<char*>(workspace_.host) + workspace_.offset};
    pool_.run(&job_trampoline, &l);
    return Status::ok();
  }

 private:
  BackendCaps caps_;
  cpu::ThreadPool pool_;
  cpu::CopyWorker copies_;
  Buffer workspace_;
  uint64_t compute_timeline_ = 0;
  uint64_t compute_wait_ns_ = 0;  // compute (the calling thread) blocked on copy events
};

}  // namespace

Status create_cpu_backend(const BackendOptions& options, std::unique_ptr<Backend>* out) {
  int n = options.n_threads;
  if (n < 0 || n > 1024) return error(WT_ERR_INVALID_ARGUMENT, "n_threads must be in [0, 1024]");
  if (n == 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  try {
    *out = std::make_unique<CpuBackend>(n, options.fixed_threads, options.max_binding_bytes);
  } catch (const std::bad_alloc&) {
    return error(WT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate the backend and its " + std::to_string(n) + " threads");
  } catch (const std::exception& e) {
    return error(WT_ERR_BACKEND, std::string("cpu: cannot start worker threads: ") + e.what());
  }
  return Status::ok();
}

}  // namespace wt
