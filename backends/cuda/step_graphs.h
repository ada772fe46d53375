// Decode steps as CUDA graphs. While the engine marks a decode step (Backend::set_step_replay),
// the compute stream's launches between two points the host must see are captured
// (cudaStreamBeginCapture, this thread only) instead of launched one by one; at the next such
// point the capture goes to a cached executable graph that GraphBook (graph_book.h) picks,
// updated in place (new pointers, lengths, grids) or instantiated, and is launched as one
// unit. The GPU then runs the step's few hundred small kernels back to back, without a host
// launch between them.
#pragma once

#include <cuda_runtime.h>

#include "base/status.h"
#include "graph_book.h"
#include "kernels/ops.h"

namespace wt::cuda {

class StepGraphs {
 public:
  StepGraphs() = default;
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  ~StepGraphs();

  bool capturing() const { return capturing_; }
  // Starts capturing the stream's launches (the first launch of a segment); `position`:
  // GraphBook::begin's.
  Status begin(cudaStream_t stream, uint32_t position);
  // Launches captured in the segment so far.
  size_t n_ops() const { return book_.n_ops(); }
  // A launch of `op` is about to be captured.
  void add(Op op) { book_.add(static_cast<uint32_t>(op)); }
  // Ends the capture and launches it on the stream: through the slot's updated instance, or
  // a new one. The stream then holds the segment's work as if launched op by op.
  Status finish(cudaStream_t stream);
  // Ends the capture and drops it (a launch inside it failed): its launches never run.
  void abandon(cudaStream_t stream);

  const GraphBook::Counters& counters() const { return book_.counters(); }

 private:
  void drop(int slot);

  GraphBook book_;
  cudaGraphExec_t execs_[GraphBook::kSlots] = {};
  bool capturing_ = false;
};

}  // namespace wt::cuda
