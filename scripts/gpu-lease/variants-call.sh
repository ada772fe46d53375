#!/usr/bin/env bash
# One device call without the model (carry .gpu-carry/{doctest,nlohmann}; about three
# minutes): the tree built for this GPU, then whittle-bench on a synthetic model of the
# default model's shapes (make_tiny_model --smollm2-shape) under each environment of
# VARIANTS (space-separated VAR=value settings, e.g. "WT_CUDA_FUSE=0 WT_CUDA_FUSE=1"),
# alternating, twice, with the host's time per decode step; then Nsight Compute's per-kernel
# times of each variant's decode steps (without the cache flush). PARITY=FILTER first runs
# the CUDA parity cases matching the doctest filter (-tc=FILTER). Results in $OUT.
set -x
cd "$(dirname "$0")/../.."
C=$PWD/.gpu-carry
cmake -S . -B /root/v -G Ninja -DCMAKE_BUILD_TYPE=Release -DWHITTLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DWHITTLE_MIMALLOC=OFF -DWHITTLE_VULKAN=OFF -DWHITTLE_TESTS=ON -Ddoctest_DIR=$C/doctest/lib/cmake/doctest \
  -Dnlohmann_json_DIR=$C/nlohmann/share/cmake/nlohmann_json "-DCMAKE_CXX_FLAGS=-isystem $C/doctest/include" \
  > $OUT/configure.log 2>&1 || tail -30 $OUT/configure.log
tgt=(whittle-bench make_tiny_model)
[ -n "${PARITY:-}" ] && tgt+=(whittle_parity)
time cmake --build /root/v -j16 --target "${tgt[@]}" > $OUT/build.log 2>&1 || tail -40 $OUT/build.log
if [ -n "${PARITY:-}" ]; then
  WT_PARITY_BACKENDS=cuda /root/v/tests/parity/whittle_parity "-tc=$PARITY" 2>&1 |
    grep -E 'PARITY|FAIL|ERROR|test cases|assertions' | tee $OUT/parity.txt
fi
/root/v/tests/make_tiny_model --smollm2-shape /root/s.gguf
B=/root/v/tools/whittle-bench
for i in 1 2; do
  for v in $VARIANTS; do
    echo "## $v run $i" | tee -a $OUT/variants.txt
    env $v WT_CUDA_PROFILE=1 $B -m /root/s.gguf -p 1024,8192 -n 64 -r 3 --backend cuda 2>&1 |
      grep -E '^\| [0-9]|^cuda profile' | tee -a $OUT/variants.txt
  done
done
N=$(ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); N=${N:-ncu}
for v in ${NCU_VARIANTS:-}; do
  timeout ${NCU_TIMEOUT:-60} env $v LC_ALL=C $N --cache-control none --clock-control none --metrics gpu__time_duration.sum \
    --csv --print-units base --page details $B -m /root/s.gguf -p 1024 -n 8 -r 1 --backend cuda \
    > $OUT/ncu-${v//[^A-Za-z0-9]/_}.csv 2> /dev/null
done
