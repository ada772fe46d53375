#!/usr/bin/env bash
# One device call without the model (carry nothing; about a minute): build the CUDA
# pieces, CUDA parity, then whittle-bench on a synthetic model of the default model's shapes
# (make_tiny_model --smollm2-shape: f32 weights, byte vocabulary) with the host's time per
# decode step (WT_CUDA_PROFILE=1), whole-step captures against segments of 64 launches
# (WT_CUDA_STEP_SEGMENT), alternating, twice. Results in $OUT.
set -x
cd "$(dirname "$0")/../.."
cmake -S . -B /root/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DWHITTLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DWHITTLE_MIMALLOC=OFF -DWHITTLE_VULKAN=OFF -DWHITTLE_TESTS=ON > $OUT/configure.log 2>&1 || tail -30 $OUT/configure.log
time cmake --build /root/b -j16 --target whittle_parity whittle-bench whittle-run make_tiny_model > $OUT/build.log 2>&1 || tail -40 $OUT/build.log
B=/root/b/tools/whittle-bench P=/root/b/tests/parity/whittle_parity
/root/b/tests/make_tiny_model --smollm2-shape /root/s.gguf &
WT_PARITY_BACKENDS=cuda $P 2>&1 | grep -E "PARITY|FAIL|ERROR|Status|test cases" | tee $OUT/parity.txt
wait
for i in 1 2; do
  for seg in 0 64; do
    echo "## WT_CUDA_STEP_SEGMENT=$seg run $i" | tee -a $OUT/bench-host.txt
    WT_CUDA_PROFILE=1 WT_CUDA_STEP_SEGMENT=$seg $B -m /root/s.gguf -p 1024,8192 -n 64 -r 3 --backend cuda 2>&1 |
      grep -E "pp|cuda profile" | tee -a $OUT/bench-host.txt
  done
done
