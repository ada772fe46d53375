#!/usr/bin/env bash
# Builds Whittle with the CUDA backend against an older CUDA release's runtime and cuBLAS:
# the ones a Jetson's JetPack ships (6.0: CUDA 12.2; 6.1 / 6.2: 12.6), so a call or a
# struct field that only CUDA 13 has fails here, not on a user's board. pip has the older
# releases' headers and libraries (nvidia-cuda-runtime-cu12, nvidia-cublas-cu12,
# nvidia-cuda-cccl-cu12) but no nvcc of theirs, so the compiler is this
# machine's nvcc with its own compiler headers (crt/: they belong to its front end),
# everything else from the older release:
#   ROOT/cuda-V/bin       links to the local nvcc's programs, and its nvcc.profile
#   ROOT/cuda-V/nvvm      link to the local toolkit's nvvm (cicc, libdevice)
#   ROOT/cuda-V/include   the wheels' include/ (runtime, cuBLAS, CCCL) + the local crt/
#   ROOT/cuda-V/lib64     the wheels' libcudart / libcublas / libcublasLt (.so.MAJOR and
#                         the unversioned names), the local libcudadevrt.a, and
#                         libcudart_static.a as a linker script naming the older
#                         libcudart.so: CMake's compiler check links the static runtime,
#                         and the older headers' symbols (e.g. cudaGetDeviceProperties_v2)
#                         must resolve against the older library
# then configures BUILD/V[-gccN] (Release, -DWHITTLE_CUDA=ON, tests on, Vulkan off) and builds
# every target. It checks that the compile saw the release's CUDART_VERSION and that the
# binaries need its libcudart.so.MAJOR and libcublas.so.MAJOR. What it cannot check: the
# older nvcc's own front end, and running anything. CUDA 11 (JetPack 5) is out of reach: a
# CUDA 13 nvcc's crt/ headers name CUDA 12 runtime types (cudaKernel_t), which CUDA 11.8's
# headers lack, so nothing compiles (tried 2026-12-06).
#
#   scripts/cuda-compat-check.sh [VERSION ...] [--root DIR] [--build DIR] [--arch NN] [--gcc N]
#                                [-- CMAKE_ARGS...]
#   VERSION     12.2 or 12.6 (default: both)
#   --root DIR  the wheels and toolkit trees (default /tmp/whittle-cuda-compat; about
#               1 GB per release, reused by later runs and other checkouts)
#   --build DIR the build folders (default build-cuda-compat in the checkout)
#   --arch NN   CMAKE_CUDA_ARCHITECTURES (default 87, Jetson Orin)
#   --gcc N     gcc-N / g++-N for the C and C++ sources and as nvcc's host compiler (11:
#               JetPack 6's); installed with apt-get when missing. Default: cmake's choice
# Needs: pip (network to PyPI, unless ROOT/wheels holds the wheels), python3, cmake,
# a local nvcc (CUDACXX, /usr/local/cuda/bin/nvcc or PATH).
# Exit status: 0 every release built, 1 a build or check failed, 2 usage or a missing tool.
set -uo pipefail

root_src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work=/tmp/whittle-cuda-compat
builds="$root_src/build-cuda-compat"
arch=87
gcc_version=""
versions=()
cmake_extra=()

usage() {
  awk '/^#   scripts\/cuda-compat-check.sh/ { on = 1 } on && /^# Needs/ { exit } on { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"
}
die() { echo "cuda-compat-check: $*" >&2; exit 2; }
say() { echo "cuda-compat-check: $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --root) [ $# -ge 2 ] || die "--root needs a directory"; work="$2"; shift 2 ;;
    --build) [ $# -ge 2 ] || die "--build needs a directory"; builds="$2"; shift 2 ;;
    --arch) [ $# -ge 2 ] || die "--arch needs a number"; arch="$2"; shift 2 ;;
    --gcc) [ $# -ge 2 ] || die "--gcc needs a major version"; gcc_version="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; cmake_extra=("$@"); break ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) versions+=("$1"); shift ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || versions=(12.2 12.6)
[[ "$arch" =~ ^[0-9]+[a-z]?$ ]] || die "--arch: '$arch' is not an architecture number (e.g. 87)"
host_cc=()
if [ -n "$gcc_version" ]; then
  [[ "$gcc_version" =~ ^[0-9]+$ ]] || die "--gcc: '$gcc_version' is not a GCC major version (e.g. 11)"
  if ! command -v "g++-$gcc_version" >/dev/null; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    say "installing g++-$gcc_version"
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        --no-install-recommends "g++-$gcc_version" >/dev/null; } || die "cannot install g++-$gcc_version"
  fi
  host_cc=(-DCMAKE_C_COMPILER="gcc-$gcc_version" -DCMAKE_CXX_COMPILER="g++-$gcc_version"
           -DCMAKE_CUDA_HOST_COMPILER="g++-$gcc_version")
