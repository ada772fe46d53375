#!/usr/bin/env bash
# Prefill and decode tokens/s of the default model at 2 threads, with the machine's read
# bandwidth measured in the same run. With --q8_0 first, also a Q8_0 requantization of
# the same model (scripts/requantize.py; needs the gguf and numpy pip packages, installed
# here when missing). Other arguments go to whittle-bench (-p, -n, -r, -t, --suite quick,
# --method, --json, --plot DIR: matplotlib is installed through pip when missing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
q8=0
if [ "${1:-}" = "--q8_0" ]; then
  q8=1
  shift
fi
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build" -DWHITTLE_TESTS=OFF >/dev/null
model="$("$root/scripts/fetch-model.sh")"
case " $* " in
  *" --plot "*) python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install --quiet matplotlib ;;
esac
models=("$model")
if [ "$q8" = 1 ]; then
  q8_model="$root/models/SmolLM2-135M-Instruct.Q8_0.gguf"
  if [ ! -f "$q8_model" ]; then
    python3 -c "import gguf, numpy" 2>/dev/null || python3 -m pip install --quiet gguf numpy
    python3 "$root/scripts/requantize.py" "$model" "$q8_model"
  fi
  models+=("$q8_model")
fi
for m in "${models[@]}"; do
  echo "== $(basename "$m")"
  "$root/build/tools/whittle-bench" -m "$m" -t 2 "$@"
  echo
done
