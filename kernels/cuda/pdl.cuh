// Every CUDA op kernel launches through launch_kernel and begins with kernel_prologue(),
// so that programmatic dependent launch (PDL, compute capability 9.0+) can be switched on
// for all of them at once (WT_CUDA_PDL=1; Launch::pdl).
//
// Why it exists: a decode step of a small model is ~360 short kernels, and between two
// kernels of one stream the GPU drains the first grid before it schedules any block of the
// next. With PDL the next grid is scheduled as soon as every block of the running one has
// started (launch_dependents below), and its blocks sit resident until griddepcontrol.wait
// returns, which is when the previous grid has completed and its writes are visible. Only
// the launch gap overlaps: no kernel reads or writes anything before its wait, so the
// results are those of serial execution (parity and compute-sanitizer pass both ways).
// Why it is off by default: on an H200 (docs/results/gpu-h200.md, round 6) it changed no
// decode step beyond the noise and cost 3% of an 8k prefill (a waiting grid holds SM
// slots the running one's later blocks could use). The decode step is not bound by the
// gaps between kernels yet; measure again once it is.
//
// The rule (scripts/check-cuda-kernels.py checks it on every build machine, GPU or not):
// a __global__ function's first statement is kernel_prologue(), and no kernel launches
// with <<< >>>. A grid launched without the attribute (cuBLAS's, or any launch while
// Launch::pdl is false) waits for the one before it in full, and its own wait returns at
// once.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "launch.cuh"

namespace wt::cuda {

__device__ __forceinline__ void kernel_prologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Wait first, then let the next grid be scheduled: at most one grid waits ahead of the
  // one that runs, so a chain of dependents never piles up on the SMs.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Launches kernel<<<grid, block, smem, l.stream>>>(args...), with the PDL attribute where
// l.pdl says so. The status names the kernel and clears CUDA's sticky launch error.
template <typename... Params, typename... Args>
Status launch_kernel(const char* name, const Launch& l, void (*kernel)(Params...), dim3 grid, dim3 block,
                     size_t smem, Args&&... args) {
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = l.stream;
  cfg.attrs = l.pdl ? attr : nullptr;
  cfg.numAttrs = l.pdl ? 1 : 0;
  return launch_status(name, cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace wt::cuda
