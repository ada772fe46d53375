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
# then configures BUILD/V[-aarch64][-gccN] (Release, -DWHITTLE_CUDA=ON, tests on, Vulkan off)
# and builds every target. It checks that the compile saw the release's CUDART_VERSION, that
# no header came from the local toolkit, /usr/local/cuda* or /usr/local/include (ninja's
# dependency lists: /usr/local/include may hold links to the local toolkit's headers, which
# the host compiler searches), and that
# the binaries need the release's libcudart.so.MAJOR, and not cuBLAS: they open
# libcublas.so.MAJOR with dlopen when a CUDA backend is made (backends/cuda/cublas_library.h),
# so whittle-run must name that file and have no libcublas among its needed libraries.
# --aarch64 cross-builds for Jetson instead (toolchains/jetson-orin.cmake, nvcc -target-dir
# aarch64-linux, the release's aarch64 libraries from its manylinux2014_aarch64 wheels:
# PyPI's are SBSA builds, the same API and sonames as JetPack's) the library, the tools and
# the unit-test binary, and runs whittle-run --backend cuda under qemu-aarch64, which must
# load those libraries and refuse the backend (no driver) with its status. What it cannot check: the
# older nvcc's own front end, and running anything. CUDA 11 (JetPack 5) is out of reach: a
# CUDA 13 nvcc's crt/ headers name CUDA 12 runtime types (cudaKernel_t), which CUDA 11.8's
# headers lack, so nothing compiles (tried 2026-12-06).
#
#   scripts/cuda-compat-check.sh [VERSION ...] [--root DIR] [--build DIR] [--arch NN] [--gcc N]
#                                [--aarch64] [-- CMAKE_ARGS...]
#   VERSION     12.2 or 12.6 (default: both; with --aarch64 only 12.6 has aarch64 wheels)
#   --root DIR  the wheels and toolkit trees (default /tmp/whittle-cuda-compat; about
#               1 GB per release, reused by later runs and other checkouts)
#   --build DIR the build folders (default build-cuda-compat in the checkout)
#   --arch NN   CMAKE_CUDA_ARCHITECTURES (default 87, Jetson Orin)
#   --gcc N     gcc-N / g++-N for the C and C++ sources and as nvcc's host compiler (11:
#               JetPack 6's); installed with apt-get when missing. Default: cmake's choice.
#               With --aarch64: aarch64-linux-gnu-g++-N, which must be installed
#               (scripts/cross-test.sh installs g++-11-aarch64-linux-gnu)
#   --aarch64   the Jetson cross build described above
# Needs: pip (network to PyPI, unless ROOT/wheels holds the wheels), python3, cmake, ninja,
# a local nvcc (CUDACXX, /usr/local/cuda/bin/nvcc or PATH).
# Exit status: 0 every release built, 1 a build or check failed, 2 usage or a missing tool.
set -uo pipefail

root_src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work=/tmp/whittle-cuda-compat
builds="$root_src/build-cuda-compat"
arch=87
gcc_version=""
aarch64=0
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
    --aarch64) aarch64=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; cmake_extra=("$@"); break ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) versions+=("$1"); shift ;;
  esac
