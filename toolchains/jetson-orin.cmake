# Cross-compiling for NVIDIA Jetson Orin (aarch64, Cortex-A78AE, GPU sm_87) with Debian's
# g++-aarch64-linux-gnu. Test binaries run here under qemu-user (qemu-aarch64).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CUDA_ARCHITECTURES 87)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# Cortex-A78AE: ARMv8.2-A with dot product and fp16 arithmetic.
set(CMAKE_CXX_FLAGS_INIT "-march=armv8.2-a+dotprod+fp16")
set(CMAKE_C_FLAGS_INIT "-march=armv8.2-a+dotprod+fp16")
