// Which CUDA calls run on tensor cores (kernels/cuda/tensor_core_paths.h): host rules that the
// kernels and the parity tolerances share, checked here on every machine.
#include <doctest/doctest.h>

#include "kernels/cuda/tensor_core_paths.h"

using namespace wt::cuda;

TEST_CASE("cuda tensor-core paths: matmul from 64 rows") {
  CHECK_FALSE(matmul_on_tensor_cores(1));
  CHECK_FALSE(matmul_on_tensor_cores(63));
  CHECK(matmul_on_tensor_cores(64));
  CHECK(matmul_on_tensor_cores(8192));
}

TEST_CASE("cuda tensor-core paths: prefill attention needs sm_80 and head_dim <= 128") {
  CHECK(prefill_on_tensor_cores(8, 64, 937));   // Orin (8.7), the default model's head_dim
  CHECK(prefill_on_tensor_cores(9, 128, 64));   // Hopper, Qwen2.5-1.5B, exactly 64 positions
  CHECK(prefill_on_tensor_cores(8, 1, 100));    // tiny heads are padded to 64
  CHECK_FALSE(prefill_on_tensor_cores(7, 64, 937));   // Turing/Volta: no m16n8k16 f16 mma: f32 kernel
  CHECK_FALSE(prefill_on_tensor_cores(8, 256, 937));  // head_dim above the kernel's tiles
  CHECK_FALSE(prefill_on_tensor_cores(8, 64, 63));    // a short prompt stays f32
  CHECK_FALSE(prefill_on_tensor_cores(8, 0, 100));
}
