#!/usr/bin/env bash
# Here (no GPU): fills .gpu-carry/ (ignored through .git/info/exclude) for this workplace's
# device machine, which takes at most 64 MiB per call and has no network, no Vulkan loader,
# no glslc: doctest/ and nlohmann/ (prefixes gpu-check.sh finds), gl/ (the Vulkan loader and
# glvnd .debs), vk.tar.xz (glslc, libshaderc, Vulkan headers: 2.2 MB packed, 8.9 unpacked),
# and the default model in halves of 44 and 50 MiB (mA/, mB/; mBz/ the second gzipped, 48
# MiB), so that the checkout (~14 MiB) plus either half and its call's other bits stay under
# 64 MiB: call1.sh carries mA, call2.sh mBz.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=.gpu-carry
grep -qx "/$C/" .git/info/exclude 2>/dev/null || echo "/$C/" >> .git/info/exclude
m=models/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$m" ] || scripts/fetch-model.sh
rm -rf "$C"; mkdir -p $C/doctest/include $C/doctest/lib/cmake/doctest $C/nlohmann/share/cmake $C/nlohmann/include \
  $C/gl $C/mA $C/mB $C/vk/include $C/vk/bin $C/vk/lib
cp -r /usr/include/doctest $C/doctest/include/ && cp /usr/lib/cmake/doctest/* $C/doctest/lib/cmake/doctest/
cp -r /usr/share/cmake/nlohmann_json $C/nlohmann/share/cmake/ && cp -r /usr/include/nlohmann $C/nlohmann/include/
cp -r /usr/include/vulkan /usr/include/vk_video $C/vk/include/ && rm -f $C/vk/include/vulkan/*.hpp
cp "$(command -v glslc)" $C/vk/bin/ && cp -L "$(ldconfig -p | awk '/libshaderc.so.1 /{print $NF; exit}')" $C/vk/lib/
tar cJf $C/vk.tar.xz -C $C vk && rm -rf $C/vk
(cd $C/gl && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null) ||
  { echo "prep.sh: apt-get download failed (apt-get update first)" >&2; exit 1; }
head -c 46137344 "$m" > $C/mA/part && tail -c +46137345 "$m" > $C/mB/part
cat $C/mA/part $C/mB/part | cmp - "$m"
# The second half gzipped (49.8 MB of 52.2): the checkout grew to 14 MiB, and 14 + 50 MiB
# was over the 64 MiB a call takes.
mkdir -p $C/mBz && gzip -6 -c $C/mB/part > $C/mBz/part.gz

du -sh $C/*
