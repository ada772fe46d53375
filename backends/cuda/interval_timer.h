// Device time between two points of a stream, summed over many intervals: a ring of timed
// event pairs made at init, so timing allocates nothing. open() records the start (once per
// interval), close() the end; collect() adds the intervals that have completed, oldest
// first, without waiting. If every pair is still in flight, an interval goes untimed rather
// than blocking the host (256 intervals queued ahead of the device: not seen in practice).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "base/status.h"

namespace wt::cuda {

class IntervalTimer {
 public:
  static constexpr int kPairs = 256;

  IntervalTimer() = default;
  IntervalTimer(const IntervalTimer&) = delete;
  IntervalTimer& operator=(const IntervalTimer&) = delete;
  ~IntervalTimer();

  Status init();
  Status open(cudaStream_t stream);
  Status close(cudaStream_t stream);
  Status collect();
  double total_ms() const { return total_ms_; }

 private:
  cudaEvent_t start_[kPairs] = {};
  cudaEvent_t end_[kPairs] = {};
  uint64_t opened_ = 0;     // intervals begun (the pair of interval i is i % kPairs)
  uint64_t collected_ = 0;  // intervals read back
  bool open_ = false;
  bool timing_ = false;     // the open interval has a pair (not dropped)
  double total_ms_ = 0;
};

}  // namespace wt::cuda
