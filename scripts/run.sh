#!/usr/bin/env bash
# The README's first command: install what is missing, build Release, fetch the default
# model and ask it a question. Extra arguments go to whittle-run (they replace the
# default prompt when one is given with -p).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build" -DWHITTLE_TESTS=OFF
model="$("$root/scripts/fetch-model.sh")"
if [ $# -eq 0 ]; then
  set -- -p "What is the capital of France?" --chat -n 64
fi
exec "$root/build/tools/whittle-run" -m "$model" -t "$(nproc)" "$@"