done
work="$(realpath -m "$work")" builds="$(realpath -m "$builds")"
if [ ${#versions[@]} -eq 0 ]; then
  versions=(12.2 12.6)
  [ "$aarch64" = 1 ] && versions=(12.6)
fi
[[ "$arch" =~ ^[0-9]+[a-z]?$ ]] || die "--arch: '$arch' is not an architecture number (e.g. 87)"
[ -z "$gcc_version" ] || [[ "$gcc_version" =~ ^[0-9]+$ ]] ||
  die "--gcc: '$gcc_version' is not a GCC major version (e.g. 11)"
# The host compiler: GCC N's where asked (x86 builds; the cross compiler is checked below),
# and ninja, whose dependency lists show where each header came from.
need=()
host_cc=()
host_cxx="${CXX:-c++}"
if [ -n "$gcc_version" ] && [ "$aarch64" = 0 ]; then
  host_cxx="g++-$gcc_version"
  command -v "$host_cxx" >/dev/null || need+=("g++-$gcc_version")
  host_cc=(-DCMAKE_C_COMPILER="gcc-$gcc_version" -DCMAKE_CXX_COMPILER="$host_cxx"
           -DCMAKE_CUDA_HOST_COMPILER="$host_cxx")
fi
command -v ninja >/dev/null || need+=(ninja-build)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  say "installing ${need[*]}"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
      --no-install-recommends "${need[@]}" >/dev/null; } || die "cannot install ${need[*]}"
fi

# The wheels of one release, pinned: runtime, cuBLAS (the version that release shipped),
# CCCL. Printed as "major runtime-pkg==ver cublas-pkg==ver cccl-pkg==ver".
release_wheels() {
  case "$1" in
    12.2) echo "12 nvidia-cuda-runtime-cu12==12.2.140 nvidia-cublas-cu12==12.2.5.6 nvidia-cuda-cccl-cu12==12.2.140" ;;
    12.6) echo "12 nvidia-cuda-runtime-cu12==12.6.77 nvidia-cublas-cu12==12.6.4.1 nvidia-cuda-cccl-cu12==12.6.77" ;;
    *) return 1 ;;
  esac
}
# CCCL's nv/ headers (nv/target, which cuda_fp16.hpp includes) are missing from the CCCL
# wheels before 12.4.127.post1 (PyPI yanked 12.4.99 for it); a real 12.2 toolkit has them.
# 12.2's tree takes them from 12.6's CCCL wheel.
nv_headers_from() {
  case "$1" in
    12.2) echo "nvidia-cuda-cccl-cu12==12.6.77" ;;
  esac
}
# The aarch64 (SBSA) libraries of a release for --aarch64: runtime and cuBLAS. PyPI has
# aarch64 runtime wheels from 12.3 on and no aarch64 cuBLAS 12.6.4.1, so 12.6 takes 12.6.3.3
# (the same API; only the libraries are linked from these).
release_wheels_aarch64() {
  case "$1" in
    12.6) echo "nvidia-cuda-runtime-cu12==12.6.77 nvidia-cublas-cu12==12.6.3.3" ;;
    *) return 1 ;;
  esac
}
for v in "${versions[@]}"; do
  release_wheels "$v" >/dev/null || die "no wheels known for CUDA '$v' (known: 12.2 12.6)"
  [ "$aarch64" = 0 ] || release_wheels_aarch64 "$v" >/dev/null ||
    die "no aarch64 wheels known for CUDA '$v' (--aarch64 knows: 12.6)"
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
[ -f "$local_inc/fatbinary_section.h" ] || die "no fatbinary_section.h beside $nvcc (looked in $local_inc)"
[ -f "$local_lib/libcudadevrt.a" ] || die "no libcudadevrt.a beside $nvcc (looked in $nvcc_top)"
[ -d "$nvcc_top/nvvm/bin" ] || die "no nvvm/bin beside $nvcc"
command -v cmake >/dev/null || die "cmake not found"
command -v python3 >/dev/null || die "python3 not found (unpacks the wheels)"
python3 -m pip --version >/dev/null 2>&1 || die "pip not found (python3 -m pip downloads the wheels)"
local_version="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
# A tree links and copies parts of this nvcc and follows this script's layout: one made for
# another nvcc or an older layout (bump the number when assemble changes) is made again.
stamp="layout 2, nvcc $nvcc $local_version"
host_name="$("$host_cxx" -dumpfullversion 2>/dev/null)"
if [ "$aarch64" = 1 ]; then
  cross="aarch64-linux-gnu-g++${gcc_version:+-$gcc_version}"
  command -v "$cross" >/dev/null && command -v aarch64-linux-gnu-ar >/dev/null &&
    command -v qemu-aarch64 >/dev/null ||
    die "--aarch64 needs $cross, binutils-aarch64-linux-gnu and qemu-user (scripts/cross-test.sh installs them)"
  host_name="$("$cross" -dumpfullversion 2>/dev/null) (aarch64)"
fi
root="$root_src"  # compiler-cache.sh reads it
source "$root/scripts/compiler-cache.sh"
# ccache's direct mode does not see a header that now shadows another on the include path
# (a tree completed later): it would hand back the old compile and its dependency list.
# The preprocessor mode hashes what the compiler reads.
export CCACHE_NODIRECT=1

mkdir -p "$work/wheels" || die "cannot create $work"
mkdir -p "$builds" || die "cannot create $builds"

