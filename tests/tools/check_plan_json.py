#!/usr/bin/env python3
"""Test oracle for whittle-plan --json with a model name that is not UTF-8.

    check_plan_json.py WHITTLE_PLAN TINY.gguf OUTDIR

Copies TINY.gguf (general.name "tiny-llama") with the name's bytes replaced by
b"tiny\\xff\\xfellam" (raw bytes GGUF allows, no UTF-8), plans it with --json, and reads the
file with Python's strict UTF-8 decoder and json module: the invalid bytes must come out as
U+FFFD, as whittle-bench writes them. Exit 0 with "ok", else 1 with the problem.
"""
import json
import subprocess
import sys


def main():
    plan, tiny, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(tiny, "rb") as f:
        data = f.read()
    if data.count(b"tiny-llama") != 1:
        print("FAIL: the tiny model's name 'tiny-llama' is not in the file once")
        return 1
    model = f"{outdir}/name_ff.gguf"
    with open(model, "wb") as f:
        f.write(data.replace(b"tiny-llama", b"tiny\xff\xfellam"))
    out = f"{outdir}/name_ff.plan.json"
    p = subprocess.run([plan, "--board", "agx-orin-32gb", "--model", model, "--ctx", "1024", "--json", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        print(f"FAIL: whittle-plan exit status {p.returncode}: {p.stderr.decode('utf-8', 'replace')}")
        return 1
    try:
        with open(out, encoding="utf-8", errors="strict") as f:
            doc = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        print(f"FAIL: {out} is not valid UTF-8 JSON: {e}")
        return 1
    if doc.get("model") != "tiny\ufffd\ufffdllam":
        print(f"FAIL: model is {doc.get('model')!r}, expected 'tiny\\ufffd\\ufffdllam'")
        return 1
    for key in ("board", "components", "kv_rows", "total_bytes", "fits", "solve", "notes"):
        if key not in doc:
            print(f"FAIL: no '{key}' in {out}")
            return 1
    print(f"ok: {out} is valid JSON, model {doc['model']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
