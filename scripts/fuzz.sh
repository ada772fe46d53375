#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (clang, ASan + UBSan, into build-fuzz/) and runs
# them, each from its committed seed corpus fuzz/corpus/<harness>/:
#
#   scripts/fuzz.sh [--seconds N] [--jobs N] [--build-only] [harness...]   (default: all, 300 s each)
#   scripts/fuzz.sh --smoke                                                 (CI: all, 20 s each)
#
# New corpus entries go to a scratch corpus outside the repository ($FUZZ_OUT/corpus/<harness>,
# FUZZ_OUT defaults to ${TMPDIR:-/tmp}/whittle-fuzz), crash, leak, timeout and out-of-memory
# inputs to $FUZZ_OUT/artifacts/<harness>/, each run's full log to $FUZZ_OUT/logs/. Prints
# each harness's executions and executions per second; exits non-zero if any harness found
# anything (its log's tail and the saved input are named). fuzz/README.md says how to replay
# an input and turn it into a regression test. Installs clang and libFuzzer's runtime
# (libclang-rt-14-dev) through apt-get when missing, and fetches the default model, which
# fuzz_tokenizer reads.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
all_harnesses=(fuzz_gguf fuzz_tokenizer fuzz_chat fuzz_chat_reply fuzz_api fuzz_tool_args fuzz_resume fuzz_state)

seconds=300
jobs="$(nproc)"
build_only=0
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) seconds=20 ;;  # 7 x 20 s plus start-up: the CI budget is 2.5 minutes of fuzzing
    --seconds) seconds="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --build-only) build_only=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    fuzz_*) harnesses+=("$1") ;;
    *) echo "fuzz.sh: unknown argument '$1' (harnesses: ${all_harnesses[*]})" >&2; exit 2 ;;
  esac
  shift
done
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all_harnesses[@]}")

# ---- what the build needs: clang with libFuzzer, cmake ------------------------------------
need=()
command -v clang++ >/dev/null 2>&1 || need+=(clang)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v make >/dev/null 2>&1 || need+=(build-essential)
dpkg -s nlohmann-json3-dev >/dev/null 2>&1 || need+=(nlohmann-json3-dev)  # the planner's JSON reader
# libFuzzer's runtime: Debian ships it with the versioned compiler-rt package.
if ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-$(uname -m).a" >/dev/null; then
  need+=(libclang-rt-14-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "fuzz.sh: installing ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# ---- build ---------------------------------------------------------------------------------
build="$root/build-fuzz"
start=$(date +%s)
source "$root/scripts/compiler-cache.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${compiler_cache[@]}" \
  -DWHITTLE_FUZZ=ON -DWHITTLE_VULKAN=OFF -DWHITTLE_CUDA=OFF -DWHITTLE_TOOLS=ON -DWHITTLE_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${harnesses[@]}" >/dev/null
echo "fuzz.sh: build of ${harnesses[*]} took $(( $(date +%s) - start )) s (in $build)"
[ "$build_only" -eq 1 ] && exit 0

for h in "${harnesses[@]}"; do
  if [ "$h" = fuzz_tokenizer ] && [ -z "${WHITTLE_FUZZ_MODEL:-}" ]; then
    "$root/scripts/fetch-model.sh" >/dev/null
  fi
done

# ---- run -----------------------------------------------------------------------------------
out="${FUZZ_OUT:-${TMPDIR:-/tmp}/whittle-fuzz}"
mkdir -p "$out/logs"
# Inputs larger than the seeds gain little; a GGUF needs room for a tiny model's tensors.
max_len() {
  case "$1" in
    fuzz_gguf) echo 32768 ;;
    fuzz_api) echo 2048 ;;
    fuzz_resume) echo 65536 ;;  # a real document of the fuzzed suite is ~20 KB
    fuzz_state) echo 131072 ;;  # the prepared states are 40-70 KB
    *) echo 4096 ;;
  esac
}
# -timeout: one input running this long is a hang (the slowest seeds take milliseconds).
# -rss_limit_mb (and with it -malloc_limit_mb): a small input that makes the library
# allocate gigabytes is a finding, not a machine to wait for.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

failed=()
fuzz_start=$(date +%s)
for h in "${harnesses[@]}"; do
  corpus="$out/corpus/$h"
  artifacts="$out/artifacts/$h"
  log="$out/logs/$h.log"
  mkdir -p "$corpus" "$artifacts"
  touch "$out/logs/$h.start"  # what this run saves is newer (earlier findings stay listed apart)
  rc=0
  "$build/fuzz/$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$h")" \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$root/fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
  printf 'fuzz.sh: %-15s %10s executions  %7s exec/s  %s\n' "$h" "${execs:-?}" "${rate:-?}" \
    "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")"
  if [ "$rc" -ne 0 ]; then
    failed+=("$h")
    echo "---- $log (last 40 lines)" >&2
    tail -n 40 "$log" >&2
    echo "---- inputs this run saved (replay: $build/fuzz/$h FILE):" >&2
    find "$artifacts" -type f -newer "$out/logs/$h.start" >&2
  fi
done
echo "fuzz.sh: fuzzing took $(( $(date +%s) - fuzz_start )) s; logs in $out/logs"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}" >&2
  exit 1
fi
