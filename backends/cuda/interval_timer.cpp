// Timed event pairs (interval_timer.h).
#include "interval_timer.h"

#include "cuda_status.h"

namespace wt::cuda {

IntervalTimer::~IntervalTimer() {
  for (int i = 0; i < kPairs; ++i) {
    if (start_[i]) (void)cudaEventDestroy(start_[i]);
    if (end_[i]) (void)cudaEventDestroy(end_[i]);
  }
}

Status IntervalTimer::init() {
  for (int i = 0; i < kPairs; ++i) {
    WT_TRY(cuda_status(cudaEventCreate(&start_[i]), "cudaEventCreate"));
    WT_TRY(cuda_status(cudaEventCreate(&end_[i]), "cudaEventCreate"));
  }
  return Status::ok();
}

Status IntervalTimer::open(cudaStream_t stream) {
  if (open_) return Status::ok();
  open_ = true;
  if (opened_ - collected_ == kPairs) WT_TRY(collect());
  timing_ = opened_ - collected_ < kPairs;
  if (!timing_) return Status::ok();
  return cuda_status(cudaEventRecord(start_[opened_ % kPairs], stream), "cudaEventRecord");
}

Status IntervalTimer::close(cudaStream_t stream) {
  if (!open_) return Status::ok();
  open_ = false;
  if (!timing_) return Status::ok();
  WT_TRY(cuda_status(cudaEventRecord(end_[opened_ % kPairs], stream), "cudaEventRecord"));
  ++opened_;
  return Status::ok();
}

Status IntervalTimer::collect() {
  while (collected_ < opened_) {
    const int i = static_cast<int>(collected_ % kPairs);
    const cudaError_t q = cudaEventQuery(end_[i]);
    if (q == cudaErrorNotReady) break;  // in order: later intervals are not done either
    WT_TRY(cuda_status(q, "cudaEventQuery"));
    float ms = 0;
    WT_TRY(cuda_status(cudaEventElapsedTime(&ms, start_[i], end_[i]), "cudaEventElapsedTime"));
    total_ms_ += ms;
    ++collected_;
  }
  return Status::ok();
}

}  // namespace wt::cuda
