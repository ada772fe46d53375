#!/usr/bin/env bash
# Cross-builds Whittle for aarch64 (Jetson Orin) with toolchains/jetson-orin.cmake and
# Debian's cross compilers, then runs the unit tests under qemu-aarch64 through ctest, less
# those labelled "model" (the default model's forward pass: minutes each under emulation;
# tests/CMakeLists.txt): the NEON matmul paths and the CPU ops against their references at
# 1-3 worker threads, tokenizer, GGUF, C API and planner, the tiny models' forward pass
# against the NumPy reference, and whittle-run on a tiny model.
# Builds the library, the tools and the unit-test binary, with the Vulkan backend where the
# arm64 Vulkan loader is installed (Debian multiarch: libvulkan-dev:arm64; compiled and
# linked only: no arm64 Vulkan driver runs here). CUDA is not cross-built here
# (scripts/cuda-compat-check.sh --aarch64 does that, with CUDA 12.6's aarch64 libraries).
# The compiler is GCC 11 by default, the one JetPack 6 ships (Debian's
# g++-11-aarch64-linux-gnu): GCC 11 lacks builtins GCC 12 has, and a build with Debian's
# default cross compiler (12) alone did not show it.
#   scripts/cross-test.sh [BUILD_DIR]     (default build-aarch64)
# Environment: WT_CROSS_VULKAN=ON|OFF|auto (default auto), WT_CROSS_JOBS (default nproc),
# WT_CROSS_GCC=11 (default) or another version Debian packages as g++-N-aarch64-linux-gnu,
# or empty for Debian's default cross compiler (g++-aarch64-linux-gnu).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build-aarch64}"
jobs="${WT_CROSS_JOBS:-$(nproc)}"
gcc_version="${WT_CROSS_GCC-11}"
[[ "$gcc_version" =~ ^[0-9]*$ ]] || { echo "cross-test: WT_CROSS_GCC='$gcc_version' is not a GCC major version" >&2; exit 2; }
cross_pkg=g++-aarch64-linux-gnu suffix=""
[ -n "$gcc_version" ] && cross_pkg="g++-$gcc_version-aarch64-linux-gnu" suffix="-$gcc_version"
start=$(date +%s)

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
need=()
for p in "$cross_pkg" qemu-user cmake doctest-dev nlohmann-json3-dev glslc; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
# The arm64 libraries Whittle links (Debian multiarch; a few MB, no recommends): the Vulkan
# loader and mimalloc. Multiarch needs root once (dpkg --add-architecture arm64).
vulkan="${WT_CROSS_VULKAN:-auto}"
if ! dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
  if [ "$vulkan" != OFF ] && { [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; }; then
    echo "cross-test: enabling the arm64 architecture (dpkg multiarch)" >&2
    $SUDO dpkg --add-architecture arm64
  fi
fi
if dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
  for p in libvulkan-dev:arm64 libmimalloc-dev:arm64; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "cross-test: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ "$vulkan" = auto ]; then
  vulkan=OFF
  dpkg -s libvulkan-dev:arm64 >/dev/null 2>&1 && vulkan=ON
fi
echo "cross-test: aarch64 build in $dir with aarch64-linux-gnu-g++$suffix (Vulkan backend: $vulkan, compiled and linked only)"

source "$root/scripts/compiler-cache.sh"
# A build folder configured with another cross compiler: CMake would drop its cache and
# configure again without this command's -D options, so start it afresh.
if [ -f "$dir/CMakeCache.txt" ] && ! grep -qx "WT_CROSS_SUFFIX:STRING=$suffix" "$dir/CMakeCache.txt"; then
  echo "cross-test: $dir was configured with another compiler: configuring it afresh"
  rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
fi
cmake -S "$root" -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$root/toolchains/jetson-orin.cmake" "${compiler_cache[@]}" \
  -DWT_CROSS_SUFFIX="$suffix" \
  -DCMAKE_BUILD_TYPE=Release -DWHITTLE_TESTS=ON -DWHITTLE_TOOLS=ON -DWHITTLE_VULKAN="$vulkan" \
  -DWHITTLE_CUDA=OFF >/dev/null
# The library, the three tools and the unit-test binary (its doctest discovery already runs
# under qemu); not the parity and Vulkan-model test binaries.
cmake --build "$dir" -j "$jobs" --target whittle whittle-run whittle-plan whittle-bench whittle_tests
built=$(date +%s)
aarch64-linux-gnu-readelf -h "$dir/tests/whittle_tests" | grep "AArch64" >/dev/null || { echo "cross-test: whittle_tests is not an aarch64 binary" >&2; exit 1; }

# Which matmul path the binary picks under qemu (qemu's default CPU has the dot product).
# (The toolchain file's CMAKE_CROSSCOMPILING_EMULATOR, which ctest uses, says why the
# cross glibc goes first on the library path.)
emu=(qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
isa_line="$("${emu[@]}" "$dir/tests/whittle_tests" "--test-case=matmul: reports*" 2>&1 | grep -o 'matmul isa: .*' | head -n 1 || true)"
echo "cross-test: $isa_line"
case "$isa_line" in
  "matmul isa: neon"*) ;;
  *) echo "cross-test: expected a NEON matmul path under qemu-aarch64" >&2; exit 1 ;;
esac

# Label "model" keeps the default model's forward passes out of the emulated run. doctest's
# CMake discovery drops the suite label of a test whose name holds a comma or a semicolon:
# check that every test the sources mark got it.
want=$(grep -ho 'test_suite("model")' "$root"/tests/unit/*.cpp | wc -l)
have=$(cd "$dir" && ctest -N -L '^model$' | grep -c 'Test *#' || true)
if [ "$have" -ne "$want" ]; then
  echo "cross-test: $have tests carry the label model, the sources mark $want (no comma or semicolon in their names)" >&2
  exit 1
fi
# A test that hangs under the emulator fails after --timeout instead of ctest's 25 minutes.
(cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" --timeout 240 -LE '^(model|slow|long)$')
end=$(date +%s)
echo "cross-test: passed (build $((built - start)) s, qemu tests $((end - built)) s)"
