#!/usr/bin/env bash
# One device call without the model (carry .gpu-carry/{doctest,nlohmann,ab.patch}; about four
# minutes): an A/B of the working tree against the same tree with ab.patch reverted (made
# here with `git diff HEAD -- <paths> > .gpu-carry/ab.patch`), both built for this GPU, on a
# synthetic model of the default model's shapes (make_tiny_model --smollm2-shape: f32
# weights, byte vocabulary; no model file travels). Runs B (reverted) and A (the tree)
# alternating, twice, with the host's time per decode step (WT_CUDA_PROFILE=1), then
# per-kernel GPU times of each one's decode steps (Nsight Compute without the cache flush).
# AB_PARITY=FILTER first runs A's CUDA parity cases matching the doctest filter (-tc=FILTER);
# AB_NCU=0 leaves Nsight Compute out (a short lease). AB_EXTRA="VAR=value" adds a third
# variant, A0: the tree's binary with that environment (WT_CUDA_FUSE=0: its fusions off).
set -x
cd "$(dirname "$0")/../.."
C=$PWD/.gpu-carry
opts=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DWHITTLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DWHITTLE_MIMALLOC=OFF
      -DWHITTLE_VULKAN=OFF -DWHITTLE_TESTS=ON -Ddoctest_DIR=$C/doctest/lib/cmake/doctest
      -Dnlohmann_json_DIR=$C/nlohmann/share/cmake/nlohmann_json -DCMAKE_CXX_FLAGS=-isystem\ $C/doctest/include)
tgt=(whittle-bench make_tiny_model)
[ -n "${AB_PARITY:-}" ] && tgt+=(whittle_parity)
cmake -S . -B /root/a "${opts[@]}" > $OUT/configure.log 2>&1 || tail -30 $OUT/configure.log
time cmake --build /root/a -j16 --target "${tgt[@]}" > $OUT/build-a.log 2>&1 || tail -40 $OUT/build-a.log
mkdir -p /root/A /root/B && cp /root/a/tools/whittle-bench /root/A/   # static: the binary is all of it
if [ -n "${AB_PARITY:-}" ]; then
  WT_PARITY_BACKENDS=cuda /root/a/tests/parity/whittle_parity "-tc=$AB_PARITY" 2>&1 |
    grep -E 'PARITY|FAIL|ERROR|test cases|assertions' | tee $OUT/parity.txt
fi
# B: the same build with the patch reverted in place (only the patched files recompile).
{ patch -R -p1 < $C/ab.patch || git apply -R $C/ab.patch; } || echo "ab.patch did not revert"
time cmake --build /root/a -j16 --target whittle-bench > $OUT/build-b.log 2>&1 || tail -40 $OUT/build-b.log
cp /root/a/tools/whittle-bench /root/B/ && { patch -p1 < $C/ab.patch || git apply $C/ab.patch; }
/root/a/tests/make_tiny_model --smollm2-shape /root/s.gguf
for i in 1 2; do
  for v in B A ${AB_EXTRA:+A0}; do
    echo "## $v run $i" | tee -a $OUT/ab.txt
    [ $v = A0 ] && e=$AB_EXTRA || e=AB_NONE=1
    env $e WT_CUDA_PROFILE=1 /root/${v:0:1}/whittle-bench -m /root/s.gguf -p 1024,8192 -n 64 -r 3 --backend cuda 2>&1 |
      grep -E '^\| [0-9]|^cuda profile' | tee -a $OUT/ab.txt
  done
done
[ "${AB_NCU:-1}" = 0 ] && exit 0
N=$(ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); N=${N:-ncu}
for v in A B; do
  timeout ${AB_NCU_TIMEOUT:-60} env LC_ALL=C $N --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv \
    --print-units base --page details /root/$v/whittle-bench -m /root/s.gguf -p 1024 -n 8 -r 1 --backend cuda \
    > $OUT/ncu-$v.csv 2> $OUT/ncu-$v.err
done