# The wheel of pip requirement $1 (pkg==ver) for machine $2 (x86_64, the default, or
# aarch64) in $work/wheels, downloaded once. Prints its path.
wheel() {
  local p="$1" machine="${2:-x86_64}" whl
  local pattern="$work/wheels/$(echo "${p%%==*}" | tr - _)-${p##*==}-*$machine.whl"
  local platform=()
  [ "$machine" = x86_64 ] || platform=(--only-binary=:all: --platform "manylinux2014_$machine")
  whl="$(ls $pattern 2>/dev/null | head -1)"
  if [ -z "$whl" ]; then
    say "downloading $p ($machine)" >&2
    python3 -m pip download --no-deps -q -d "$work/wheels" "${platform[@]}" "$p" >&2 ||
      { say "pip download $p failed" >&2; return 1; }
    whl="$(ls $pattern 2>/dev/null | head -1)"
    [ -n "$whl" ] || { say "no wheel for $p in $work/wheels" >&2; return 1; }
  fi
  echo "$whl"
}

# The libraries lib{cudart,cublas,cublasLt}.so.MAJOR of the wheels unpacked in $1 into the
# folder $2, with the unversioned names; libcudart_static.a a linker script naming that
# libcudart (CMake's compiler check links the static runtime, and the older headers'
# symbols, e.g. cudaGetDeviceProperties_v2, must resolve against the older library).
place_libs() {
  local w="$1" dir="$2" major="$3" lib so
  for lib in cudart cublas cublasLt; do
    so="$(ls "$w"/nvidia/*/lib/lib$lib.so.$major 2>/dev/null | head -1)"
    [ -n "$so" ] || { say "no lib$lib.so.$major in the wheels"; return 1; }
    cp "$so" "$dir/" && ln -sf "$(basename "$so")" "$dir/lib$lib.so" || return 1
  done
  echo "INPUT($(readlink -f "$dir/libcudart.so"))" > "$dir/libcudart_static.a"
}

