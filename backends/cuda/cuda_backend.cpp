// The CUDA backend: memory by kind, streams with event rings, the ring for host arrays of
// op calls, and the public factory. Op dispatch lives in dispatch.cpp.
#include "cuda_backend.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "backends/weight_types.h"
#include "base/fault_injection.h"
#include "cuda_status.h"

namespace wt {
namespace cuda {

Status CudaBackend::init(const BackendOptions& options) {
  {
    const fault::ForeignCode driver;  // the runtime's and cuBLAS's own allocations are not the sweep's
    WT_TRY(open_device(options.device_index, &dev_));
    memory_.set_device(&dev_);
    WT_TRY(streams_[0].init());
    WT_TRY(streams_[1].init());
    WT_TRY(copy_busy_.init());
    WT_TRY(compute_wait_.init());
    WT_TRY(cublas_library(&cublas_lib_));
    WT_TRY(cublas_status(cublas_lib_->create(&cublas_.handle), "cublasCreate"));
    cublas_.gemm_ex = cublas_lib_->gemm_ex;
    WT_TRY(cublas_status(cublas_lib_->set_stream(cublas_.handle, streams_[0].get()), "cublasSetStream"));
  }
  WT_TRY(memory_.alloc(kRingBytes, MemoryKind::host_pinned, &ring_));
  caps_.name = "cuda";
  caps_.device_name = dev_.device_name;
  caps_.unified_memory = dev_.integrated;
  caps_.device_only_unmapped = device_only_unmapped_of(WT_BACKEND_CUDA, dev_.integrated);  // memory.h
  caps_.has_copy_queue = true;
  caps_.reads_any_host_pointer = false;
  caps_.max_buffer_bytes = dev_.total_memory_bytes;
  caps_.max_binding_bytes = SIZE_MAX / 2;
  caps_.weight_types = weight_types_of(WT_BACKEND_CUDA);  // what kernels/cuda/common.cuh decodes
  caps_.kv_types = kv_types_of(WT_BACKEND_CUDA);
  // MatmulOp's fusions (kernels/cuda/matmul.cu: any row length). WT_CUDA_FUSE=0 turns them
  // off (the engine then runs the norms, rope, swiglu, biases and residual adds as ops of
  // their own); a value naming norope and/or noglu keeps rope out of Q, K, V and swiglu out
  // of gate and up (then in the down projection's input): A/Bs on one build.
  const char* fuse = std::getenv("WT_CUDA_FUSE");
  caps_.fused_matmul_k = fuse && std::strcmp(fuse, "0") == 0 ? 0 : INT64_MAX;
  caps_.fuse_rope = !(fuse && std::strstr(fuse, "norope"));
  caps_.fuse_glu = !(fuse && std::strstr(fuse, "noglu"));
  caps_.gemma_kernels = true;  // embed's scale, swiglu's gelu, windows in attention.cu and attention_decode.cu
  caps_.n_threads = 1;
  simd_ = "sm_" + std::to_string(dev_.cc_major) + std::to_string(dev_.cc_minor);
  caps_.simd = simd_.c_str();
  const char* pdl = std::getenv("WT_CUDA_PDL");
  pdl_ = dev_.cc_major >= 9 && pdl && std::strcmp(pdl, "1") == 0;
  // Output columns per warp of the fused one-row matmuls (1, 2, 4 or 8; unset: matmul.cu's
  // choice): an A/B on one build.
  if (const char* cols = std::getenv("WT_CUDA_ROW_COLS")) {
    const long v = std::strtol(cols, nullptr, 10);
    row_cols_ = v == 1 || v == 2 || v == 4 || v == 8 ? static_cast<int>(v) : 0;
  }
  if (const char* seg = std::getenv("WT_CUDA_STEP_SEGMENT")) {
    const long v = std::strtol(seg, nullptr, 10);
    segment_ops_ = v > 0 ? static_cast<size_t>(v) : 0;
  }
  const char* prof = std::getenv("WT_CUDA_PROFILE");
  profile_.on = prof && std::strcmp(prof, "1") == 0;
  return Status::ok();
}

CudaBackend::~CudaBackend() {
  profile_.print(graphs_.counters(), segment_ops_);
  (void)bind_thread();
  graphs_.abandon(streams_[0].get());
  (void)streams_[0].synchronize();
  (void)streams_[1].synchronize();
  if (cublas_.handle) (void)cublas_lib_->destroy(cublas_.handle);
  memory_.free(&ring_);
  // The rest of memory_ and the streams go with their destructors.
}

Status CudaBackend::bind_thread() const { return cuda_status(cudaSetDevice(dev_.index), "cudaSetDevice"); }

Status CudaBackend::memory_info(MemoryInfo* out) const {
  WT_TRY(bind_thread());
  size_t free_bytes = 0, total_bytes = 0;
  WT_TRY(cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  out->total_bytes = total_bytes;
  out->free_bytes = free_bytes;
  return Status::ok();
}

Status CudaBackend::alloc(size_t bytes, MemoryKind kind, Buffer* out) {
  WT_TRY(bind_thread());
  return memory_.alloc(bytes, kind, out);
}

void CudaBackend::free(Buffer* buffer) {
  // Freeing is never in the hot path; waiting keeps a buffer alive while queued work uses it.
  (void)bind_thread();
  (void)flush_graph();
  (void)streams_[0].synchronize();
  (void)streams_[1].synchronize();
  memory_.free(buffer);
}

Status CudaBackend::copy_async(Stream stream, const Buffer& dst, const Buffer& src, size_t bytes) {
  if (bytes > dst.size_bytes || bytes > src.size_bytes)
    return error(WT_ERR_INVALID_ARGUMENT, "cuda: copy of " + std::to_string(bytes) + " bytes exceeds a buffer view");
  if (bytes == 0) return Status::ok();
  if (!dst.device || !src.device) return error(WT_ERR_INVALID_ARGUMENT, "cuda: copy_async of a buffer without an address");
  WT_TRY(bind_thread());
  if (stream == Stream::compute) WT_TRY(flush_graph());
  char* d = static_cast<char*>(dst.device) + dst.offset;
  const char* s = static_cast<const char*>(src.device) + src.offset;
  if (stream == Stream::copy) WT_TRY(copy_busy_.open(streams_[1].get()));
  return cuda_status(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDefault, streams_[static_cast<int>(stream)].get()),
                     "cudaMemcpyAsync");
}

Status CudaBackend::zero_async(Stream stream, const Buffer& dst, size_t bytes) {
  WT_TRY(check_zero_range("cuda", dst, bytes));
  if (bytes == 0) return Status::ok();
  if (!dst.device) return error(WT_ERR_INVALID_ARGUMENT, "cuda: zero_async of a buffer without an address");
  WT_TRY(bind_thread());
  if (stream == Stream::compute) WT_TRY(flush_graph());
  if (stream == Stream::copy) WT_TRY(copy_busy_.open(streams_[1].get()));
  return cuda_status(cudaMemsetAsync(static_cast<char*>(dst.device) + dst.offset, 0, bytes,
                                     streams_[static_cast<int>(stream)].get()),
                     "cudaMemsetAsync");
}

Status CudaBackend::record_event(Stream stream, Event* out) {
  WT_TRY(bind_thread());
  uint64_t value = 0;
  if (stream == Stream::compute) WT_TRY(flush_graph());
  if (stream == Stream::copy) WT_TRY(copy_busy_.close(streams_[1].get()));
  WT_TRY(streams_[static_cast<int>(stream)].record(&value));
  *out = Event{value, stream};
  return Status::ok();
}

Status CudaBackend::wait_event(Stream stream, const Event& event) {
  if (event.stream == stream) return Status::ok();  // a stream is in order with itself
  WT_TRY(bind_thread());
  CudaStream& s = streams_[static_cast<int>(stream)];
  if (stream == Stream::copy) {
    // A copy-stream wait is not copy time: the run of copies so far ends here.
    WT_TRY(copy_busy_.close(s.get()));
    return s.wait(streams_[static_cast<int>(event.stream)], event.value);
  }
  WT_TRY(flush_graph());
  WT_TRY(compute_wait_.open(s.get()));
  WT_TRY(s.wait(streams_[static_cast<int>(event.stream)], event.value));
  return compute_wait_.close(s.get());
}

bool CudaBackend::stream_times(StreamTimes* out) {
  if (!bind_thread() || !copy_busy_.collect() || !compute_wait_.collect()) return false;
  out->copy_busy_ms = copy_busy_.total_ms();
  out->compute_wait_ms = compute_wait_.total_ms();
  return true;
}

Status CudaBackend::synchronize(Stream stream) {
  WT_TRY(bind_thread());
  if (stream == Stream::compute) WT_TRY(flush_graph());
  if (stream == Stream::copy) WT_TRY(copy_busy_.close(streams_[1].get()));
  {
    const bool step_end = stream == Stream::compute && profile_.in_step;
    const HostProfile::Span span(step_end, &profile_.sync_ns);
    if (step_end) profile_.in_step = false;
    WT_TRY(streams_[static_cast<int>(stream)].synchronize());
  }
  if (stream == Stream::compute) ring_slots_.clear();  // no queued kernel reads the ring any more
  return Status::ok();
}

Status CudaBackend::ring_reserve(size_t bytes, size_t* out_offset) {
  size_t size = 0;
  // Full: the queued kernels that read the ring finish first.
  // A step graph being captured holds kernels that read the ring: it is launched first.
  return ring_slots_.reserve(
      bytes, kRingAlign, "cuda",
      [&]() -> Status {
        WT_TRY(flush_graph());
        return streams_[0].synchronize();
      },
      out_offset, &size);
}

Status CudaBackend::set_step_replay(bool on) {
  step_replay_ = on;
  if (on) {
    segment_ = 0;
    profile_.steps += profile_.on ? 1 : 0;
    profile_.in_step = profile_.on;
    return Status::ok();
  }
  WT_TRY(bind_thread());
  return flush_graph();
}

Status CudaBackend::flush_graph() {
  if (!graphs_.capturing()) return Status::ok();
  const HostProfile::Span span(profile_.on, &profile_.finish_ns);
  ++segment_;
  return graphs_.finish(streams_[0].get());
}

Status CudaBackend::launch_args(size_t need, const char* op, Launch* out) const {
  if (need > 0 && (need > workspace_.size_bytes || !workspace_.device))
    return error(WT_ERR_INTERNAL, std::string("cuda: ") + op + " needs " + std::to_string(need) +
                                      " workspace bytes, the plan gave " + std::to_string(workspace_.size_bytes));
  Launch l;
  l.stream = streams_[0].get();
  l.workspace = workspace_.device ? static_cast<char*>(workspace_.device) + workspace_.offset : nullptr;
  l.workspace_bytes = workspace_.device ? workspace_.size_bytes : 0;
  l.cublas = cublas_.handle ? &cublas_ : nullptr;
  l.sm_count = dev_.sm_count;
  l.cc_major = dev_.cc_major;
  l.max_threads_per_block = dev_.max_threads_per_block;
  l.max_shared_per_block = dev_.max_shared_per_block;
  l.pdl = pdl_;
  l.row_cols = row_cols_;
  *out = l;
  return Status::ok();
}

}  // namespace cuda

Status create_cuda_backend(const BackendOptions& options, std::unique_ptr<Backend>* out) {
  return make_backend<cuda::CudaBackend>("cuda", options, out);
}

}  // namespace wt
