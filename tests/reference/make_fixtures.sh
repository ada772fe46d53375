#!/usr/bin/env bash
# Regenerate tests/data/reference/* deterministically (tiny random GGUFs + all .ref fixtures).
# Needs python3 with: gguf numpy tokenizers   (pip install gguf numpy tokenizers)
# Usage: tests/reference/make_fixtures.sh [--models-dir DIR] [--only tiny|smollm2]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "$here/make_fixtures.py" "$@"
