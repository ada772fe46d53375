#!/usr/bin/env python3
"""Writes the pruning-method fixtures in tests/data/reference/prune/ (issue 26).

For each of 3 needle-in-a-haystack prompts at 256, 512 and 1024 tokens, runs the float64
NumPy reference of prune_reference.py (SnapKV in Whittle's per-KV-head variant, FastKV,
GemFilter, CLAA, ASL, StreamingLLM, SlimInfer, Token Filtering, decode_topk) with Whittle's
defaults for SmolLM2-135M at keep 0.2, and writes one text file per case, `<prompt>_<n>.ref`,
holding the token ids and, per method, layer and KV head, the sorted original positions
that layer/head keeps (decode_topk: also the prompt positions each layer attends at each of
4 decode steps). The format is documented
in tests/reference/README.md ("Pruning reference").

It also measures how far the authors' per-query-head SnapKV is from the per-KV-head
variant Whittle documents and writes that to `snapkv_gqa.txt` next to the fixtures.

  python3 tests/reference/make_prune_fixtures.py [--models-dir models] [--out-dir DIR]
        [--only p0_256,...] [--methods snapkv,fastkv,...] [--append] [--no-check]
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import time
from pathlib import Path

# One BLAS thread: the same summation order on every run, so the printed gaps and margins
# are byte-identical between runs (set before numpy loads its BLAS).
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import prune_reference as pr  # noqa: E402
from reference_forward import build_tokenizer, forward  # noqa: E402

ROOT = HERE.parent.parent
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAGIC = "whittle-prune-reference 1"
LENGTHS = (256, 512, 1024)
KEEP = 0.2

# Whittle's defaults for SmolLM2-135M (30 layers) at keep 0.2 -- runtime/prune/methods/*.cpp,
# runtime/prune/registry.cpp -- but GemFilter's filter layer, 12 (0.4 of the depth: the default
# when the fixtures were made; 18 since 2026-12-05), the same selection code at another layer.
# Every value is passed explicitly and written into the fixture.
METHOD_PARAMS = {
    "snapkv": dict(keep=KEEP, window=32, pool_kernel=31, pool="max", per_query_head=False),
    "fastkv": dict(keep=KEEP, tsp_layer=15, window=8, pool_kernel=31, pool="max",
                   retain_rate=KEEP, tsp_rate=2 * KEEP),
    "gemfilter": dict(keep=KEEP, filter_layer=12, pool_kernel=5, by_window=False),
    "gemfilter_window": dict(keep=KEEP, filter_layer=12, pool_kernel=31, pool="max", window=32, by_window=True),
    "claa": dict(keep=KEEP, prune_layer=15, n_agg=4, min_layer=4, window=8, pool_kernel=31, pool="avg"),
    "asl": dict(keep=KEEP, tau=0.3, min_layer=10, obs_layers=8, window=32, pool_kernel=31, pool="avg",
                kv_topk=True),
    "streaming": dict(keep=KEEP, n_sink=4, window=8),
    "sliminfer": dict(keep=KEEP, block=64, unit=8, query=4, layer0=10, layer1=20, layer2=28, window=8,
                      abs_score=True),
    "tokenfilter": dict(target=0.5, start=0.5, anchor_decay=0.9, key_weight=0.5, warmup=16, window=8),
    "decode_topk": dict(keep=KEEP, block=16, steps=4),
    "decode_topk_bounds": dict(keep=KEEP, block=16, steps=4, bounds=True),
}
METHOD_FUNCS = {"snapkv": pr.snapkv, "fastkv": pr.fastkv, "gemfilter": pr.gemfilter,
                "gemfilter_window": pr.gemfilter,
                "claa": pr.claa, "asl": pr.asl, "streaming": pr.streaming, "sliminfer": pr.sliminfer,
                "tokenfilter": pr.tokenfilter, "decode_topk": pr.decode_topk,
                "decode_topk_bounds": pr.decode_topk}

# The filler texts (Debian's /usr/share/common-licenses), pinned so that a regeneration on
# another machine either reproduces the same ids or fails loudly.
LICENSES = {
    "GPL-3": "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986",
    "Apache-2.0": "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
    "MPL-2.0": "fab3dd6bdab226f1c08630b1dd917e11fcb4ec5e1e020e2c16f83a0a13863e85",
}
NEEDLE = " The special magic number is: {num}. Remember it."
# (prompt id, license, start character of the filler, needle depth in [0, 1], number)
PROMPTS = (
    ("p0", "GPL-3", 0, 0.25, "4718293"),
    ("p1", "Apache-2.0", 600, 0.5, "9051736"),
    ("p2", "MPL-2.0", 1500, 0.8, "2638417"),
)
HEAD = "<|im_start|>user\nRead the text and answer the question at the end.\n\n"
TAIL = ("\n\nWhat is the special magic number mentioned in the text above?<|im_end|>\n"
        "<|im_start|>assistant\nThe special magic number is:")


def _license_text(name: str) -> str:
    path = Path("/usr/share/common-licenses") / name
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != LICENSES[name]:
        raise SystemExit(f"{path}: sha256 {digest} differs from the pinned {LICENSES[name]}")
    return data.decode("utf-8")


def build_prompt(tok, spec, n_tokens: int):
    """Token ids: HEAD + filler (with the needle sentence at the given depth) + TAIL, the
    filler cut to make exactly n_tokens. Segments are tokenized separately and joined."""
    pid, lic, start, depth, num = spec
    text = " ".join(_license_text(lic)[start:].split())  # one line of words
    enc = lambda s: tok.encode(s).ids  # noqa: E731
    head, tail, needle = enc(HEAD), enc(TAIL), enc(NEEDLE.format(num=num))
    n_fill = n_tokens - len(head) - len(tail) - len(needle)
    filler = enc(text)
    if len(filler) < n_fill:
        raise SystemExit(f"{lic}: only {len(filler)} filler tokens, need {n_fill}")
    filler = filler[:n_fill]
    # the needle goes after the first sentence end ('.' token) at or after the depth
    cut = int(depth * n_fill)
    dot = tok.token_to_id(".")
    while cut < n_fill and filler[cut - 1] != dot:
        cut += 1
    if cut >= n_fill:
        cut = int(depth * n_fill)
    ids = head + filler[:cut] + needle + filler[cut:] + tail
    assert len(ids) == n_tokens
    needle_at = (len(head) + cut, len(head) + cut + len(needle) - 1)
    return ids, needle_at


# ----------------------------------------------------------------------------- format

def ranges(pos) -> str:
    """Sorted positions as space-separated runs: 'a' or 'a-b' (inclusive)."""
    pos = [int(p) for p in pos]
    out, i = [], 0
    while i < len(pos):
        j = i
        while j + 1 < len(pos) and pos[j + 1] == pos[j] + 1:
            j += 1
        out.append(str(pos[i]) if i == j else f"{pos[i]}-{pos[j]}")
        i = j + 1
    return " ".join(out)


def fmt_gap(g: float) -> str:
    return "inf" if math.isinf(g) else f"{g:.3e}"


def fmt_param(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):
        return repr(v)
    return str(v)


def method_block(res: pr.PruneResult) -> list[str]:
    lines = ["method " + res.method + " " + " ".join(f"{k}={fmt_param(v)}" for k, v in res.params.items())]
    if res.selected is None:
        lines.append("selected none")
    else:
        lines.append(f"selected {res.selection_layer} {len(res.selected)} {fmt_gap(res.selected_gap)} "
                     + ranges(res.selected))
    if "last_logits" in res.info:
        lg = res.info["last_logits"]
        o = np.argsort(-lg, kind="stable")
        lines.append(f"next {int(o[0])} {float(lg[o[0]] - lg[o[1]]):.6e}")
    if "ratios" in res.info:   # ASL: V_l / V_init at every evaluated layer
        lines.append("ratios " + " ".join(f"{l}:{r:.6e}" for l, r in sorted(res.info["ratios"].items())))
    if "stages" in res.info:   # SlimInfer: every stage that dropped blocks, rows after it, its gap
        lines.append("stages " + (" ".join(f"{l}:{n}:{fmt_gap(g)}" for l, n, g in res.info["stages"]) or "none"))
    if "skipped" in res.info:   # Token Filtering: rows whose attention was skipped, per tail layer
        sk = res.info["skipped"]
        lines.append(f"skipped {sum(sk.values())} " + " ".join(f"{l}:{n}" for l, n in sorted(sk.items())))
    # decode_topk: per decode step the token fed, the argmax after it and its margin, then
    # per layer the prompt positions its attention read and the block top-k's gap
    for i, (token, nxt, margin, layers) in enumerate(res.info.get("steps", [])):
        lines.append(f"step {i} {token} {nxt} {margin:.6e}")
        for il, (rows, gap) in enumerate(layers):
            lines.append(f"attend {il} {len(rows)} {fmt_gap(gap)} " + ranges(rows))
    prev = None
    for il, heads in enumerate(res.kv):
        for h, pos in enumerate(heads):
            body = ranges(pos)
            same = prev is not None and body == prev
            lines.append(f"kv {il} {h} {len(pos)} {fmt_gap(res.gap[il][h])} " + ("=" if same else body))
            prev = body
    lines.append("end")
    return lines


def read_blocks(path: Path, header: list[str]) -> dict:
    """An existing fixture's method blocks (name -> its lines, `method` to `end`), after
    checking that its header lines are `header` (same model, case, tokens, next token)."""
    old = path.read_text().split("\n")
    if old[-1] == "":
        old.pop()
    if old[:len(header)] != header:
        raise SystemExit(f"{path}: the header differs from this run's; regenerate without --append")
    blocks, cur = {}, None
    for line in old[len(header):]:
        if line.startswith("method "):
            cur = line.split(" ")[1]
            if cur not in METHOD_PARAMS or cur in blocks:
                raise SystemExit(f"{path}: unexpected block {cur!r}")
            blocks[cur] = []
        if cur is None:
            raise SystemExit(f"{path}: a line outside a method block: {line!r}")
        blocks[cur].append(line)
        if line == "end":
            cur = None
    return blocks


# ----------------------------------------------------------------------------- SnapKV GQA

def snapkv_gqa_stats(m, trace, params) -> dict:
    """For each (layer, KV head): the per-KV-head set A (Whittle) and the per-query-head
    sets B_g (authors) of its G query heads. Returns the mean/min over (layer, head) of
    |A ∩ ∪B_g| / |∪B_g| (coverage of the union), |∪B_g| / |A| (union size relative to
    the budget) and the mean over query heads of |A ∩ B_g| / |B_g| (overlap per head)."""
    p = dict(params)
    p["per_query_head"] = False
    a = pr.snapkv(m, trace, **p)
    p["per_query_head"] = True
    b = pr.snapkv(m, trace, **p)
    G = m.cfg.n_head // m.cfg.n_head_kv
    cov, size, ovl = [], [], []
    for il in range(m.cfg.n_layer):
        for h in range(m.cfg.n_head_kv):
            A = set(a.kv[il][h].tolist())
            Bs = [set(b.kv[il][h * G + g].tolist()) for g in range(G)]
            U = set().union(*Bs)
            cov.append(len(A & U) / len(U))
            size.append(len(U) / len(A))
            ovl.append(np.mean([len(A & B) / len(B) for B in Bs]))
    return dict(coverage_mean=float(np.mean(cov)), coverage_min=float(np.min(cov)),
                union_over_budget_mean=float(np.mean(size)), union_over_budget_max=float(np.max(size)),
                per_qhead_overlap_mean=float(np.mean(ovl)), per_qhead_overlap_min=float(np.min(ovl)))


# ----------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", default=str(ROOT / "models"))
    ap.add_argument("--out-dir", default=str(ROOT / "tests/data/reference/prune"))
    ap.add_argument("--only", help="comma-separated cases, e.g. p0_256,p2_1024")
    ap.add_argument("--methods", default=",".join(METHOD_PARAMS), help="comma-separated methods")
    ap.add_argument("--append", action="store_true",
                    help="add/replace only the named methods' blocks in the existing files (whose header must be "
                         "what this run computes), keeping the other blocks byte for byte")
    ap.add_argument("--no-check", action="store_true", help="skip the layer-step vs forward() check")
    ap.add_argument("--no-gqa-stats", action="store_true", help="skip the SnapKV per-query-head comparison")
    args = ap.parse_args(argv)

    t0 = time.time()
    model_path = Path(args.models_dir) / MODEL_FILE
    if not model_path.exists():
        print(f"SKIPPED: {model_path} not present")
        return 0
    m = pr.load_model(model_path)
    tok = build_tokenizer(m)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    methods = [s for s in args.methods.split(",") if s]
    only = set(args.only.split(",")) if args.only else None
    c = m.cfg
    print(f"model {MODEL_FILE}: {c.n_layer} layers, {c.n_head}/{c.n_head_kv} heads, head_dim {c.head_dim_k}"
          f" (load {time.time() - t0:.1f} s)")

    gqa_lines = ["# SnapKV: the authors' per-query-head selection vs Whittle's per-KV-head selection",
                 "# (params " + " ".join(f"{k}={fmt_param(v)}" for k, v in METHOD_PARAMS["snapkv"].items()
                                         if k != "per_query_head") + ")",
                 "# per (layer, KV head): A = per-KV-head set, B_g = the G query heads' sets, U = union of B_g",
                 "# coverage = |A & U| / |U|; union/budget = |U| / |A|; overlap = mean_g |A & B_g| / |B_g|",
                 "case coverage_mean coverage_min union_over_budget_mean union_over_budget_max "
                 "overlap_mean overlap_min"]
    for spec in PROMPTS:
        for n in LENGTHS:
            case = f"{spec[0]}_{n}"
            if only and case not in only:
                continue
            t1 = time.time()
            ids, needle = build_prompt(tok, spec, n)
            trace = pr.full_trace(m, ids)
            if not args.no_check:
                # the per-layer step must be reference_forward.forward, exactly
                ref = forward(m, ids, rows=[n - 1])[0]
                mine = pr.logits_of(m, trace.hidden[-1][-1:])[0]
                err = float(np.max(np.abs(ref - mine)))
                if err > 1e-9:
                    raise SystemExit(f"{case}: layer step differs from forward() by {err}")
            full_logits = pr.logits_of(m, trace.hidden[-1][-1:])[0]
            fo = np.argsort(-full_logits, kind="stable")
            lines = [MAGIC, f"model {MODEL_FILE}",
                     f"n_layer {c.n_layer} n_head {c.n_head} n_head_kv {c.n_head_kv}",
                     f"case {case}", f"n_tokens {n}", f"needle {needle[0]} {needle[1]}",
                     "tokens " + " ".join(str(t) for t in ids),
                     f"next {int(fo[0])} {float(full_logits[fo[0]] - full_logits[fo[1]]):.6e}"]
            summary = []
            blocks = {}
            for name in methods:
                res = METHOD_FUNCS[name](m, trace, **METHOD_PARAMS[name])
                blocks[name] = method_block(res)
                kept = sum(np.isin(np.arange(needle[0], needle[1] + 1), res.kv[-1][0]))
                summary.append(f"{name}: sel@{res.selection_layer} needle {kept}/{needle[1] - needle[0] + 1}")
            if args.append:
                for name, blk in read_blocks(out / f"{case}.ref", lines).items():
                    blocks.setdefault(name, blk)
            for name in METHOD_PARAMS:   # the documented block order
                lines += blocks.get(name, [])
            (out / f"{case}.ref").write_text("\n".join(lines) + "\n")
            if not args.no_gqa_stats and "snapkv" in methods:
                st = snapkv_gqa_stats(m, trace, METHOD_PARAMS["snapkv"])
                gqa_lines.append(f"{case} {st['coverage_mean']:.4f} {st['coverage_min']:.4f} "
                                 f"{st['union_over_budget_mean']:.4f} {st['union_over_budget_max']:.4f} "
                                 f"{st['per_qhead_overlap_mean']:.4f} {st['per_qhead_overlap_min']:.4f}")
            print(f"{case}: {time.time() - t1:.1f} s; " + "; ".join(summary), flush=True)
    if not args.no_gqa_stats and "snapkv" in methods and not only:
        (out / "snapkv_gqa.txt").write_text("\n".join(gqa_lines) + "\n")
    print(f"total {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
