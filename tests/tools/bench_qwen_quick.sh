#!/bin/sh
# ctest bench_qwen05_quick_suite (label slow): whittle-bench's quick suite on a model at long
# lengths, resuming from the JSON an earlier, stopped run left. Exit 77 (ctest: Skipped)
# with the reason when the model is missing.
# Usage: bench_qwen_quick.sh WHITTLE_BENCH MODEL OUT.json LENGTHS
bench="$1" model="$2" out="$3" lengths="$4"
if [ ! -f "$model" ]; then
  echo "SKIP: $model missing (scripts/fetch-model.sh qwen2.5-0.5b)"
  exit 77
fi
if [ -f "$out" ]; then
  cp "$out" "$out.before" || exit 1
  exec "$bench" -m "$model" --suite quick -p "$lengths" -t 2 --json "$out" --resume "$out.before"
fi
exec "$bench" -m "$model" --suite quick -p "$lengths" -t 2 --json "$out"
