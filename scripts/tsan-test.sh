#!/usr/bin/env bash
# ThreadSanitizer over the concurrency tests (ctest label "concurrency": contexts of one
# model on many threads, WT_ERR_BUSY, abort from another thread, the pager's copy worker),
# in a CPU-only build of the library and unit tests. Any data race fails the run. The
# default model's ten-thread case (label model) is left to the other stages: under TSan it
# took 14 min on 2 cores (clean); the tiny model's case takes the same paths.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/fetch-model.sh" >/dev/null
# mimalloc off: TSan intercepts the system allocator.
"$root/scripts/build.sh" "$root/build-tsan" -DWHITTLE_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWHITTLE_TOOLS=OFF -DWHITTLE_TESTS=ON -DWHITTLE_VULKAN=OFF -DWHITTLE_CUDA=OFF -DWHITTLE_MIMALLOC=OFF
# halt_on_error: the first race fails its test (and so the run) with the report.
(cd "$root/build-tsan" && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --output-on-failure --no-tests=error -j "$(nproc)" -L concurrency)
