#!/usr/bin/env bash
# Builds the peer's benchmark, llama.cpp's llama-bench for the CPU, and prints its path.
#
#   scripts/peer-llama-bench.sh [DIR]     DIR: where to build (default /tmp/whittle-peer)
#
# The source is the copy of llama.cpp that the PyPI source package llama-cpp-python 0.3.36
# vendors (llama.cpp commit 0c1e570, 2026-10-01), fetched with pip and checked against a
# pinned sha256, so the comparison needs nothing but pip and a compiler. Built Release with
# GGML_NATIVE (this host's ISA, as llama.cpp's users build it); ~5 minutes on 2 cores. Nothing
# is written inside the repository. docs/results/peer-cpu-q4km.md has the figures it gave.
set -euo pipefail
dir=${1:-/tmp/whittle-peer}
ver=0.3.36
sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
tarball="$dir/llama_cpp_python-$ver.tar.gz"
src="$dir/llama_cpp_python-$ver/vendor/llama.cpp"
bin="$dir/build/bin/llama-bench"
stamp="$dir/build/whittle-peer.sha256"  # written after a build from the pinned source
if [[ -x "$bin" && "$(cat "$stamp" 2>/dev/null)" == "$sha" ]]; then echo "$bin"; exit 0; fi
mkdir -p "$dir"
if [[ ! -f "$tarball" ]] || ! echo "$sha  $tarball" | sha256sum -c --quiet - 2>/dev/null; then
  rm -f "$tarball"
  python3 -m pip download --no-deps --no-binary :all: -d "$dir" "llama-cpp-python==$ver" >&2
fi
echo "$sha  $tarball" | sha256sum -c --quiet - >&2 || { echo "peer-llama-bench: $tarball: sha256 mismatch" >&2; exit 1; }
if [[ ! -f "$src/CMakeLists.txt" ]]; then  # extracted whole into a temporary folder, then moved
  rm -rf "$dir/llama_cpp_python-$ver" "$dir/extract"
  mkdir -p "$dir/extract"
  tar -xzf "$tarball" -C "$dir/extract"
  mv "$dir/extract/llama_cpp_python-$ver" "$dir/"
  rmdir "$dir/extract"
fi
generator=()
# A build folder keeps the generator it was made with.
[[ ! -f "$dir/build/CMakeCache.txt" ]] && command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$dir/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
cmake --build "$dir/build" --target llama-bench -j "$(nproc)" >&2
echo "$sha" > "$stamp"
echo "$bin"
