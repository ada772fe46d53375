#!/usr/bin/env bash
# The README's second command: install what is missing, fetch the default model, build,
# run ctest. Two builds, both running every test not labelled "slow": Release, and
# ASan+UBSan (RelWithDebInfo) so memory errors and undefined behaviour fail CI.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc)"
"$root/scripts/setup.sh"
"$root/scripts/fetch-model.sh" >/dev/null

"$root/scripts/build.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$jobs" -LE slow)

"$root/scripts/build.sh" "$root/build-asan" -DWHITTLE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHITTLE_TOOLS=OFF
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$jobs" -LE slow)
