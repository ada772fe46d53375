#!/usr/bin/env bash
# Device call 1 of 2 (carry .gpu-carry/{doctest,gl,nlohmann,vk.tar.xz,mA}): the carried
# bits kept in /root/carry for call 2, the build, parity, compute-sanitizer. Reports come
# back in $OUT.
set -x
cd "$(dirname "$0")/../.."
for f in .gpu-carry/gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /root/m /root/carry && cp .gpu-carry/mA/part /root/m/a
tar xJf .gpu-carry/vk.tar.xz -C .gpu-carry
cp -r .gpu-carry/doctest .gpu-carry/gl .gpu-carry/nlohmann .gpu-carry/vk /root/carry/
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader
scripts/gpu-check.sh /root/gc1 --build /root/build \
  --skip model-tests,bench-full,bench-prune,bench-host,ncu
# The fused matmul's 2 and 8 columns per warp (WT_CUDA_ROW_COLS; by default only 1 and 4 run,
# so only those are in parity above): the matmul cases again with each, outputs checked.
for c in 2 8; do
  echo "## WT_CUDA_ROW_COLS=$c"
  WT_CUDA_ROW_COLS=$c WT_PARITY_BACKENDS=cuda /root/build/tests/parity/whittle_parity --test-case="parity: matmul" 2>&1 |
    grep -E "ERROR|test cases|Status"
done | tee /root/gc1/parity-row-cols.txt
cp /root/gc1/report.md $OUT/call1-report.md
tar czf $OUT/call1-logs.tgz -C /root/gc1 .
