#!/usr/bin/env python3
"""Test oracle for whittle-bench --resume, with Python's json module (apart from the C++
reader and writer).

    check_bench_resume.py truncate SOURCE.json OUT.json L   # drop every record of length L,
                                                            # as if the run stopped before it
    check_bench_resume.py check SOURCE.json RESUMED.json L  # RESUMED = --resume OUT.json
    check_bench_resume.py drop SOURCE.json OUT.json METHOD  # drop METHOD's runs and summaries,
                                                            # as if the run had not listed it
    check_bench_resume.py added SOURCE.json RESUMED.json METHOD  # RESUMED = --resume OUT.json
    check_bench_resume.py summarized CUT.json SUMMARY.json L  # SUMMARY = --resume CUT.json --summarize:
                                                            # CUT's records as they were, nothing of L
    check_bench_resume.py corrupt SOURCE.json OUTDIR       # OUTDIR/bad_kept_rows.json: the first
                                                           # run's kept_rows one entry long;
                                                           # OUTDIR/bad_n_decode.json: its n_decode 1e12

Invariants: the runs kept from the earlier file come back unchanged; the runs of length L,
run again, give the same answers, kept rows and fidelity as the source run (the engine is
deterministic at one thread); the summaries of the kept lengths equal the source's (they
are recomputed from records); the meta says where it resumed from. With a method added to
a finished run ("added"): the other methods' task runs come back unchanged, except the
oracle's (run again for the new method's Spearman), every run's answers, kept rows and
fidelity equal the source's (full KV runs the fidelity prompts again), and so do the
summaries' figures that do not depend on time. Exit 0 with "ok", or 1 with each problem on
a line.
"""
import json
import math
import sys

DETERMINISTIC_RUN = ["output", "correct", "kept_rows", "kv_bytes", "selection_layer", "triggered",
                     "top1_agree", "kl_mean", "nll_delta", "spearman_selection", "spearman_layers"]
SUMMARY_EXACT = ["n_runs", "kv_mib", "kept_rows_per_layer", "accuracy", "top1_agree", "kl_mean", "nll_delta",
                 "spearman_selection", "spearman_layers"]
SUMMARY = ["n_runs", "ttft_ms", "ttft_ratio", "tpot_ms", "tpot_ratio", "e2e128_ratio", "kv_mib",
           "kept_rows_per_layer", "accuracy", "top1_agree", "kl_mean", "nll_delta", "spearman_selection",
           "spearman_layers"]


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    return a == b


def key(r):
    return (r["kind"], r["L"], r.get("prompt_seed"), r["method"], json.dumps(r["params"], sort_keys=True))


def report(problems, ok):
    """Each problem on a line (the first 40) and 1, or the ok line and 0."""
    for p in problems[:40]:
        print(p)
    if problems:
        return 1
    print(f"ok: {ok}")
    return 0


def index_records(doc, problems):
    """The run and summary records of doc by key; a key seen twice is a problem."""
    out = {}
    for r in doc["records"]:
        if r["kind"] in ("run", "summary"):
            if key(r) in out:
                problems.append(f"duplicate record {key(r)}")
            out[key(r)] = r
    return out


def check_added(src, res, method):
    problems = []
    got = index_records(res, problems)
    want = {key(r): r for r in src["records"] if r["kind"] in ("run", "summary")}
    if want.keys() != got.keys():
        problems.append(f"records differ: {sorted(want.keys() ^ got.keys())[:5]}")
    kept = rerun = 0
    for k, s in want.items():
        r = got.get(k)
        if r is None:
            continue
        fields = DETERMINISTIC_RUN if s["kind"] == "run" else SUMMARY_EXACT
        for f in fields:
            if not close(r[f], s[f]):
                problems.append(f"{k}: {f} {r[f]!r} != {s[f]!r}")
        if s["kind"] != "run":
            continue
        must_keep = s["method"] not in (method, "oracle") and not s["task"].startswith("fidelity")
        if must_keep and r != s:
            problems.append(f"a run of a method that ran before was run again: {k}")
        if s["method"] == method and r["ttft_ms"] == s["ttft_ms"]:
            problems.append(f"the added method's run has the source's time, as if copied: {k}")
        kept += r == s
        rerun += r != s
    if res["meta"].get("complete") is not True:
        problems.append("resumed meta.complete is not true")
    return report(problems, f"{kept} runs kept, {rerun} run again ({method} and what it is compared with)")


