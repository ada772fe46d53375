#!/usr/bin/env bash
# Device call 2 of 2, at once after call 1 (carry .gpu-carry/mB): the model from its
# halves, gpu-check's model tests, benches (bench-host among them) and ncu; then Vulkan
# against CUDA (issue 28), Vulkan's KV types, the pager (issue 27), ncu without the cache flush.
set -x
cd "$(dirname "$0")/../.."
for d in doctest gl nlohmann vk; do [ -e .gpu-carry/$d ] || ln -sfn /root/carry/$d .gpu-carry/$d; done
mkdir -p models && cat /root/m/a .gpu-carry/mB/part > models/SmolLM2-135M-Instruct.Q4_1.gguf
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
M=models/SmolLM2-135M-Instruct.Q4_1.gguf B=/root/build/tools/whittle-bench
mkdir -p /root/x
scripts/gpu-check.sh /root/gc2 --build /root/build --skip parity,compute-sanitizer
cp /root/gc2/report.md $OUT/call2-report.md
$B -m $M -p 512,2048,8192 -n 64 -r 2 --backend vulkan --json /root/x/vk.json > /root/x/vk.md 2>&1
$B -m $M -p 512,2048,8192 -n 64 -r 2 --backend cuda --json /root/x/cu.json > /root/x/cu.md 2>&1
$B -m $M -p 2048 -n 64 -r 2 --backend vulkan --kv-type f32,f16,q8_0 --json /root/x/vk-kvtype.json > /root/x/vk-kvtype.md 2>&1
$B -m $M -p 2048,8192 -n 32 -r 2 --pager --backend cuda --kv-device 0.25 --kv-block 64 --json /root/x/pager.json > /root/x/pager.md 2>&1
tail -30 /root/x/vk*.md /root/x/cu.md /root/x/pager.md
tar czf $OUT/call2-logs.tgz -C /root gc2 x
N=$(ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); N=${N:-ncu}
timeout 100 env LC_ALL=C $N --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
  --page details /root/build/tools/whittle-run -m $M -f /root/gc2/ncu/prompt.txt -n 16 --backend cuda > /root/x/ncu-warm.csv 2>/root/x/ncu-warm.err
tar czf $OUT/call2-logs.tgz -C /root gc2 x
