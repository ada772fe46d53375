// cuBLAS, opened with dlopen when the first CUDA backend is made instead of linked. Linking
// it loads libcublas and its libcublasLt into every process of a CUDA build at start: about
// 150 MiB resident before main (CUDA 13; more than half of it libcublasLt's zeroed data, which
// its initializers write), even in one that never makes a CUDA backend (whittle-run on the
// CPU backend: docs/results/cuda-libraries.md). The library is that of the cuBLAS major
// version the build's headers declare (libcublas.so.12 for CUDA 12), found as the dynamic
// loader finds libraries, else in the folder libcudart was loaded from (where every CUDA
// install keeps both).
#pragma once

#include <cublas_v2.h>

#include <string>

#include "base/status.h"
#include "kernels/cuda/cublas_gemm.h"

namespace wt::cuda {

struct CublasLibrary {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  CublasGemmExFn gemm_ex = nullptr;
};

// The process's cuBLAS, opened at the first call (once, thread-safe) and kept open to the
// end: the handles of live backends point into it. WT_ERR_UNSUPPORTED naming the library
// and the loader's words where it cannot be opened or lacks a function; every later call
// gives the same answer.
Status cublas_library(const CublasLibrary** out);

// The library's file name for this build ("libcublas.so.<CUBLAS_VER_MAJOR>").
const char* cublas_soname();

// The folder the process's libcudart was loaded from, with a trailing slash ("" where it is
// not loaded as libcudart.so.<major>): where cublas_library() looks second.
std::string cudart_folder();

// Opens the first of `names` (null-terminated list; a name without a slash is searched for,
// as dlopen does) into *out. For the tests; cublas_library() is this with cublas_soname()
// and its libcudart folder twin.
Status open_cublas(const char* const* names, CublasLibrary* out);

}  // namespace wt::cuda
