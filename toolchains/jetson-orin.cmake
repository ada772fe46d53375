# Cross-compiling for NVIDIA Jetson Orin (aarch64, Cortex-A78AE, GPU sm_87) with Debian's
# g++-aarch64-linux-gnu. Two ways to find the target's libraries:
#
# - WHITTLE_SYSROOT unset: Debian multiarch. The arm64 packages (libvulkan-dev:arm64,
#   libmimalloc-dev:arm64, after `dpkg --add-architecture arm64`) live in
#   /usr/lib/aarch64-linux-gnu, the cross C library in /usr/aarch64-linux-gnu. This is what
#   scripts/cross-test.sh uses; test binaries run here under qemu-user (qemu-aarch64).
# - WHITTLE_SYSROOT=/path/to/jetpack-rootfs (-D or environment): a copy of the Jetson's root
#   file system (e.g. Linux_for_Tegra/rootfs from the JetPack BSP, or rsync'ed from the
#   board). Libraries, headers and CMake packages are searched only there, and the CUDA
#   toolkit's aarch64 target libraries (usr/local/cuda/targets/aarch64-linux) too. Only a
#   sysroot with those makes -DWHITTLE_CUDA=ON work across: docs/jetson.md.
#
# WHITTLE_CPU_TUNE (default ON): -mcpu=cortex-a78ae (tuning and ARMv8.2-A + dotprod +
# fp16). Off: plain ARMv8-A, a binary for any aarch64 (the NEON dot-product path is still
# picked at run time where the CPU has it).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(WT_CROSS_PREFIX aarch64-linux-gnu- CACHE STRING "Prefix of the cross compilers (aarch64-linux-gnu-gcc, ...)")
# "-11": aarch64-linux-gnu-gcc-11 and -g++-11, JetPack 6's GCC (Debian: g++-11-aarch64-linux-gnu).
set(WT_CROSS_SUFFIX "" CACHE STRING "Suffix of the cross compilers' names (-11: aarch64-linux-gnu-g++-11)")
set(CMAKE_C_COMPILER ${WT_CROSS_PREFIX}gcc${WT_CROSS_SUFFIX})
set(CMAKE_CXX_COMPILER ${WT_CROSS_PREFIX}g++${WT_CROSS_SUFFIX})

# try_compile projects inherit these.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES WHITTLE_SYSROOT WHITTLE_CPU_TUNE WT_CROSS_PREFIX WT_CROSS_SUFFIX)

if(NOT DEFINED WHITTLE_SYSROOT AND DEFINED ENV{WHITTLE_SYSROOT})
  set(WHITTLE_SYSROOT "$ENV{WHITTLE_SYSROOT}")
endif()
set(WHITTLE_SYSROOT "${WHITTLE_SYSROOT}" CACHE PATH "A JetPack root file system to build against (empty: Debian multiarch)")

if(WHITTLE_SYSROOT)
  set(CMAKE_SYSROOT "${WHITTLE_SYSROOT}")
  set(CMAKE_FIND_ROOT_PATH "${WHITTLE_SYSROOT}")
  # Host tools (glslc, nvcc, python) come from the build machine; everything linked into
  # the target comes from the sysroot only.
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L "${WHITTLE_SYSROOT}")
  # CUDA: nvcc of the build machine (x86 toolkit with the aarch64 cross target installed,
  # cuda-cross-aarch64) compiles device code for sm_87; its host side goes through the cross
  # g++, and cudart/cuBLAS are the sysroot's aarch64 ones.
  set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
  set(CMAKE_CUDA_FLAGS_INIT "-target-dir aarch64-linux")
  if(EXISTS "${WHITTLE_SYSROOT}/usr/local/cuda/targets/aarch64-linux")
    set(CUDAToolkit_TARGET_DIR "${WHITTLE_SYSROOT}/usr/local/cuda/targets/aarch64-linux")
  endif()
else()
  # Debian multiarch: /usr holds both architectures' packages; CMAKE_LIBRARY_ARCHITECTURE
  # makes find_library / find_package look in /usr/lib/aarch64-linux-gnu, never in the
  # x86_64 one (find_package's lib* never matches lib/x86_64-linux-gnu). The
  # header-only doctest package (tests) is found in /usr/lib/cmake.
  set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
  # qemu-aarch64 -L makes the cross glibc's ld.so the program's loader, but that ld.so
  # looks for libc.so.6 in /lib/aarch64-linux-gnu first, where multiarch's libc6:arm64 (a
  # dependency of libvulkan1:arm64, a different build of glibc) lives: ld.so and libc then
  # disagree on their private data, and the first pthread_create spins forever walking a
  # garbage stack-cache list. LD_LIBRARY_PATH keeps the loader's own libc (and libstdc++,
  # libgcc_s) first; libvulkan and libmimalloc still come from the multiarch directory.
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu
                                    -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
  set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
endif()

# Jetson Orin's GPU. Without a sysroot holding aarch64 CUDA libraries, -DWHITTLE_CUDA=ON
# needs them named (CUDAToolkit_ROOT, CUDAToolkit_TARGET_DIR, -target-dir aarch64-linux):
# scripts/cuda-compat-check.sh --aarch64 does so with PyPI's; or build CUDA on the device,
# or use a JetPack sysroot (docs/jetson.md).
set(CMAKE_CUDA_ARCHITECTURES 87 CACHE STRING "Jetson Orin: sm_87")

option(WHITTLE_CPU_TUNE "Tune for the Jetson Orin CPU (-mcpu=cortex-a78ae)" ON)
if(WHITTLE_CPU_TUNE)
  set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-a78ae")
  set(CMAKE_CXX_FLAGS_INIT "-mcpu=cortex-a78ae")
endif()
