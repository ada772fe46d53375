#!/usr/bin/env python3
"""Test oracle for whittle-bench's record files, written apart from the C++ writer: it reads
them with Python's own json and csv modules and checks them against the record schema.

    python3 tests/tools/check_bench_output.py --json F.json --jsonl F.jsonl --csv F.csv
        [--expect-methods full,snapkv] [--expect-lengths 256,384] [--expect-tasks passkey,niah_single [--only-expected-tasks]]
        [--expect-refused-budget 1]

Checks: each file parses (strict JSON: no NaN/Infinity, no duplicate keys); the JSON
document's records equal the JSONL lines, in order; the CSV has one row per record whose
cells equal the record's values; every record fits its kind's schema; per-layer arrays
have one length per model; the baseline full KV's ratios are 1; Spearman values lie in [-1, 1]; every
expected (L, method) has a summary whose accuracy counts each expected task; a summary's
counts agree with its run records; a speed record has its measurements exactly when its
context fits, else the refusal; a suite's refused record (a method whose context does not fit
at a length) has the refusal and no run or summary beside it (with --expect-refused-budget,
exactly that budget's contexts do not fit).
Prints "ok: N records (K summaries)" and exits 0, or prints each problem on its own line
and exits 1.
"""
import argparse
import csv
import json
import math
import subprocess
import sys

REL_TOL = 1e-6
MAX_CELLS = 30  # CSV cell mismatches printed before the rest are only counted
TASKS = {"passkey", "niah_single", "niah_multikey", "kv_retrieval", "variable_tracking",
         "fidelity_agree", "fidelity_kl"}

# Type names: str, int, num (int or float), bool, params (object str -> str), stat
# ({"mean","std","median"}), accuracy (task -> {"correct","total"}), [int], [num];
# a trailing "?" also admits null, and "[num?]" is an array whose items may be null.
COMMON = {"kind": "str", "model": "str", "backend": "str", "device": "str", "commit": "str",
          "whittle_version": "str", "threads": "int", "suite": "str", "seed": "int"}
SCHEMA = {
    "machine": {"bandwidth_gbs": "num", "fp32_gflops": "num", "int8_gops": "num?"},
    "run": {"L": "int", "method": "str", "params": "params", "task": "str", "depth": "num?",
            "prompt_seed": "int", "answer": "str?", "output": "str", "correct": "bool?",
            "ttft_ms": "num", "tpot_ms": "num?", "n_decode": "int", "kv_bytes": "int",
            "kept_rows": "[int]", "selection_layer": "int", "triggered": "bool",
            "spearman_selection": "num?", "spearman_layers": "[num?]", "top1_agree": "int?",
            "n_agree": "int", "kl_mean": "num?", "nll_delta": "num?"},
    "summary": {"L": "int", "method": "str", "params": "params", "n_runs": "int",
                **{k: "num?" for k in ("ttft_ms", "ttft_ratio", "tpot_ms", "tpot_ratio",
                                       "e2e16_ms", "e2e128_ms", "e2e16_ratio", "e2e128_ratio",
                                       "prefill_tps", "decode_tps", "decode_roofline_fraction",
                                       "prefill_roofline_fraction")},
                "kv_mib": "num", "kv_bytes_per_layer": "[int]", "kept_rows_per_layer": "[num]",
                "arena_bytes": "int", "host_rss_peak_bytes": "int", "device_peak_bytes": "int?",
                "pinned_peak_bytes": "int?", "accuracy": "accuracy", "accuracy_all": "num?",
                "top1_agree": "num?", "n_agree": "int", "kl_mean": "num?", "nll_delta": "num?",
                "spearman_selection": "num?", "spearman_layers": "[num?]"},
    # A method whose context does not fit has fits false, the refusal, and null measurements.
    "speed": {"L": "int", "n_gen": "int", "method": "str", "params": "params", "reps": "int",
              "fits": "bool", "refusal": "str?", "ttft_ms": "stat?", "tpot_ms": "stat?", "e2e_ms": "stat?",
              **{k: "num?" for k in ("prefill_tps", "decode_tps", "ttft_ratio", "tpot_ratio",
                                     "e2e_ratio", "decode_roofline_fraction",
                                     "prefill_roofline_fraction")},
              **{k: "int?" for k in ("arena_bytes", "rows_at_once", "host_rss_peak_bytes",
                                     "device_peak_bytes", "pinned_peak_bytes", "kv_bytes",
                                     "planned_bytes")}},
    # A suite's method whose context does not fit at length L: no runs, no summary.
    "refused": {"L": "int", "method": "str", "params": "params", "refusal": "str"},
}
# A speed record that fits has each of these; one that does not has every field past
# "refusal" null.
MEASURED = ("ttft_ms", "e2e_ms", "prefill_tps", "arena_bytes", "rows_at_once", "host_rss_peak_bytes",
            "kv_bytes", "planned_bytes")
