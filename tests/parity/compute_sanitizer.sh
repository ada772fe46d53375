#!/bin/sh
# Runs the parity suite's CUDA cases under compute-sanitizer: memcheck (out-of-bounds and
# misaligned accesses, leaks of device memory) and racecheck (shared-memory hazards).
# Exit 77 (ctest: Skipped) with the reason when the tool or a CUDA device is missing.
# Usage: compute_sanitizer.sh PATH/whittle_parity PATH/compute-sanitizer
parity="$1"
sanitizer="$2"
if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
  echo "SKIP: compute-sanitizer not found (it comes with the CUDA toolkit)"
  exit 77
fi
WT_PARITY_BACKENDS=cuda "$parity" -tc='parity: add' >/dev/null 2>&1
if [ $? -eq 77 ]; then
  echo "SKIP: no usable CUDA device (the parity suite skipped its CUDA backend)"
  exit 77
fi
for tool in memcheck racecheck; do
  echo "compute-sanitizer --tool $tool"
  WT_PARITY_BACKENDS=cuda "$sanitizer" --tool "$tool" --error-exitcode 1 "$parity" || exit 1
done