def main():
    mode, src_path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
    length = int(sys.argv[4]) if len(sys.argv) > 4 and mode not in ("drop", "added") else None
    with open(src_path) as f:
        src = json.load(f)
    if mode == "corrupt":
        # Records --resume must refuse (naming the field), not read past or allocate from.
        for name, field, bad in (("bad_kept_rows", "kept_rows", lambda r: r["kept_rows"][:1]),
                                 ("bad_n_decode", "n_decode", lambda r: 1e12)):
            doc = json.loads(json.dumps(src))
            first = next(r for r in doc["records"] if r["kind"] == "run")
            first[field] = bad(first)
            with open(f"{out_path}/{name}.json", "w") as f:
                json.dump(doc, f)
        print(f"ok: {out_path}/bad_kept_rows.json, {out_path}/bad_n_decode.json")
        return 0
    if mode == "drop":
        src["records"] = [r for r in src["records"] if r.get("method") != sys.argv[4]]
        with open(out_path, "w") as f:
            json.dump(src, f)
        print(f"ok: {len(src['records'])} records kept")
        return 0
    if mode == "truncate":
        src["meta"]["complete"] = False
        src["records"] = [r for r in src["records"] if r.get("L") != length]
        with open(out_path, "w") as f:
            json.dump(src, f)
        print(f"ok: {len(src['records'])} records kept")
        return 0

    with open(out_path) as f:
        res = json.load(f)
    problems = []
    if mode == "summarized":
        # Nothing was run: the runs are the cut file's, the summaries recomputed from them equal
        # its summaries, length L (not in the cut file) is absent, and the run says it is not
        # complete.
        if res["meta"].get("complete") is not False:
            problems.append("a --summarize run with a length left out says meta.complete is not false")
        want = {key(r): r for r in src["records"] if r["kind"] in ("run", "summary")}
        got = {key(r): r for r in res["records"] if r["kind"] in ("run", "summary")}
        if want.keys() != got.keys():
            problems.append(f"records differ: {sorted(want.keys() ^ got.keys())[:5]}")
        for k, r in got.items():
            if r.get("L") == length:
                problems.append(f"a record of length {length}, which --summarize must not run: {k}")
            elif k in want and r["kind"] == "run" and r != want[k]:
                problems.append(f"run changed: {k}")
            elif k in want and r["kind"] == "summary":
                for f in SUMMARY:
                    if not close(r[f], want[k][f]):
                        problems.append(f"summary {k}: {f} {r[f]!r} != {want[k][f]!r}")
        return report(problems, f"{len(got)} records, none run")
    if mode == "added":
        return check_added(src, res, sys.argv[4])
    meta = res["meta"]
    if meta.get("complete") is not True:
        problems.append("resumed meta.complete is not true")
    if meta.get("resumed_from", {}).get("complete") is not False:
        problems.append("meta.resumed_from.complete is not false")
    by_key = index_records(res, problems)
    n_checked = 0
    for s in src["records"]:
        if s["kind"] not in ("run", "summary"):
            continue
        r = by_key.get(key(s))
        if r is None:
            problems.append(f"missing {key(s)}")
            continue
        n_checked += 1
        if s["kind"] == "run" and s["L"] != length:
            if r != s:
                problems.append(f"kept run changed: {key(s)}")
        elif s["kind"] == "run":
            for k in DETERMINISTIC_RUN:
                if not close(r[k], s[k]):
                    problems.append(f"rerun {key(s)}: {k} {r[k]!r} != {s[k]!r}")
        elif s["L"] != length:
            for k in SUMMARY:
                if not close(r[k], s[k]):
                    problems.append(f"summary {key(s)}: {k} {r[k]!r} != {s[k]!r}")
    if len(by_key) != n_checked:
        problems.append(f"{len(by_key) - n_checked} records in the resumed file that the source lacks")
    return report(problems, f"{n_checked} records checked")


if __name__ == "__main__":
    sys.exit(main())
