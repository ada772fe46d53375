#!/usr/bin/env bash
# Installs what building and testing Whittle needs, only what is missing: Debian packages
# through apt-get, Python packages through pip. Safe to run again.
set -euo pipefail

apt_packages=(build-essential cmake doctest-dev libmimalloc-dev nlohmann-json3-dev python3 python3-pip unzip)
# ccache: scripts/compiler-cache.sh (builds of sources compiled before are cache hits).
apt_packages+=(ccache)
# The Vulkan backend: loader and headers, glslc, Mesa's drivers (lavapipe runs Vulkan on the
# CPU, so the Vulkan tests run for real without a GPU), the validation layers, vulkaninfo.
apt_packages+=(libvulkan-dev mesa-vulkan-drivers glslc vulkan-validationlayers vulkan-tools)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# A toolchain from outside Debian (e.g. python3 from pyenv) counts as present.
if [ ${#missing[@]} -gt 0 ]; then
  filtered=()
  for p in "${missing[@]}"; do
    case "$p" in
      python3) command -v python3 >/dev/null 2>&1 || filtered+=("$p") ;;
      python3-pip) python3 -m pip --version >/dev/null 2>&1 || filtered+=("$p") ;;
      cmake) command -v cmake >/dev/null 2>&1 || filtered+=("$p") ;;
      *) filtered+=("$p") ;;
    esac
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
