#!/usr/bin/env bash
# Installs the Release build into a temporary prefix and consumes it the two ways an
# application would: examples/embed-c through find_package(whittle) (static library) and
# through pkg-config (libwhittle.so), runs both on the default model with a few tokens and
# checks they answer. Also checks that libwhittle.so exports only the wt_ C API.
#   scripts/example-test.sh [BUILD_DIR]    (default build: after scripts/test.sh only the
#                                           shared library is left to link)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
start=$(date +%s)
model="$("$root/scripts/fetch-model.sh")"
command -v pkg-config >/dev/null 2>&1 || {
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq pkg-config >/dev/null
}

# A fresh build dir gets the library only; an existing one (test.sh's) keeps its options.
fresh=()
[ -f "$dir/CMakeCache.txt" ] || fresh=(-DWHITTLE_TESTS=OFF -DWHITTLE_TOOLS=OFF)
"$root/scripts/build.sh" "$dir" -DWHITTLE_SHARED=ON "${fresh[@]+"${fresh[@]}"}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
cmake --install "$dir" --prefix "$prefix" >/dev/null
libdir="$prefix/lib"
[ -d "$libdir" ] || libdir="$(dirname "$(find "$prefix" -name whittle.pc | head -n 1)")/.."
echo "example-test: installed into $prefix:"
(cd "$prefix" && find . -type f -o -type l | sort | sed 's/^/  /')

# libwhittle.so exports the C API and nothing else.
so="$(find "$prefix" -name 'libwhittle.so' | head -n 1)"
extra="$(nm -D --defined-only "$so" | awk '{print $NF}' | grep -v '^wt_' || true)"
if [ -n "$extra" ]; then
  echo "example-test: libwhittle.so exports more than wt_*:" >&2
  echo "$extra" | head -n 20 >&2
  exit 1
fi
echo "example-test: libwhittle.so exports $(nm -D --defined-only "$so" | grep -c ' wt_') wt_ symbols and nothing else"

run() {  # run NAME BINARY: a few tokens on the default model; the answer must be full KV's: Paris
  local out
  out="$("$2" "$model" 12)"
  echo "$out" | sed "s/^/  [$1] /"
  echo "$out" | grep '^embed-c: answer: .\+' >/dev/null || { echo "example-test: $1: empty answer" >&2; exit 1; }
  echo "$out" | grep '^embed-c: answer: .*Paris' >/dev/null || {
    echo "example-test: $1: the pruned answer lost Paris (full KV answers it)" >&2; exit 1; }
}

# 1. CMake: find_package(whittle COMPONENTS cpu), static library.
cmake -S "$root/examples/embed-c" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
run find_package "$tmp/cmake-build/embed-c"
# A backend component the build lacks is refused.
config="$(find "$prefix" -name whittleConfig.cmake | head -n 1)"
for comp in vulkan cuda; do
  grep -q "whittle_${comp}_FOUND FALSE" "$config" || continue
  mkdir -p "$tmp/comp-$comp"
  printf 'cmake_minimum_required(VERSION 3.25)\nproject(c LANGUAGES C CXX)\nfind_package(whittle REQUIRED COMPONENTS cpu %s)\n' \
    "$comp" >"$tmp/comp-$comp/CMakeLists.txt"
  if cmake -S "$tmp/comp-$comp" -B "$tmp/comp-$comp/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
    echo "example-test: find_package(whittle COMPONENTS $comp) succeeded on a build without it" >&2
    exit 1
  fi
  echo "example-test: find_package(whittle COMPONENTS $comp) is refused (not built)"
done

# 2. pkg-config and make: libwhittle.so (found first by -lwhittle).
PKG_CONFIG_PATH="$libdir/pkgconfig" make -s -C "$root/examples/embed-c" OUT="$tmp/embed-c-pc" >/dev/null
LD_LIBRARY_PATH="$libdir" run pkg-config "$tmp/embed-c-pc"
ldd "$tmp/embed-c-pc" | grep "libwhittle.so" >/dev/null || {
  echo "example-test: the pkg-config build did not link libwhittle.so" >&2; exit 1; }
end=$(date +%s)
echo "example-test: passed ($((end - start)) s)"