fi
host_cxx="${CXX:-c++}"
[ -n "$gcc_version" ] && host_cxx="g++-$gcc_version"
host_name="$("$host_cxx" -dumpfullversion 2>/dev/null)"

# The wheels of one release, pinned: runtime, cuBLAS (the version that release shipped),
# CCCL. Printed as "major runtime-pkg==ver cublas-pkg==ver cccl-pkg==ver".
release_wheels() {
  case "$1" in
    12.2) echo "12 nvidia-cuda-runtime-cu12==12.2.140 nvidia-cublas-cu12==12.2.5.6 nvidia-cuda-cccl-cu12==12.2.140" ;;
    12.6) echo "12 nvidia-cuda-runtime-cu12==12.6.77 nvidia-cublas-cu12==12.6.4.1 nvidia-cuda-cccl-cu12==12.6.77" ;;
    *) return 1 ;;
  esac
}
for v in "${versions[@]}"; do
  release_wheels "$v" >/dev/null || die "no wheels known for CUDA '$v' (known: 12.2 12.6)"
done

nvcc="${CUDACXX:-}"
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
[ -n "$nvcc" ] || nvcc="$(command -v nvcc || true)"
[ -n "$nvcc" ] && [ -x "$nvcc" ] || die "no nvcc (set CUDACXX or install the CUDA toolkit)"
nvcc="$(readlink -f "$nvcc")"
nvcc_bin="$(dirname "$nvcc")"
nvcc_top="$(dirname "$nvcc_bin")"
local_inc="$nvcc_top/targets/x86_64-linux/include"
[ -d "$local_inc/crt" ] || local_inc="$nvcc_top/include"
local_lib="$nvcc_top/targets/x86_64-linux/lib"
[ -f "$local_lib/libcudadevrt.a" ] || local_lib="$nvcc_top/lib64"
[ -d "$local_inc/crt" ] || die "no crt/ headers beside $nvcc (looked in $nvcc_top)"
[ -f "$local_lib/libcudadevrt.a" ] || die "no libcudadevrt.a beside $nvcc (looked in $nvcc_top)"
[ -d "$nvcc_top/nvvm/bin" ] || die "no nvvm/bin beside $nvcc"
command -v cmake >/dev/null || die "cmake not found"
command -v python3 >/dev/null || die "python3 not found (unpacks the wheels)"
local_version="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
root="$root_src"  # compiler-cache.sh reads it
source "$root/scripts/compiler-cache.sh"

mkdir -p "$work/wheels" || die "cannot create $work"
mkdir -p "$builds" || die "cannot create $builds"