SPEED_IDENTITY = ("L", "n_gen", "method", "params", "reps", "fits", "refusal")
PER_LAYER = ("kept_rows", "spearman_layers", "kv_bytes_per_layer", "kept_rows_per_layer")
RATIOS = ("ttft_ratio", "tpot_ratio", "e2e16_ratio", "e2e128_ratio", "e2e_ratio")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)  # bool is an int subclass in Python


def is_num(v):
    return (is_int(v) or isinstance(v, float)) and math.isfinite(v)


def type_ok(v, t):
    if t.endswith("?") and not t.startswith("["):
        return v is None or type_ok(v, t[:-1])
    if t.startswith("["):
        return isinstance(v, list) and all(type_ok(x, t[1:-1]) for x in v)
    if t == "str":
        return isinstance(v, str)
    if t == "int":
        return is_int(v)
    if t == "num":
        return is_num(v)
    if t == "bool":
        return isinstance(v, bool)
    if t == "params":
        return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
    if t == "stat":
        return isinstance(v, dict) and all(is_num(v.get(k)) for k in ("mean", "std", "median"))
    if t == "accuracy":
        return isinstance(v, dict) and all(
            isinstance(a, dict) and is_int(a.get("correct")) and is_int(a.get("total"))
            and 0 <= a["correct"] <= a["total"] for a in v.values())
    raise ValueError(t)


