// The one cuBLAS call the kernels make (matmul.cu's prompt GEMM), as the backend opened it
// (backends/cuda/cublas_library.h: cuBLAS is loaded with dlopen when a CUDA backend is made,
// not linked). A function pointer beside the handle, so the kernels need no cuBLAS symbol.
#pragma once

#include <cublas_v2.h>

namespace wt::cuda {

// cublasGemmEx's C signature (C++ adds an overload with a cudaDataType compute type, so
// decltype(&cublasGemmEx) names none; backends/cuda/cublas_library.cpp checks this one).
using CublasGemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                          const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasGemm {
  cublasHandle_t handle = nullptr;  // bound to Launch::stream
  CublasGemmExFn gemm_ex = nullptr;
};

}  // namespace wt::cuda
