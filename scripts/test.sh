#!/usr/bin/env bash
# The README's second command: install what is missing, fetch the default model, build,
# run ctest. Two builds: Release runs every test not labelled "slow"; ASan+UBSan
# (RelWithDebInfo), so memory errors and undefined behaviour fail CI, runs those not
# labelled "slow", "long" (minutes-long lavapipe model cases whose host code faster tests
# already take through ASan) or "model" (the default model's cases, see below). Both build the Vulkan backend; its tests run on lavapipe (or
# skip visibly where there is no device).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc)"
"$root/scripts/setup.sh"
# The folder graph the #include lines make: no circle, only the dependencies cmake/modules.txt
# declares (seconds; before anything is built).
python3 "$root/scripts/check-deps.py"
"$root/scripts/fetch-model.sh" >/dev/null

# WHITTLE_TESTS=ON explicitly: run.sh and bench.sh configure the same build dir without
# tests, and a cached OFF would otherwise leave nothing to run. The CUDA backend is built
# where nvcc is found (its tests skip visibly without a GPU); the ASan build stays without.
# Device code for both GPU kinds we measure on: sm_87 (Jetson Orin) and sm_90 (H100), so
# ptxas checks every kernel for both (registers, shared memory) even where none can run.
cuda=OFF
cuda_archs=()
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then cuda=ON; fi
if [ "$cuda" = ON ]; then
  echo "test.sh: nvcc found: building the CUDA backend (-DWHITTLE_CUDA=ON) for sm_87 and sm_90"
  cuda_archs=(-DCMAKE_CUDA_ARCHITECTURES="87;90")
else
  echo "test.sh: no nvcc: building without the CUDA backend"
fi
"$root/scripts/build.sh" "$root/build" -DWHITTLE_TESTS=ON -DWHITTLE_VULKAN=ON -DWHITTLE_CUDA="$cuda" "${cuda_archs[@]}"
(cd "$root/build" && ctest --output-on-failure --no-tests=error -j "$jobs" -LE slow)

"$root/scripts/build.sh" "$root/build-asan" -DWHITTLE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWHITTLE_TOOLS=OFF -DWHITTLE_TESTS=ON -DWHITTLE_VULKAN=ON -DWHITTLE_CUDA=OFF
# lavapipe (Mesa 22.3.6-1+deb12u2) keeps a 128-byte realloc'd block in a global of its own and
# never frees it: once the Vulkan loader unloads the driver (vkDestroyInstance), LeakSanitizer
# finds the block unreferenced and reports a leak it cannot even symbolize ("<unknown
# module>"). Preloading the driver keeps it mapped for the whole process, so its globals
# still reach the block; our own leaks are reported as before. libasan must come first.
preload=""
cxx="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$root/build-asan/CMakeCache.txt")"
libasan="$("${cxx:-c++}" -print-file-name=libasan.so)"
if [ -f "$libasan" ]; then
  for icd in /usr/share/vulkan/icd.d/lvp_icd*.json; do
    [ -f "$icd" ] || continue
    lib="$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$icd")"
    [ -f "$lib" ] && preload="$libasan:$lib"
  done
fi
[ -n "$preload" ] && echo "test.sh: ASan stage with LD_PRELOAD=$preload (lavapipe stays loaded)"
# The driver, so kept mapped, also leaks a block of its own now and then (seen once in
# "vulkan: limits and foreign pointers ..."): scripts/lsan.supp names its module.
# The sanitizer stage leaves out the cases that run the 135M-parameter default model (label
# "model", and every "vulkan model:" case), 2-5 minutes each under ASan on two cores, and
# the four largest parity ops, whose minutes go to the instrumented CPU reference (ASan
# sees none of lavapipe's shader memory): host code that the tiny-model, ops, API and
# smaller parity cases already take through ASan. The Release stage above runs them all.
# (On the AVX2 host of 2026-11-29 the whole CI otherwise ran past 90 minutes.)
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp" \
  UBSAN_OPTIONS=print_stacktrace=1 LD_PRELOAD="$preload" \
  ctest --output-on-failure --no-tests=error -j "$jobs" -LE "slow|long|model" \
  -E "^vulkan model: |^parity: (attention_prefill|attention_decode|window_scores|matmul)$")
