// A fixture for scripts/check-cuda-kernels.py (ctest check_cuda_kernels_refuses): one kernel
// without the prologue and one plain launch; the check must name both.
#include "pdl.cuh"

__global__ void good_kernel(float* x) {
  kernel_prologue();
  x[threadIdx.x] = 0.0f;
}

__global__ void bad_kernel(float* x) {
  x[threadIdx.x] = 1.0f;  // reads and writes before the wait
}

void launch(float* x, cudaStream_t s) { bad_kernel<<<1, 32, 0, s>>>(x); }
