#!/usr/bin/env python3
"""Plots whittle-bench records (--jsonl FILE or --json FILE) as PNGs.

    python3 tools/whittle-bench/plot.py RECORDS DIR

Writes into DIR (created if missing), from the "summary" records:
  accuracy_vs_ttft.png    accuracy over all tasks vs TTFT relative to full KV, one point per L
  kept_per_layer.png      kept rows / L per layer, one subplot per L (the 4 largest)
  spearman_per_layer.png  Spearman of each layer's ranking with the oracle's, one subplot per L
Needs matplotlib (apt-get install python3-matplotlib). Exit codes: 0 done, 2 no usable
records, 3 matplotlib missing.
"""
import json
import math
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")  # files only; must be chosen before pyplot is imported
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
except ImportError:
    print("plot.py: matplotlib is missing: apt-get install python3-matplotlib", file=sys.stderr)
    sys.exit(3)

MAX_PANELS = 4  # more subplots than this get too small to read
MARKERS = "osD^v<>ph*"


def die(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    """(meta, records): a {"meta", "records"} document, a JSON list, or JSON lines."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and "records" in doc:
            return doc.get("meta") or {}, doc["records"]
        if isinstance(doc, list):
            return {}, doc
    except json.JSONDecodeError:
        pass  # not one document: JSON lines (a one-line JSONL file is handled just below too)
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                die(f"{path}:{n}: not JSON: {e.msg}")
    return {}, records


def l_label(L):
    # 2048 -> "2k", 1536 -> "1.5k", 384 -> "384": short enough to sit next to a marker
    return f"{L / 1024:.1f}".rstrip("0").rstrip(".") + "k" if L >= 1024 else str(L)


def series_names(summaries):
    """A name per summary: the method, plus its params when one method ran with several."""
    by_method = {}
    for s in summaries:
        by_method.setdefault(s["method"], set()).add(json.dumps(s.get("params") or {}, sort_keys=True))
    models = {s.get("model") for s in summaries}
    names = []
    for s in summaries:
        name = s["method"]
        if len(by_method[name]) > 1:
            name += " " + ",".join(f"{k}={v}" for k, v in sorted((s.get("params") or {}).items()))
        if len(models) > 1:  # a file merged from several models: keep their series apart
            name = f"{s.get('model')}: {name}"
        names.append(name)
    return names


def styles(names):
    # the same method gets the same colour and marker in every figure; full KV first
    order = sorted(set(names), key=lambda n: (not n.startswith("full"), n))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: (colors[i % len(colors)], MARKERS[i % len(MARKERS)]) for i, n in enumerate(order)}


def title_of(meta, summaries):
    # meta wins; a JSONL file has none, so fall back on what every record carries
    first = summaries[0]
    get = lambda k: meta.get(k, first.get(k))
    model = os.path.basename(str(get("model") or "?"))
    rest = [f"{k}={get(k)}" for k in ("backend", "device", "threads", "suite", "commit") if get(k) not in (None, "")]
    return f"{model}\n{', '.join(rest)}"


def per_layer_figure(summaries, names, style, key, scale, ylabel, title, label_extra=None):
    """One subplot per L (the MAX_PANELS largest), one line per series, x = layer index."""
    lengths = sorted({s["L"] for s in summaries})[-MAX_PANELS:]
    fig, axes = plt.subplots(1, len(lengths), figsize=(max(4.5 * len(lengths), 7), 4), sharey=True, squeeze=False)
    for ax, L in zip(axes[0], lengths):
        # in style order, so each panel's legend lists the methods alike
        for s, name in sorted(zip(summaries, names), key=lambda p: list(style).index(p[1])):
            values = s.get(key) or []
            if s["L"] != L or all(v is None for v in values):
                continue
            # None -> NaN: matplotlib leaves a gap instead of joining across a missing layer
            ys = [math.nan if v is None else v / scale(s) for v in values]
            color, marker = style[name]
            label = name + (label_extra(s) if label_extra else "")
            ax.plot(range(len(ys)), ys, color=color, marker=marker, markersize=4, label=label)
        ax.set_title(f"L = {l_label(L)} ({L} tokens)")
        ax.set_xlabel("layer")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers are whole numbers
        n_layers = max((len(s.get(key) or []) for s in summaries), default=1)
        ax.set_xlim(-0.5, n_layers - 0.5)  # every layer on the axis, even where all are null
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=9)
    return fig


def save(fig, outdir, name):
    fig.tight_layout()
    # "tight" grows the canvas to hold what sits outside the axes: the legend, a long title
    fig.savefig(os.path.join(outdir, name), dpi=120, bbox_inches="tight")
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    meta, records = load(argv[1])
    # a summary without an integer L or a method cannot be placed on any axis; skip it
    summaries = [r for r in records if isinstance(r, dict) and r.get("kind") == "summary"
                 and isinstance(r.get("L"), int) and isinstance(r.get("method"), str)]
    if not summaries:
        die(f"{argv[1]}: no 'summary' records (it holds {len(records)} records; speed mode writes none)")
    summaries.sort(key=lambda s: s["L"])
    try:
        os.makedirs(argv[2], exist_ok=True)
    except OSError as e:
        die(f"cannot create {argv[2]}: {e.strerror}")
    names = series_names(summaries)
    style = styles(names)
    title = title_of(meta, summaries)

    # accuracy vs TTFT ratio: where each method sits on the speed/quality trade-off
    fig, ax = plt.subplots(figsize=(8, 5))
    xmax = max((s["ttft_ratio"] for s in summaries if s.get("ttft_ratio") is not None), default=1.0)
    for name in style:
        pts = [(s["ttft_ratio"], s["accuracy_all"], s["L"]) for s, n in zip(summaries, names)
               if n == name and s.get("ttft_ratio") is not None and s.get("accuracy_all") is not None]
        if not pts:
            continue
        color, marker = style[name]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker,
                linestyle=":", linewidth=0.8, label=name)
        # points that coincide (full KV is 1.0 at every L) share one label, "2k/4k", not a smear
        labels = {}
        for x, y, L in pts:
            labels.setdefault((round(x, 3), round(y, 3)), []).append(l_label(L))
        for (x, y), ls in labels.items():
            left = x >= xmax - 1e-3  # the rightmost points (full KV) get their label on the left
            ax.annotate("/".join(ls), (x, y), textcoords="offset points", xytext=(-4 if left else 4, 4),
                        ha="right" if left else "left", fontsize=7, color=color)
    ax.axvline(1.0, color="grey", linewidth=0.6)  # full KV's TTFT: left of it is faster
    ax.set_xlabel("TTFT / TTFT of full KV")
    ax.set_ylabel("accuracy over all tasks")
    ax.set_ylim(-0.05, 1.05)
    ax.margins(x=0.1)  # room for the L labels beside the outermost points
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # empty when no summary has both a ratio and an accuracy
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # outside: hides no point
    save(fig, argv[2], "accuracy_vs_ttft.png")

    fig = per_layer_figure(summaries, names, style, "kept_rows_per_layer", lambda s: s["L"],
                           "kept rows / L", title)
    save(fig, argv[2], "kept_per_layer.png")

    def sel(s):
        v = s.get("spearman_selection")
        return f" (sel ρ={v:.2f})" if v is not None else " (sel ρ=n/a)"
    fig = per_layer_figure(summaries, names, style, "spearman_layers", lambda s: 1.0,
                           "Spearman ρ vs oracle", title, label_extra=sel)
    save(fig, argv[2], "spearman_per_layer.png")
    print(f"plot.py: wrote 3 figures for {len(summaries)} summaries into {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
