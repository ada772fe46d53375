// The one place CUDA runtime and cuBLAS results become Status. No abort, no exit: a failed
// call is a message naming the call, and a lost device ("unspecified launch failure",
// "an illegal memory access") is WT_ERR_BACKEND with the driver's words.
#include "cuda_status.h"

#include <string>

namespace wt::cuda {

Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  const std::string msg = std::string("cuda: ") + what + ": " + cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) return error(WT_ERR_OUT_OF_MEMORY, msg);
  return error(WT_ERR_BACKEND, msg);
}

Status launch_status(const char* kernel, cudaError_t launched) {
  // cudaGetLastError also clears a sticky launch-configuration error, so the next op
  // reports its own result and not this one's.
  const cudaError_t last = cudaGetLastError();
  const cudaError_t e = launched != cudaSuccess ? launched : last;
  if (e == cudaSuccess) return Status::ok();
  return error(e == cudaErrorMemoryAllocation ? WT_ERR_OUT_OF_MEMORY : WT_ERR_BACKEND,
               std::string("cuda: launch of ") + kernel + ": " + cudaGetErrorString(e));
}

namespace {

const char* cublas_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "cuBLAS status (unknown)";
  }
}

}  // namespace

Status cublas_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  const std::string msg = std::string("cuda: ") + what + ": " + cublas_name(s);
  if (s == CUBLAS_STATUS_ALLOC_FAILED) return error(WT_ERR_OUT_OF_MEMORY, msg);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH) return error(WT_ERR_UNSUPPORTED, msg);
  return error(WT_ERR_BACKEND, msg);
}

bool is_no_device(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError ||
         e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice ||
         e == cudaErrorDevicesUnavailable || e == cudaErrorInvalidDevice || e == cudaErrorNoKernelImageForDevice ||
         e == cudaErrorUnsupportedPtxVersion || e == cudaErrorSystemNotReady;
}

}  // namespace wt::cuda
