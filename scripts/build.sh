#!/usr/bin/env bash
# Configures and builds one build directory: scripts/build.sh DIR [cmake options...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$1"
shift
# nvcc for -DWHITTLE_CUDA=ON: the toolkit's default place when it is not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
source "$root/scripts/compiler-cache.sh"
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release "${compiler_cache[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
