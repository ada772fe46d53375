// What every CUDA op kernel receives, and the one error converter the kernels use.
//
// Each op of kernels/ops.def has a pair kernels/cuda/<op>.cu / <op>.cuh (the CPU twin's
// stem) declaring
//     wt::Status wt::cuda::<op>(const wt::OpCall& c, const wt::cuda::Launch& l);
//     size_t wt::cuda::<op>_workspace_bytes(const wt::OpCall& c);   // 0 when it needs none
// Both read the op's typed arguments, `const XxxOp& a = c.get<XxxOp>();` (kernels/ops.h).
// The first gets a call validate_op has checked (Backend::launch): it refuses only what this
// backend cannot run (a weight type, head_dim > 256, shared memory, a workspace too small),
// launches its kernel(s) on l.stream and returns at once (no sync). The second is the scratch
// that call needs (the engine sizes the workspace from it); it also gets unvalidated sizing
// calls (tensors without data, fields at their defaults), so it only reads shapes.
//
// Memory model (backends/cuda/README.md): every tensor of the call (its .data) is
// device-addressable (backend memory: managed, or mapped pinned host memory). The backend's
// dispatcher makes host arrays device-visible before the call (op_host_arrays): the input
// array (embed ids, rope positions, prefill skip_rows, decode key_rows, gather_rows ids,
// block_scores key_ids) points at a device-visible copy of the caller's, and a host result
// (argmax and topk `out`) at a mapped pinned host slot the kernel writes; the dispatcher
// synchronizes the stream and copies that slot to the caller's `out` after the kernel
// returns. Kernels never allocate: scratch comes from l.workspace (sized by
// Backend::workspace_bytes for the same call).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"
#include "base/status.h"

namespace wt::cuda {

struct CublasGemm;

struct Launch {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;      // device-addressable scratch, workspace_bytes(call) at least
  size_t workspace_bytes = 0;
  const CublasGemm* cublas = nullptr;  // cuBLAS bound to `stream` (matmul on many rows; cublas_gemm.h)
  int sm_count = 0;               // multiprocessors, to size grids
  int cc_major = 0;               // compute capability (8: mma.sync, tensor_core_paths.h)
  int max_threads_per_block = 1024;
  size_t max_shared_per_block = 48 * 1024;
  bool pdl = false;  // programmatic dependent launch (pdl.cuh): 9.0+ and WT_CUDA_PDL=1
  int row_cols = 0;  // output columns per warp of fused one-row matmuls (1, 2, 4, 8; 0: matmul.cu picks)
};

// Status from a CUDA runtime result, naming the call: "cuda: <what>: <cudaGetErrorString>".
// WT_ERR_OUT_OF_MEMORY for cudaErrorMemoryAllocation, WT_ERR_BACKEND otherwise.
Status cuda_status(cudaError_t e, const char* what);
// The status of a kernel launch, naming the kernel: `launched` (cudaLaunchKernelEx's result)
// where it is an error, else cudaGetLastError's (which it clears either way).
Status launch_status(const char* kernel, cudaError_t launched = cudaSuccess);

}  // namespace wt::cuda
