// Streams and their event rings (stream.h).
#include "stream.h"

#include "cuda_status.h"

namespace wt::cuda {

CudaStream::~CudaStream() {
  if (stream_) (void)cudaStreamSynchronize(stream_);
  for (cudaEvent_t& e : events_)
    if (e) (void)cudaEventDestroy(e);
  if (stream_) (void)cudaStreamDestroy(stream_);
}

Status CudaStream::init() {
  // Non-blocking: no implicit ordering with the legacy default stream, which nothing uses.
  WT_TRY(cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
  for (cudaEvent_t& e : events_)
    WT_TRY(cuda_status(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags"));
  return Status::ok();
}

Status CudaStream::record(uint64_t* out_value) {
  const uint64_t value = recorded_ + 1;
  WT_TRY(cuda_status(cudaEventRecord(events_[value % kEvents], stream_), "cudaEventRecord"));
  recorded_ = value;
  *out_value = value;
  return Status::ok();
}

Status CudaStream::wait(const CudaStream& other, uint64_t value) {
  if (value == 0 || value > other.recorded_)
    return error(WT_ERR_INVALID_ARGUMENT, "cuda: wait_event on an event that was never recorded");
  return cuda_status(cudaStreamWaitEvent(stream_, other.events_[value % kEvents], 0), "cudaStreamWaitEvent");
}

Status CudaStream::synchronize() {
  if (!stream_) return Status::ok();  // never made (init failed): nothing queued
  return cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

}  // namespace wt::cuda
