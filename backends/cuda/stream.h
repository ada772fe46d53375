// One in-order stream: a cudaStream_t and a ring of events. record() returns a point on the
// stream's timeline (a counter); the point's cudaEvent_t is slot value % kEvents of the
// ring, made at init, so recording allocates nothing. Waiting on a point whose slot has
// since been recorded again waits for that later point of the same stream instead: always
// correct (a stream is in order), only more conservative.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "base/status.h"

namespace wt::cuda {

class CudaStream {
 public:
  static constexpr int kEvents = 64;

  CudaStream() = default;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream();

  Status init();
  cudaStream_t get() const { return stream_; }
  // Records the next point; *out_value is its number (1, 2, ...).
  Status record(uint64_t* out_value);
  // Makes this stream's later work wait for point `value` of `other` (no host wait).
  Status wait(const CudaStream& other, uint64_t value);
  // Blocks the host until the stream is idle.
  Status synchronize();
  uint64_t recorded() const { return recorded_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t events_[kEvents] = {};
  uint64_t recorded_ = 0;
};

}  // namespace wt::cuda
