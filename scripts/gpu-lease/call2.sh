#!/usr/bin/env bash
# Device call 2 of 2, at once after call 1 (carry .gpu-carry/mBz: the second half gzipped):
# the model from its halves, gpu-check's model tests and benches (bench-host among them), the
# CUDA model tests with WT_CUDA_FUSE=norope, A/Bs of the fused one-row matmuls (CUDA's
# WT_CUDA_FUSE, WT_CUDA_ROW_COLS, Vulkan's WT_VK_FUSE), CUDA decode and the pager by KV cache type, Vulkan's
# tiled prompt kernels off and on (WT_VK_TILED), then Nsight
# Compute without the cache flush (a decode step's kernels as they run warm).
set -x
cd "$(dirname "$0")/../.."
for d in doctest gl nlohmann vk; do [ -e .gpu-carry/$d ] || ln -sfn /root/carry/$d .gpu-carry/$d; done
mkdir -p models && { cat /root/m/a; gzip -dc .gpu-carry/mBz/part.gz; } > models/SmolLM2-135M-Instruct.Q4_1.gguf
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p /root/x
scripts/gpu-check.sh /root/gc2 --build /root/build --skip parity,compute-sanitizer,ncu
cp /root/gc2/report.md $OUT/call2-report.md
tar czf $OUT/call2-logs.tgz -C /root gc2
# The CUDA model tests again with rope kept out of the fused Q, K, V matmul (the variant
# round 9 measured faster; docs/results/gpu-h200.md), then fused one-row matmuls (MatmulOp's
# norm, gate, bias, accumulate, rope, glu) on, on but for rope, on but for glu, the same build
# (WT_CUDA_FUSE), alternating, twice; with the host's time per step.
(cd /root/build && WT_CUDA_FUSE=norope ctest -R "cuda model" -j 4 2>&1 | tail -15) | tee $OUT/model-tests-norope.txt
# ab VAR "VALUES" FILE ARGS...: whittle-bench ARGS with VAR set to each value in turn, the
# whole round twice; the table rows (and CUDA's host profile) appended to $OUT/FILE.
ab() {
  local var=$1 values=$2 file=$3
  shift 3
  for i in 1 2; do
    for v in $values; do
      echo "## $var=$v run $i" | tee -a $OUT/$file
      env $var=$v /root/build/tools/whittle-bench -m $M "$@" 2>&1 | grep -E '^\| [0-9]|^(cuda|vulkan) profile' | tee -a $OUT/$file
    done
  done
}
# (1: every fusion, glu and rope's angles table among them; norope: rope apart; noglu:
# swiglu in the down projection's input, as round 9 ran it.)
WT_CUDA_PROFILE=1 ab WT_CUDA_FUSE "1 norope noglu" ab-fuse.txt -p 512,8192 -n 128 -r 3 --backend cuda
# Output columns per warp of the fused one-row matmuls (kernels/cuda/matmul.cu's
# fused_row_cols; 2026-11-28, never on a GPU): 1 everywhere (as before), the default (4 for
# the output head), 8 everywhere but the rope and gate calls.
ab WT_CUDA_ROW_COLS "1 0 8" ab-row-cols.txt -p 512 -n 128 -r 3 --backend cuda
# CUDA's KV caches of f16 and q8_0 (kernels/cuda/kv_read.cuh, kv_store.cuh; written without
# a GPU, 2026-11-28; their parity cases ran in call 1): decode at depth 4096 by cache type,
# and the pager with each (issue 27's table refilled for f32 and f16).
/root/build/tools/whittle-bench -m $M -p 4096 -n 64 -r 3 --kv-type f32,f16,q8_0 --backend cuda 2>&1 |
  grep -E '^\| [0-9]' | tee $OUT/kv-types-cuda.txt
# The pager by KV type, with its copies of consecutive slots merged (the default) and one
# per block and plane as before (WT_PAGER_MERGE=0; 2026-11-28: 1640 -> 276 copies a token
# for full KV with a quarter pool at 2048).
ab WT_PAGER_MERGE "1 0" pager-kv-types-cuda.txt --pager -p 2048 -n 32 -r 1 --kv-type f32,f16 --backend cuda
# Full KV's prompt passes and the slices of a pruned prompt's layers
# (wt_context_params.n_batch_rows; 2026-12-04, never on a GPU): the default (2048), 512 and
# the whole prompt in one run. CUDA's prompt matmuls dequantize each weight once per call, so
# each pass or slice costs that again; this says whether 2048 costs anything.
/root/build/tools/whittle-bench -m $M -p 8192 -n 4 -r 3 --method full,fastkv,gemfilter --keep 0.1 \
  --batch-rows 0,512,1048576 --backend cuda 2>&1 |
  grep -E '^\| [0-9]' | tee $OUT/batch-rows-cuda.txt
# GemFilter at the paper's filter layer (0.4 of the depth: 12 of the default model's 30),
# which issue 24's TTFT target (<= 0.45 of full KV at keep 0.1, 8192 tokens) was set at; its
# default is 0.6 of the depth since 2026-12-05 (it keeps the answers: fidelity-gemfilter.md),
# which bench-prune's --method all measures.
/root/build/tools/whittle-bench -m $M -p 8192 -n 4 -r 3 --method full,gemfilter --keep 0.1 --prune-param layer=12 \
  --backend cuda 2>&1 | grep -E '^\| [0-9]' | tee $OUT/gemfilter-layer12-cuda.txt
# Vulkan's fused one-row matmuls (its GPU kernels: norm, gate, biases, accumulate; never
# measured on a GPU, docs/results/vulkan.md) off and on, the same build (WT_VK_FUSE),
# alternating, twice.
# With the host's time per step (WT_VK_HOST_PROFILE): is Vulkan's decode gap to CUDA the
# host's or the GPU's?
WT_VK_HOST_PROFILE=1 ab WT_VK_FUSE "0 1" ab-vk-fuse.txt -p 512,2048 -n 64 -r 2 --backend vulkan
# Vulkan's tiled prompt kernels (matmul_tiled.comp, attention_tiled.comp; 2026-11-28, never
# on a GPU yet) off and on, the same build (WT_VK_TILED), alternating, twice: prefill is
# where Vulkan trails CUDA most.
ab WT_VK_TILED "0 1" ab-vk-tiled.txt -p 512,2048 -n 16 -r 2 --backend vulkan
N=$(ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); N=${N:-ncu}
head -c 4800 /usr/share/common-licenses/Apache-2.0 > /root/x/prompt.txt 2>/dev/null || head -c 4800 README.md > /root/x/prompt.txt
timeout 100 env LC_ALL=C $N --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
  --page details /root/build/tools/whittle-run -m $M -f /root/x/prompt.txt -n 16 --backend cuda > /root/x/ncu-warm.csv 2>/root/x/ncu-warm.err
tar czf $OUT/call2-logs.tgz -C /root gc2 x
