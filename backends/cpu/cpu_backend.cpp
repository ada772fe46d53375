// The CPU backend: host memory, a worker pool as the compute stream, ops dispatched from
// kernels/ops.def to the kernels in kernels/cpu. The compute stream runs each launch to
// completion before returning, which is a valid in-order stream, so its events are complete
// when recorded. The copy stream is a thread of its own (copy_worker.h): copies on it
// overlap the kernels, and the compute stream's wait_event blocks until they are done.
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_cpu.h"
#include "base/fault_injection.h"
#include "backends/backend.h"
#include "copy_worker.h"
#include "thread_pool.h"

namespace wt {
namespace {

struct Launch {
  const OpCall* call;
  void* workspace;
};

using cpu::ThreadCtx;

void run_embed(const ThreadCtx& tc, const Launch& l) { cpu::embed(tc, l.call->dst, l.call->src[0], l.call->ids); }
void run_rmsnorm(const ThreadCtx& tc, const Launch& l) {
  cpu::rmsnorm(tc, l.call->dst, l.call->src[0], l.call->src[1], l.call->f[0]);
}
void run_matmul(const ThreadCtx& tc, const Launch& l) {
  if (l.call->i[0] == 1) {
    cpu::matmul_f32(tc, l.call->dst, l.call->src[1], l.call->src[0], l.workspace);
  } else {
    cpu::matmul(tc, l.call->dst, l.call->src[1], l.call->src[0], l.workspace);
  }
}
void run_add(const ThreadCtx& tc, const Launch& l) { cpu::add(tc, l.call->dst, l.call->src[0], l.call->src[1]); }
void run_rope(const ThreadCtx& tc, const Launch& l) {
  const OpCall& c = *l.call;
  cpu::RopeParams p{c.i[0], c.i[1] != 0, c.f[0], c.f[1],
                    c.src[1].empty() ? nullptr : static_cast<const float*>(c.src[1].data)};
  cpu::rope(tc, c.src[0], c.ids, p);
}
void run_attention_prefill(const ThreadCtx& tc, const Launch& l) {
  const OpCall& c = *l.call;
  cpu::attention_prefill(tc, c.dst, c.src[0], c.src[1], c.src[2], c.i[0], c.f[0], l.workspace, c.ids);
}
void run_attention_decode(const ThreadCtx& tc, const Launch& l) {
  const OpCall& c = *l.call;
  cpu::attention_decode(tc, c.dst, c.src[0], c.src[1], c.src[2], c.i[0], c.f[0], l.workspace, c.ids, c.n_ids);
}
void run_swiglu(const ThreadCtx& tc, const Launch& l) { cpu::swiglu(tc, l.call->dst, l.call->src[0], l.call->src[1]); }
void run_copy_rows(const ThreadCtx& tc, const Launch& l) {
  cpu::copy_rows(tc, l.call->dst, l.call->src[0], l.call->i[0]);
}
void run_window_scores(const ThreadCtx& tc, const Launch& l) {
  const OpCall& c = *l.call;
  const cpu::WindowScoresParams p{c.i[0], (c.i[1] & 1) != 0, (c.i[1] & 2) != 0, c.i[2], c.f[0]};
  cpu::window_scores(tc, c.dst, c.src[0], c.src[1], p, l.workspace);
}
void run_pool1d(const ThreadCtx& tc, const Launch& l) {
  cpu::pool1d(tc, l.call->dst, l.call->src[0], l.call->i[0], l.call->i[1] == 1);
}
void run_topk(const ThreadCtx& tc, const Launch& l) {
  cpu::topk(tc, l.call->src[0], l.call->i[0], l.call->out_i, l.workspace);
}
void run_gather_rows(const ThreadCtx& tc, const Launch& l) {
  const OpCall& c = *l.call;
  cpu::gather_rows(tc, c.dst, c.src[0], c.ids, c.n_ids, c.i[0] == 1);
}
void run_block_scores(const ThreadCtx& tc, const Launch& l) {
  const OpCall& c = *l.call;
  const cpu::BlockScoresParams p{c.i[0], c.i[1], c.i[2], c.ids, c.n_ids};
  cpu::block_scores(tc, c.dst, c.src[0], c.src[1], p, l.workspace);
}
void run_kv_similarity(const ThreadCtx& tc, const Launch& l) {
  const OpCall& c = *l.call;
  cpu::kv_similarity(tc, c.dst, c.src[0], c.src[1], c.src[2], c.f[0]);
}
void run_argmax(const ThreadCtx& tc, const Launch& l) {
  if (tc.ith == 0) *l.call->out_i = cpu::argmax(l.call->src[0]);
}

using RunFn = void (*)(const ThreadCtx&, const Launch&);
constexpr RunFn kDispatch[] = {
#define WT_OP(name) &run_##name,
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
  explicit CpuBackend(int n_threads) : pool_(n_threads) {
    caps_.name = "cpu";
    caps_.device_name = "host CPU";
    caps_.unified_memory = true;
    caps_.has_copy_queue = true;  // the copy worker
    caps_.reads_any_host_pointer = true;
    caps_.max_buffer_bytes = SIZE_MAX / 2;
    caps_.max_binding_bytes = SIZE_MAX / 2;
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q4_0, DType::q4_1, DType::q8_0, DType::q4_k,
                    DType::q5_k, DType::q6_k})
      caps_.weight_types |= dtype_bit(t);
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

