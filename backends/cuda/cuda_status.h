// Converters from the CUDA runtime's and cuBLAS's results to Status. cuda_status and
// launch_status are declared in kernels/cuda/launch.cuh (the kernels use them too) and
// defined in cuda_status.cpp; cublas_status is the backend's own.
#pragma once

#include <cublas_v2.h>

#include "kernels/cuda/launch.cuh"

namespace wt::cuda {

// "cuda: <what>: <cuBLAS status name>"; WT_ERR_OUT_OF_MEMORY for CUBLAS_STATUS_ALLOC_FAILED,
// WT_ERR_UNSUPPORTED for CUBLAS_STATUS_NOT_SUPPORTED / ARCH_MISMATCH, WT_ERR_BACKEND otherwise.
Status cublas_status(cublasStatus_t s, const char* what);

// Whether a failure means there is no usable device or driver at all (no GPU, no driver,
// a driver older than the runtime): create_cuda_backend then answers WT_ERR_UNSUPPORTED.
bool is_no_device(cudaError_t e);

}  // namespace wt::cuda