def strict_pairs(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError(f"duplicate keys {sorted(dup)}")
    return dict(pairs)


def reject_constant(name):
    raise ValueError(f"{name} is not JSON")  # Python's json would accept NaN/Infinity otherwise


def loads(text):
    return json.loads(text, object_pairs_hook=strict_pairs, parse_constant=reject_constant)


def same(a, b):
    """Equal, numbers within REL_TOL (the CSV writer may print fewer digits)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or (type(a) is type(b) and a == b)
    if is_num(a) and is_num(b):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def cell_matches(cell, value):
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if is_num(value):
        try:
            return math.isclose(float(cell), value, rel_tol=REL_TOL, abs_tol=1e-12)
        except ValueError:
            return False
    if isinstance(value, (list, dict)):
        try:
            return same(loads(cell), value)
        except ValueError:
            return False
    return cell == value


def name(i, r):
    if not isinstance(r, dict):
        return f"record {i}"
    what = " ".join(f"{k}={r[k]}" for k in ("kind", "L", "method", "task") if k in r)
    return f"record {i} ({what})"


def series(r):
    return (r.get("model"), r.get("backend"), r.get("device"), r.get("suite"), r.get("L"),
            r.get("method"), json.dumps(r.get("params"), sort_keys=True))


def check(args, problems):
    """Appends what is wrong to problems; returns the records."""
    bad = problems.append
    try:
        with open(args.json, encoding="utf-8") as f:
            doc = loads(f.read())
    except (OSError, ValueError) as e:
        return bad(f"{args.json}: {e}")
    if not (isinstance(doc, dict) and isinstance(doc.get("meta"), dict)
            and isinstance(doc.get("records"), list)):
        return bad(f"{args.json}: not an object with a 'meta' object and a 'records' array")
    records = []
    try:
        with open(args.jsonl, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, ValueError) as e:  # ValueError: not UTF-8
        return bad(f"{args.jsonl}: {e}")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    for n, line in enumerate(lines, 1):
        try:
            records.append(loads(line))
        except ValueError as e:
            bad(f"{args.jsonl}:{n}: {e}")
    if not problems and not records:
        bad(f"{args.jsonl}: no records")
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            bad(f"{args.jsonl}:{i + 1}: not a JSON object")
    if problems:
        return

    # Round trip and JSON document == JSON lines.
    for i, r in enumerate(records):
        if json.loads(json.dumps(r)) != r:
            bad(f"{name(i, r)}: changes on a JSON round trip")
    if doc["records"] != records:
        if len(doc["records"]) != len(records):
            bad(f"{args.json} has {len(doc['records'])} records, {args.jsonl} {len(records)}")
        for i, (a, b) in enumerate(zip(doc["records"], records)):
            if a != b:
                keys = sorted(k for k in set(a) | set(b) if a.get(k, KeyError) != b.get(k, KeyError)) \
                    if isinstance(a, dict) else "everything"
                bad(f"{name(i, b)}: differs between {args.json} and {args.jsonl} in {keys}")

    # CSV: one row per record, header = the union of the records' keys.
    try:
        with open(args.csv, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f, strict=True))
    except (OSError, ValueError, csv.Error) as e:
        return bad(f"{args.csv}: {e}")
    if not rows:
        return bad(f"{args.csv}: empty")
    header, rows = rows[0], rows[1:]
    keys = {k for r in records for k in r}
    if len(set(header)) != len(header):
        bad(f"{args.csv}: repeated columns in the header")
    if set(header) != keys:
        bad(f"{args.csv}: header lacks {sorted(keys - set(header))}, has extra {sorted(set(header) - keys)}")
    if len(rows) != len(records):
        bad(f"{args.csv}: {len(rows)} rows for {len(records)} records")  # cells would be misaligned
    else:
        cells = []
        for i, (row, r) in enumerate(zip(rows, records)):
            if len(row) != len(header):
                cells.append(f"{args.csv} row {i + 1} (record {i}): {len(row)} cells for {len(header)} columns")
                continue
            for col, cell in zip(header, row):
                if not cell_matches(cell, r.get(col)):
                    cells.append(f"{args.csv} row {i + 1} (record {i}) column {col}: {cell!r} != {json.dumps(r.get(col))}")
        problems += cells[:MAX_CELLS]  # one systematic fault breaks every row: the first few say it
        if len(cells) > MAX_CELLS:
            bad(f"{args.csv}: ... and {len(cells) - MAX_CELLS} more cells differ")

    check_schema(args, records, bad)
    return records


def check_schema(args, records, bad):
    layers = {}  # model -> (length of its per-layer arrays, the record that set it)
    runs = {}    # series -> its run records, to recount each summary
    baselines = {}  # kind -> the params of its first full KV record
    n_refused = 0   # speed and refused records with --expect-refused-budget's budget
    refused = {}    # series -> the index of its refused record
    for i, r in enumerate(records):
        if not isinstance(r, dict) or r.get("kind") not in SCHEMA:
            bad(f"{name(i, r)}: unknown kind {r.get('kind') if isinstance(r, dict) else r!r}")
            continue
        ok = True
        for key, t in {**COMMON, **SCHEMA[r["kind"]]}.items():
            if key not in r:
                bad(f"{name(i, r)}: no '{key}'")
                ok = False
            elif not type_ok(r[key], t):
                bad(f"{name(i, r)}: '{key}' = {json.dumps(r[key])} is not {t}")
                ok = False
        if not ok:
            continue  # the checks below rely on the types
        for key in PER_LAYER:
            if key in r:
                n, first = layers.setdefault(r["model"], (len(r[key]), i))
                if len(r[key]) != n:
                    bad(f"{name(i, r)}: '{key}' has {len(r[key])} layers, record {first} has {n}")
        for key in ("spearman_selection", "spearman_layers"):
            for v in (r[key] if isinstance(r.get(key), list) else [r.get(key)]):
                if v is not None and not -1 - 1e-9 <= v <= 1 + 1e-9:
                    bad(f"{name(i, r)}: '{key}' value {v} outside [-1, 1]")
        # The baseline is the first full KV record of its kind; full KV in a variant (another
        # KV type, a memory budget) is measured against it like any method.
        baseline = baselines.setdefault(r["kind"], r["params"]) if r.get("method") == "full" else None
        if r.get("method") == "full" and r["params"] == baseline:
            for key in RATIOS:
                if r.get(key) is not None and abs(r[key] - 1.0) > 1e-9:
                    bad(f"{name(i, r)}: full KV's '{key}' is {r[key]}, not 1")
        if r["kind"] == "run":
            runs.setdefault(series(r), []).append(r)
            if r["task"] not in TASKS:
                bad(f"{name(i, r)}: unknown task {r['task']!r}")
            elif args.only_expected_tasks and r["task"] not in args.expect_tasks:
                bad(f"{name(i, r)}: task {r['task']!r} is not one of --expect-tasks")
            if r["answer"] is not None and not isinstance(r["correct"], bool):
                bad(f"{name(i, r)}: has an answer but 'correct' is {json.dumps(r['correct'])}")
            if r["depth"] is not None and not 0 <= r["depth"] <= 1:
                bad(f"{name(i, r)}: depth {r['depth']} outside [0, 1]")
        if r["kind"] == "speed":
            fits = r["fits"]
            if fits == (r["refusal"] is not None) or (not fits and not r["refusal"]):
                bad(f"{name(i, r)}: fits is {json.dumps(fits)} but refusal is {json.dumps(r['refusal'])}")
            for key in MEASURED if fits else [k for k in SCHEMA["speed"] if k not in SPEED_IDENTITY]:
                if (r[key] is None) == fits:
                    bad(f"{name(i, r)}: '{key}' is {json.dumps(r[key])} in a record whose context "
                        f"{'fits' if fits else 'does not fit'}")
            if fits != (r["reps"] > 0):
                bad(f"{name(i, r)}: {r['reps']} reps of a context that {'fits' if fits else 'does not fit'}")
            refused_here = r["params"].get("memory_budget_mib") == args.expect_refused_budget
            n_refused += refused_here
            if args.expect_refused_budget is not None and fits == refused_here:
                bad(f"{name(i, r)}: fits is {json.dumps(fits)}; --expect-refused-budget {args.expect_refused_budget}")
        if r["kind"] == "refused":
            refused[series(r)] = i
            if not r["refusal"]:
                bad(f"{name(i, r)}: an empty refusal")
        if r["kind"] in ("refused", "summary") and args.expect_refused_budget is not None:
            refused_here = r["params"].get("memory_budget_mib") == args.expect_refused_budget
            n_refused += refused_here and r["kind"] == "refused"
            if refused_here != (r["kind"] == "refused"):
                bad(f"{name(i, r)}: a {r['kind']} record; --expect-refused-budget {args.expect_refused_budget}")
        if r["kind"] == "summary":
            if r["accuracy_all"] is not None and not 0 <= r["accuracy_all"] <= 1:
                bad(f"{name(i, r)}: accuracy_all {r['accuracy_all']} outside [0, 1]")
            for task in args.expect_tasks:
                if r["accuracy"].get(task, {}).get("total", 0) <= 0:
                    bad(f"{name(i, r)}: no '{task}' prompts counted in 'accuracy'")

    if args.expect_refused_budget is not None and n_refused == 0:
        bad(f"no speed or refused record has the budget of --expect-refused-budget {args.expect_refused_budget}")
    for i, r in enumerate(records):
        if isinstance(r, dict) and r.get("kind") in ("run", "summary") and series(r) in refused:
            bad(f"{name(i, r)}: measured, but record {refused[series(r)]} says its context does not fit")

    # A summary must agree with the run records it sums up (where the file holds them).
    summaries = [r for r in records if r.get("kind") == "summary"]
    for r in summaries:
        mine = runs.get(series(r), [])
        if not mine or not type_ok(r.get("accuracy"), "accuracy"):
            continue
        where = f"summary L={r.get('L')} method={r.get('method')}"
        if r.get("n_runs") != len(mine):
            bad(f"{where}: n_runs {r.get('n_runs')}, but {len(mine)} run records")
        for task, a in r["accuracy"].items():
            graded = [x for x in mine if x["task"] == task and isinstance(x["correct"], bool)]
            right = sum(x["correct"] for x in graded)
            if graded and (a.get("total"), a.get("correct")) != (len(graded), right):
                bad(f"{where}: accuracy[{task}] {a.get('correct')}/{a.get('total')}, "
                    f"run records say {right}/{len(graded)}")

    # Every expected (L, method) pair has a summary; with only one list given, every
    # expected L (or method) has at least one.
    have = {(r.get("L"), r.get("method")) for r in summaries}
    if args.expect_lengths and args.expect_methods:
        for L in args.expect_lengths:
            for m in args.expect_methods:
                if (L, m) not in have:
                    bad(f"no summary for L={L} method={m}")
    for L in args.expect_lengths if not args.expect_methods else []:
        if L not in {h[0] for h in have}:
            bad(f"no summary for L={L}")
    for m in args.expect_methods if not args.expect_lengths else []:
        if m not in {h[1] for h in have}:
            bad(f"no summary for method={m}")


def listed_methods(tool):
    """The method names of the first table TOOL --list-methods prints (| name | summary |)."""
    text = subprocess.run([tool, "--list-methods"], check=True, capture_output=True, text=True).stdout
    names = []
    for line in text.splitlines():
        if not line.startswith("|"):
            if names:
                break
            continue
        cell = line.split("|")[1].strip()
        if cell not in ("method", "") and not cell.startswith("-"):
            names.append(cell)
    if not names:
        raise SystemExit(f"{tool} --list-methods listed no method")
    return names


def split(text):
    return [x for x in (text or "").split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--jsonl", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--expect-methods", type=split, default=[])
    ap.add_argument("--methods-of", metavar="TOOL",
                    help="expect every method TOOL --list-methods prints (the library's own list)")
    ap.add_argument("--expect-lengths", type=lambda t: [int(x) for x in split(t)], default=[])
    ap.add_argument("--expect-tasks", type=split, default=[])
    ap.add_argument("--expect-refused-budget", default=None, metavar="MIB",
                    help="speed records: the contexts with this memory budget do not fit, every other one does")
    ap.add_argument("--only-expected-tasks", action="store_true",
                    help="every run record's task is one of --expect-tasks (whittle-bench --task)")
    args = ap.parse_args()
    if args.methods_of:
        args.expect_methods += listed_methods(args.methods_of)
    problems = []
    records = check(args, problems)
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok: {len(records)} records ({sum(r['kind'] == 'summary' for r in records)} summaries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
