// The CUDA backend object: owns the device choice, memory, the compute and copy streams,
// the cuBLAS handle (cuBLAS opened by init: cublas_library.h) and the upload/readback ring.
// Op dispatch (dispatch.cpp) uses the helpers below; nothing allocates after init.
#pragma once

#include <string>

#include "kernels/cuda/cublas_gemm.h"
#include "kernels/cuda/launch.cuh"
#include "backends/backend.h"
#include "backends/upload_ring.h"
#include "cublas_library.h"
#include "device.h"
#include "host_profile.h"
#include "interval_timer.h"
#include "memory.h"
#include "step_graphs.h"
#include "stream.h"

namespace wt::cuda {

class CudaBackend final : public Backend {
 public:
  CudaBackend() = default;
  Status init(const BackendOptions& options);
  ~CudaBackend() override;

  const BackendCaps& caps() const override { return caps_; }
  Status memory_info(MemoryInfo* out) const override;
  Status alloc(size_t bytes, MemoryKind kind, Buffer* out) override;
  void free(Buffer* buffer) override;
  Status copy_async(Stream stream, const Buffer& dst, const Buffer& src, size_t bytes) override;
  Status zero_async(Stream stream, const Buffer& dst, size_t bytes) override;
  Status record_event(Stream stream, Event* out) override;
  Status wait_event(Stream stream, const Event& event) override;
  Status synchronize(Stream stream) override;
  // From timed event pairs: the copy stream's runs of copies, and each compute-stream wait
  // on a copy event (an event before and one after the cudaStreamWaitEvent).
  bool stream_times(StreamTimes* out) override;
  size_t workspace_bytes(const OpCall& call) const override;   // dispatch.cpp
  void set_workspace(const Buffer& workspace) override { workspace_ = workspace; }
  bool supports(Op op, const char** reason) const override;    // dispatch.cpp
  // On: the compute stream's launches are captured into step graphs (step_graphs.h) until
  // the next point the host must see; off: what was captured is launched.
  Status set_step_replay(bool on) override;

  const CudaCaps& cuda_caps() const { return dev_; }
  const GraphBook::Counters& graph_counters() const { return graphs_.counters(); }

 protected:
  Status enqueue(const OpCall& call) override;                 // dispatch.cpp

 private:
  // Makes this backend's device current on the calling thread (contexts of one model may
  // run on several threads, one at a time; the current device is per thread in CUDA).
  Status bind_thread() const;
  // Launches the step graph being captured, if any: before anything on the compute stream
  // that the host or the other stream must see (synchronize, events, copies, host results).
  Status flush_graph();
  // Whether a launch of this call may go into a step graph: no host result, no cuBLAS.
  bool capturable(const OpCall& call, bool host_result) const;
  // `bytes` of the pinned mapped ring for this launch's host arrays; when the ring is full,
  // waits for the compute stream (whose queued kernels read it) and starts over.
  // The slot is at ring_host() + offset for the host, ring_device() + offset for kernels.
  Status ring_reserve(size_t bytes, size_t* out_offset);
  char* ring_host() const { return static_cast<char*>(ring_.host); }
  char* ring_device() const { return static_cast<char*>(ring_.device); }
  // Launch arguments for a call that needs `need` workspace bytes, or an error if the
  // engine's workspace (set_workspace) is smaller.
  Status launch_args(size_t need, const char* op, Launch* out) const;

  CudaCaps dev_;
  Memory memory_;
  CudaStream streams_[2];
  IntervalTimer copy_busy_;     // copies between two copy-stream events or waits
  IntervalTimer compute_wait_;  // the compute stream stalled on copy events
  const CublasLibrary* cublas_lib_ = nullptr;  // opened by init (cublas_library.h)
  CublasGemm cublas_;                          // the handle on the compute stream
  StepGraphs graphs_;
  bool step_replay_ = false;
  // Kernels launch with programmatic dependent launch (kernels/cuda/pdl.cuh) where
  // WT_CUDA_PDL=1 on compute capability 9.0+; off by default: on an H200 it changed no decode
  // step and cost 3% of prefill (docs/results/gpu-h200.md, round 6).
  bool pdl_ = false;
  int row_cols_ = 0;  // Launch::row_cols (WT_CUDA_ROW_COLS)
  // A decode step's capture is ended and launched every segment_ops_ launches, so the GPU
  // runs the first layers while the host captures the rest (an H200, default model: TPOT
  // 1.33 ms against 2.13 ms for whole steps; docs/results/gpu-h200.md, round 8).
  // WT_CUDA_STEP_SEGMENT=N sets N, 0 one capture up to the step's first host-visible point.
  // At 48 the book's 32 slots hold steps of up to 1536 launches; segments of 16 or 32 on 8
  // slots re-instantiated every graph and were slower than whole steps. segment_: the
  // segment's ordinal in the step (GraphBook::begin's position).
  static constexpr size_t kStepSegment = 48;
  size_t segment_ops_ = kStepSegment;
  uint32_t segment_ = 0;
  HostProfile profile_;  // WT_CUDA_PROFILE=1
  BackendCaps caps_;
  std::string simd_;     // "sm_87"; caps_.simd points here
  Buffer workspace_;
  // The pinned mapped upload/readback ring, made at init: ids and host results of the
  // launches between two syncs.
  static constexpr size_t kRingBytes = 4u << 20;
  static constexpr size_t kRingAlign = 256;
  Buffer ring_;
  UploadRing ring_slots_{kRingBytes};
};

}  // namespace wt::cuda
