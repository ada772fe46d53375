// Step graphs (step_graphs.h): capture, update or instantiate, launch.
#include "step_graphs.h"

#include "cuda_status.h"

namespace wt::cuda {

StepGraphs::~StepGraphs() {
  for (int i = 0; i < GraphBook::kSlots; ++i) drop(i);
}

void StepGraphs::drop(int slot) {
  if (execs_[slot]) (void)cudaGraphExecDestroy(execs_[slot]);
  execs_[slot] = nullptr;
}

Status StepGraphs::begin(cudaStream_t stream, uint32_t position) {
  // Thread-local mode: only this thread's calls that cannot be captured (a cudaMalloc, a
  // synchronize) fail while capturing; other contexts' threads are not affected.
  WT_TRY(cuda_status(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"));
  capturing_ = true;
  book_.begin(position);
  return Status::ok();
}

void StepGraphs::abandon(cudaStream_t stream) {
  if (!capturing_) return;
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(stream, &graph);
  if (graph) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // an invalidated capture leaves its error behind
}

Status StepGraphs::finish(cudaStream_t stream) {
  if (!capturing_) return Status::ok();
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess) {
    if (graph) (void)cudaGraphDestroy(graph);
    return cuda_status(ended, "cudaStreamEndCapture");
  }
  if (book_.n_ops() == 0) {
    (void)cudaGraphDestroy(graph);
    return Status::ok();
  }
  const GraphBook::Decision d = book_.end();
  bool instantiate = d.action == GraphBook::Action::instantiate;
  if (instantiate && d.evict) drop(d.slot);
  if (!instantiate) {
    cudaGraphExecUpdateResultInfo info{};
    const cudaError_t e = cudaGraphExecUpdate(execs_[d.slot], graph, &info);
    book_.updated(e == cudaSuccess);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // the refusal is an answer, not an error of the next call
      drop(d.slot);
      instantiate = true;
    }
  }
  if (instantiate) {
    const cudaError_t e = cudaGraphInstantiate(&execs_[d.slot], graph, 0);
    if (e != cudaSuccess) {
      execs_[d.slot] = nullptr;
      book_.forget(d.slot);
      (void)cudaGraphDestroy(graph);
      return cuda_status(e, "cudaGraphInstantiate");
    }
  }
  // The instance holds its own copy of the nodes: the captured graph can go now.
  (void)cudaGraphDestroy(graph);
  return cuda_status(cudaGraphLaunch(execs_[d.slot], stream), "cudaGraphLaunch");
}

}  // namespace wt::cuda