# Assembles the toolkit tree $1 of release $2 (once) from its wheels.
assemble() {
  local tree="$1" v="$2" major pkgs p whl
  [ "$(cat "$tree/.complete" 2>/dev/null)" = "$stamp" ] && return 0
  read -r major pkgs <<<"$(release_wheels "$v")"
  rm -rf "$tree"; mkdir -p "$tree/w" "$tree/bin" "$tree/include" "$tree/lib64" || return 1
  for p in $pkgs; do
    whl="$(wheel "$p")" || return 1
    python3 -m zipfile -e "$whl" "$tree/w" || { say "cannot unpack $whl"; return 1; }
  done
  local d
  for d in "$tree"/w/nvidia/*/include; do cp -a "$d/." "$tree/include/" || return 1; done
  rm -f "$tree/include/__init__.py"
  p="$(nv_headers_from "$v")"
  if [ -n "$p" ] && [ ! -d "$tree/include/nv" ]; then
    whl="$(wheel "$p")" || return 1
    python3 -m zipfile -e "$whl" "$tree/w-nv" || { say "cannot unpack $whl"; return 1; }
    cp -a "$tree"/w-nv/nvidia/cuda_cccl/include/nv "$tree/include/nv" || { say "no nv/ in $whl"; return 1; }
    rm -rf "$tree/w-nv"
  fi
  [ -f "$tree/include/nv/target" ] || { say "the CUDA $v tree has no nv/target"; return 1; }
  # crt/ and fatbinary_section.h come from the local toolkit, not the wheels: they belong
  # to nvcc's front end, whose generated host stubs call crt/host_runtime.h macros that
  # differ between releases and include fatbinary_section.h.
  rm -rf "$tree/include/crt"
  cp -a "$local_inc/crt" "$tree/include/crt" && cp "$local_inc/fatbinary_section.h" "$tree/include/" || return 1
  local f
  for f in "$nvcc_bin"/*; do ln -s "$f" "$tree/bin/$(basename "$f")" || return 1; done
  rm -f "$tree/bin/nvcc.profile"
  cp "$nvcc_bin/nvcc.profile" "$tree/bin/nvcc.profile" && ln -s "$nvcc_top/nvvm" "$tree/nvvm" || return 1
  # nvcc.profile looks in targets/<target>/{include,lib}.
  mkdir -p "$tree/targets/x86_64-linux"
  ln -s ../../include "$tree/targets/x86_64-linux/include"
  ln -s ../../lib64 "$tree/targets/x86_64-linux/lib"
  place_libs "$tree/w" "$tree/lib64" "$major" && cp "$local_lib/libcudadevrt.a" "$tree/lib64/" || return 1
  rm -rf "$tree/w"
  echo "$stamp" > "$tree/.complete"
}

# The aarch64 target of tree $1 (release $2), once: targets/aarch64-linux with the same
# headers and the aarch64 wheels' libraries (nvcc -target-dir aarch64-linux).
assemble_aarch64() {
  local tree="$1" v="$2" dir="$1/targets/aarch64-linux" p whl
  [ "$(cat "$tree/.complete-aarch64" 2>/dev/null)" = "$stamp" ] && return 0
  rm -rf "$dir" "$tree/w"; mkdir -p "$dir/lib" "$tree/w" || return 1
  ln -s ../../include "$dir/include"
  for p in $(release_wheels_aarch64 "$v"); do
    whl="$(wheel "$p" aarch64)" || return 1
    python3 -m zipfile -e "$whl" "$tree/w" || { say "cannot unpack $whl"; return 1; }
  done
  place_libs "$tree/w" "$dir/lib" "${v%%.*}" || return 1
  # No relocatable device code here: an empty archive satisfies CMake's -lcudadevrt.
  aarch64-linux-gnu-ar rcs "$dir/lib/libcudadevrt.a" || return 1
  rm -rf "$tree/w"
  echo "$stamp" > "$tree/.complete-aarch64"
}

# CUDART_VERSION and CUBLAS_VER_MAJOR.MINOR as the tree's nvcc sees them.
seen_versions() {
  printf '#include <cuda_runtime.h>\n#include <cublas_v2.h>\nwt_seen CUDART_VERSION CUBLAS_VER_MAJOR CUBLAS_VER_MINOR\n' \
    > "$1/seen.cu"
  "$1/bin/nvcc" -E "$1/seen.cu" 2>/dev/null | awk '$1 == "wt_seen" { print $2, $3 "." $4 }'
}

# Headers a compile of build $1 read from a CUDA installation other than the tree $2: the
# host compilers search /usr/local/include, where a toolkit may have linked its headers, and
# a header the older release lacks would be found there unnoticed.
# Prints them; fails (with no output) when the lists cannot show it: ninja cannot read them,
# or no compile read the tree's cuda_runtime_api.h.
foreign_headers() {
  local deps
  deps="$(ninja -C "$1" -t deps 2>/dev/null | awk '/^ +\// { print $1 }' | sort -u)" || return 1
  grep -qx "$2/include/cuda_runtime_api.h" <<<"$deps" || return 1
  grep -E '^/usr/local/(include|cuda)|^'"$nvcc_top"'/' <<<"$deps" | grep -v "^$2/" || true
}

rows=()
status=0
for v in "${versions[@]}"; do
  major="${v%%.*}"
  # One build folder per target and host compiler: CMake drops the other -D options of a
  # cache whose compiler changes.
  tree="$work/cuda-$v"
  build="$builds/$v$([ "$aarch64" = 1 ] && echo -aarch64)${gcc_version:+-gcc$gcc_version}"
  log="$build.log"
  start=$SECONDS result=pass detail=""
  target_args=(-DCMAKE_CUDA_ARCHITECTURES="$arch" "${host_cc[@]}")
  targets=()
  readelf=readelf
  if [ "$aarch64" = 1 ]; then
    target_args=(-DCMAKE_TOOLCHAIN_FILE="$root_src/toolchains/jetson-orin.cmake" -DCMAKE_CUDA_ARCHITECTURES="$arch"
      -DWT_CROSS_SUFFIX="${gcc_version:+-$gcc_version}" -DWHITTLE_TOOLS=ON
      -DCUDAToolkit_TARGET_DIR="$tree/targets/aarch64-linux" -DCMAKE_CUDA_FLAGS="-target-dir aarch64-linux")
    # As scripts/cross-test.sh: the library, the tools, the unit-test binary.
    targets=(--target whittle whittle-run whittle-plan whittle-bench whittle_tests)
    readelf=aarch64-linux-gnu-readelf
  fi
  if ! assemble "$tree" "$v" || { [ "$aarch64" = 1 ] && ! assemble_aarch64 "$tree" "$v"; }; then
    result=FAIL detail="toolkit tree not assembled"
  else
    read -r seen_rt seen_blas <<<"$(seen_versions "$tree")"
    want_rt="$(( ${v%%.*} * 1000 + ${v##*.} * 10 ))"
    if [ "${seen_rt:-}" != "$want_rt" ]; then
      result=FAIL detail="the compile saw CUDART_VERSION ${seen_rt:-none}, not $want_rt"
    else
      say "CUDA $v (CUDART_VERSION $seen_rt, cuBLAS $seen_blas) with nvcc $local_version: building $build"
      # A build folder of another tree (another --root) starts afresh: CMake would drop its
      # cache for the new compiler and configure again without this command's -D options
      # (no CUDA), and the cross build failed even with the cache and CMakeFiles/ removed.
      if [ -f "$build/CMakeCache.txt" ] &&
         ! grep -qx "CMAKE_CUDA_COMPILER:[A-Z]*=$tree/bin/nvcc" "$build/CMakeCache.txt"; then
        rm -rf "$build"
      fi
      # The tree's lib64 first: the test discovery runs the built tests, which need the
      # older libcudart (their CUDA calls fail without a GPU, as on any GPU-less machine).
      if ! env -u CUDACXX -u CUDA_PATH -u CUDA_HOME cmake -S "$root_src" -B "$build" -G Ninja \
            -DCMAKE_BUILD_TYPE=Release -DWHITTLE_CUDA=ON -DWHITTLE_VULKAN=OFF -DWHITTLE_TESTS=ON \
            -DCMAKE_CUDA_COMPILER="$tree/bin/nvcc" -DCUDAToolkit_ROOT="$tree" "${target_args[@]}" \
            "${compiler_cache[@]}" "${cmake_extra[@]}" >"$log" 2>&1; then
        result=FAIL detail="configure failed ($log)"
      elif ! LD_LIBRARY_PATH="$tree/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            cmake --build "$build" -j "$(nproc)" "${targets[@]}" >>"$log" 2>&1; then
        first="$(grep -m1 -E 'error' "$log" || grep -m1 FAILED "$log")"
        result=FAIL detail="build failed: ${first:0:200} ($log)"
      else
        needed="$($readelf -d "$build/tools/whittle-run" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
        [[ " $needed" == *" libcudart.so.$major "* ]] ||
          { result=FAIL; detail="whittle-run does not need libcudart.so.$major (needs: $needed)"; }
        [[ " $needed" != *" libcublas"* ]] ||
          { result=FAIL; detail="whittle-run links cuBLAS, which it should open with dlopen (needs: $needed)"; }
        grep -qa "libcublas\.so\.$major" "$build/tools/whittle-run" ||
          { result=FAIL; detail="whittle-run does not name libcublas.so.$major (the cuBLAS it would open)"; }
        # And opens it: the release's libcublas found, with the four functions the backend
        # calls (no GPU needed; the cross build has no host tests, its qemu run is below).
        if [ "$result" = pass ] && [ "$aarch64" = 0 ]; then
          if ! blas="$(LD_LIBRARY_PATH="$tree/lib64" "$build/tests/whittle_cuda_host_tests" \
                       --test-case='cuda: cuBLAS*' 2>&1)"; then
            result=FAIL detail="the release's cuBLAS does not open: $(echo "$blas" | grep -m2 -E 'ERROR|WT_ERR' | tr '\n' ' ')"
          fi
        fi
        if ! foreign="$(foreign_headers "$build" "$tree")"; then
          result=FAIL detail="ninja's dependency lists do not show the tree's cuda_runtime_api.h being read"
        elif [ -n "$foreign" ]; then
          result=FAIL detail="headers from another CUDA: $(echo $foreign | cut -c1-300)"
        fi
        if [ "$result" = pass ] && [ "$aarch64" = 1 ]; then
          # The aarch64 binary loads the aarch64 libcudart under qemu (cuBLAS is opened only
          # once a device is found) and, with no driver there, refuses the CUDA backend with
          # its status and message.
          ran="$(qemu-aarch64 -L /usr/aarch64-linux-gnu \
                 -E LD_LIBRARY_PATH="/usr/aarch64-linux-gnu/lib:$tree/targets/aarch64-linux/lib" \
                 "$build/tools/whittle-run" -m "$root_src/tests/data/reference/tiny_llama3.gguf" \
                 --backend cuda -p x -n 1 2>&1)"
          case "$ran" in
            *WT_ERR_UNSUPPORTED*cuda:*) ran="$(echo "$ran" | grep -m1 WT_ERR_UNSUPPORTED)" ;;
            *) result=FAIL detail="whittle-run --backend cuda under qemu-aarch64: ${ran:0:200}" ;;
          esac
        fi
        [ "$result" = pass ] && detail="CUDART_VERSION $seen_rt, cuBLAS $seen_blas (opened as libcublas.so.$major); whittle-run needs ${needed% }${ran:+; under qemu: ${ran:0:160}}"
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
