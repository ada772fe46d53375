#!/usr/bin/env bash
# Prefill and decode tokens/s of the default model at 2 threads, with the machine's read
# bandwidth measured in the same run. Arguments go to whittle-bench (-p, -n, -r, -t).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build" -DWHITTLE_TESTS=OFF
model="$("$root/scripts/fetch-model.sh")"
exec "$root/build/tools/whittle-bench" -m "$model" -t 2 "$@"
