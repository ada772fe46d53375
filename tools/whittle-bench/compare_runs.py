#!/usr/bin/env python3
"""Pools whittle-bench suite runs (--json files, e.g. several seeds) into one markdown table
per configuration (method + parameters + KV type): retrieval accuracy over every prompt, greedy top-1
agreement with full KV, the TTFT ratio to full KV and accuracy points lost per 10% of TTFT
saved; full KV beside every method. docs/results/fidelity-*.md are made with it.

  python3 tools/whittle-bench/compare_runs.py RUN.json [RUN.json ...]
"""
import json
import statistics
import sys
from collections import defaultdict


def kv_type(rec):
    # Records name their KV type since 2026-12-02 (f16 the default); earlier ones were f32.
    return rec.get("params", {}).get("kv_type", "f32")


def config_name(rec):
    params = " ".join(f"{k}={v}" for k, v in sorted(rec.get("params", {}).items()) if k != "kv_type")
    return rec["method"] + (" " + params if params else "") + " kv=" + kv_type(rec)


def main(paths):
    runs = defaultdict(lambda: {"correct": 0, "tasks": 0, "agree": 0, "agree_n": 0})
    ratios = defaultdict(list)
    seeds, lengths = set(), set()
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
            seeds.add(doc["meta"]["seed"])
            records = doc["records"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: {path}: not a whittle-bench --json file ({type(e).__name__}: {e})", file=sys.stderr)
            return 2
        for rec in records:
            if rec["kind"] == "run":
                r = runs[config_name(rec)]
                lengths.add(rec["L"])
                if rec["task"].startswith("fidelity"):
                    if rec.get("top1_agree") is not None:  # of n_agree teacher-forced tokens
                        r["agree"] += rec["top1_agree"]
                        r["agree_n"] += rec["n_agree"]
                elif rec.get("correct") is not None:
                    r["correct"] += int(rec["correct"])
                    r["tasks"] += 1
            elif rec["kind"] == "summary" and rec.get("ttft_ratio") is not None:
                ratios[config_name(rec)].append(rec["ttft_ratio"])
    print(f"seeds {sorted(seeds)}, lengths {sorted(lengths)}\n")
    print("| configuration | retrieval correct | accuracy | greedy top-1 agreement with full KV "
          "| TTFT ratio (median) | points lost per 10% TTFT saved |")
    print("|---|---|---|---|---|---|")
    for name, r in runs.items():
        # Against full KV in the same KV type (a file of several types has one full per type).
        full_name = "full kv=" + name.rsplit(" kv=", 1)[1]
        full = runs.get(full_name)
        full_acc = full["correct"] / full["tasks"] if full and full["tasks"] else None
        acc = r["correct"] / r["tasks"] if r["tasks"] else float("nan")
        agree = f"{r['agree']}/{r['agree_n']} ({100 * r['agree'] / r['agree_n']:.0f}%)" if r["agree_n"] else "-"
        ratio = statistics.median(ratios[name]) if ratios[name] else float("nan")
        lost = "-"
        if full_acc is not None and name != full_name and ratio < 1:
            lost = f"{100 * (full_acc - acc) / ((1 - ratio) * 10):.1f}"
        print(f"| {name} | {r['correct']}/{r['tasks']} | {100 * acc:.0f}% | {agree} | {ratio:.2f} | {lost} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