  size_t workspace_bytes(const OpCall& c) const override {
    const int nth = pool_.n_threads();
    switch (c.op) {
      case Op::matmul:
        if (c.i[0] == 1) return cpu::matmul_f32_workspace_bytes(c.src[0].ne[0], nth);
        return cpu::matmul_workspace_bytes(c.src[1].type, c.src[0].ne[0], c.src[0].n_rows());
      case Op::attention_prefill:
      case Op::attention_decode:
        return cpu::attention_workspace_bytes(c.src[0].ne[0], c.src[0].ne[1], c.src[1].ne[1], nth);
      case Op::window_scores: {
        // The window is at most q's rows (the kernel clamps it), the bound a sizing call
        // that leaves i0 unset gets.
        const int64_t rows = c.src[0].ne[2];
        const int64_t w = c.i[0] > 0 && c.i[0] < rows ? c.i[0] : rows;
        return cpu::window_scores_workspace_bytes(c.src[0].ne[0], c.src[0].ne[1], static_cast<int32_t>(w), nth);
      }
      case Op::topk:
        return cpu::topk_workspace_bytes(c.src[0].ne[0], nth);
      case Op::block_scores:
        return cpu::block_scores_workspace_bytes(c.src[0].ne[0], c.src[0].ne[1], nth);
      default:
        return 0;
    }
  }
  void set_workspace(const Buffer& workspace) override { workspace_ = workspace; }

  Status launch(const OpCall& call) override {
    if (call.op >= Op::count) return error(WT_ERR_INVALID_ARGUMENT, "cpu: unknown op");
    if (fault::should_fail(fault::Site::launch))
      return error(WT_ERR_BACKEND, std::string("cpu: launch of ") + op_name(call.op) + " failed (injected fault)");
    const size_t need = workspace_bytes(call);
    if (need > workspace_.size_bytes)
      return error(WT_ERR_INTERNAL, std::string("cpu: op ") + op_name(call.op) + " needs " + std::to_string(need) +
                                        " workspace bytes, the plan gave " + std::to_string(workspace_.size_bytes));
    Launch l{&call, static_cast<char*>(workspace_.host) + workspace_.offset};
    pool_.run(&job_trampoline, &l);
    return Status::ok();
  }

  bool supports(Op op, const char** reason) const override {
    if (reason) *reason = "";
    return op < Op::count;
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
    *out = std::make_unique<CpuBackend>(n);
  } catch (const std::bad_alloc&) {
    return error(WT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate the backend and its " + std::to_string(n) + " threads");
  } catch (const std::exception& e) {
    return error(WT_ERR_BACKEND, std::string("cpu: cannot start worker threads: ") + e.what());
  }
  return Status::ok();
}

}  // namespace wt