# Unpacks the release's wheels into $1/w (once) and assembles the toolkit tree $1.
assemble() {
  local tree="$1" v="$2" pkgs=("${@:3}")
  [ -f "$tree/.complete" ] && return 0
  rm -rf "$tree"; mkdir -p "$tree/w" "$tree/bin" "$tree/include" "$tree/lib64" || return 1
  local p whl
  for p in "${pkgs[@]}"; do
    whl="$(ls "$work/wheels/$(echo "${p%%==*}" | tr - _)-${p##*==}-"*.whl 2>/dev/null | head -1)"
    if [ -z "$whl" ]; then
      say "downloading $p"
      pip download --no-deps -q -d "$work/wheels" "$p" || { say "pip download $p failed"; return 1; }
      whl="$(ls "$work/wheels/$(echo "${p%%==*}" | tr - _)-${p##*==}-"*.whl 2>/dev/null | head -1)"
      [ -n "$whl" ] || { say "no wheel for $p in $work/wheels"; return 1; }
    fi
    python3 -m zipfile -e "$whl" "$tree/w" || { say "cannot unpack $whl"; return 1; }
  done
  local d
  for d in "$tree"/w/nvidia/*/include; do cp -a "$d/." "$tree/include/"; done
  rm -f "$tree/include/__init__.py"
  # The front end's own headers are the local compiler's: its host stub code calls
  # macros of crt/host_runtime.h that differ between releases.
  rm -rf "$tree/include/crt"; cp -a "$local_inc/crt" "$tree/include/crt"
  local f
  for f in "$nvcc_bin"/*; do ln -s "$f" "$tree/bin/$(basename "$f")"; done
  rm -f "$tree/bin/nvcc.profile"; cp "$nvcc_bin/nvcc.profile" "$tree/bin/nvcc.profile"
  ln -s "$nvcc_top/nvvm" "$tree/nvvm"
  # nvcc.profile looks in targets/x86_64-linux/{include,lib}.
  mkdir -p "$tree/targets/x86_64-linux"
  ln -s ../../include "$tree/targets/x86_64-linux/include"
  ln -s ../../lib64 "$tree/targets/x86_64-linux/lib"
  local major="${v%%.*}" lib so
  for lib in cudart cublas cublasLt; do
    so="$(ls "$tree"/w/nvidia/*/lib/lib$lib.so.$major 2>/dev/null | head -1)"
    [ -n "$so" ] || { say "no lib$lib.so.$major in the wheels"; return 1; }
    cp "$so" "$tree/lib64/"; ln -s "$(basename "$so")" "$tree/lib64/lib$lib.so"
  done
  cp "$local_lib/libcudadevrt.a" "$tree/lib64/"
  echo "INPUT($(readlink -f "$tree/lib64/libcudart.so"))" > "$tree/lib64/libcudart_static.a"
  rm -rf "$tree/w"
  touch "$tree/.complete"
}

# CUDART_VERSION and CUBLAS_VER_MAJOR.MINOR as the tree's nvcc sees them.
seen_versions() {
  printf '#include <cuda_runtime.h>\n#include <cublas_v2.h>\nwt_seen CUDART_VERSION CUBLAS_VER_MAJOR CUBLAS_VER_MINOR\n' \
    > "$1/seen.cu"
  "$1/bin/nvcc" -E "$1/seen.cu" 2>/dev/null | awk '$1 == "wt_seen" { print $2, $3 "." $4 }'
}

rows=()
status=0
for v in "${versions[@]}"; do
  read -r major pkgs <<<"$(release_wheels "$v")"
  read -ra pkgs <<<"$pkgs"
  # One build folder per host compiler: CMake drops the other -D options of a cache whose
  # compiler changes.
  tree="$work/cuda-$v" build="$builds/$v${gcc_version:+-gcc$gcc_version}"
  log="$build.log"
  start=$SECONDS result=pass detail=""
  if ! assemble "$tree" "$v" "${pkgs[@]}"; then
    result=FAIL detail="toolkit tree not assembled"
  else
    read -r seen_rt seen_blas <<<"$(seen_versions "$tree")"
    want_rt="$(( ${v%%.*} * 1000 + ${v##*.} * 10 ))"
    if [ "${seen_rt:-}" != "$want_rt" ]; then
      result=FAIL detail="the compile saw CUDART_VERSION ${seen_rt:-none}, not $want_rt"
    else
      say "CUDA $v (CUDART_VERSION $seen_rt, cuBLAS $seen_blas) with nvcc $local_version: building $build"
      # The tree's lib64 first: the test discovery runs the built tests, which need the
      # older libcudart (their CUDA calls fail without a GPU, as on any GPU-less machine).
      if ! env -u CUDACXX -u CUDA_PATH -u CUDA_HOME cmake -S "$root_src" -B "$build" "${generator[@]}" \
            -DCMAKE_BUILD_TYPE=Release -DWHITTLE_CUDA=ON -DWHITTLE_VULKAN=OFF -DWHITTLE_TESTS=ON \
            -DCMAKE_CUDA_COMPILER="$tree/bin/nvcc" -DCUDAToolkit_ROOT="$tree" \
            -DCMAKE_CUDA_ARCHITECTURES="$arch" "${host_cc[@]}" "${compiler_cache[@]}" "${cmake_extra[@]}" >"$log" 2>&1; then
        result=FAIL detail="configure failed ($log)"
      elif ! LD_LIBRARY_PATH="$tree/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            cmake --build "$build" -j "$(nproc)" >>"$log" 2>&1; then
        first="$(grep -m1 -E 'error' "$log" || grep -m1 FAILED "$log")"
        result=FAIL detail="build failed: ${first:0:200} ($log)"
      else
        needed="$(readelf -d "$build/tools/whittle-run" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
        for want in "libcudart.so.$major" "libcublas.so.$major"; do
          [[ " $needed" == *" $want "* ]] || { result=FAIL; detail="whittle-run does not need $want (needs: $needed)"; }
        done
        [ "$result" = pass ] && detail="CUDART_VERSION $seen_rt, cuBLAS $seen_blas; whittle-run needs ${needed% }"
      fi
    fi
  fi
  [ "$result" = pass ] || status=1
  rows+=("| $v | $local_version | ${host_name:-?} | $arch | $result | $((SECONDS - start)) s | $detail |")
  say "CUDA $v: $result ($detail)"
done

echo
echo "| CUDA runtime + cuBLAS | nvcc | host g++ | arch | build | time | detail |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $status
