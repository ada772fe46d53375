#!/usr/bin/env python3
"""Independent NumPy (float64) reference for Whittle's prefill pruning methods.

Built on reference_forward.py (GGUF loading via the `gguf` package, RMSNorm, RoPE): the
layer step below is the same float64 arithmetic as reference_forward.forward, split per
layer so that a method can look at a layer's post-RoPE Q/K and, after the layer, continue
with a subset of the rows at their ORIGINAL positions. make_prune_fixtures.py checks that
running all layers through `layer_step` reproduces reference_forward.forward's logits.

Every method returns, for each layer l and KV head h, the sorted ORIGINAL prompt positions
whose K/V the layer keeps after the prefill (`PruneResult.kv[l][h]`), plus the token set a
method propagates or re-prefills (`PruneResult.selected`).

The algorithms follow the authors' published code (see /work/shared/METHODS.md):

  SnapKV     FasterDecoding/SnapKV  snapkv/monkeypatch/snapkv_utils.py (SnapKVCluster.update_kv),
             snapkv/monkeypatch/llama_hijack_4_37.py (repeat_kv before update_kv)
  FastKV     dongwonjo/FastKV  baselines/fastkv/utils.py (FastKVCluster.update_kv,
             compress_fastkv), baselines/fastkv/llama_model.py (TSP gather of hidden
             states and position_ids)
  GemFilter  SalesforceAIResearch/GemFilter  my_baseline/GemFilter/gem_filter_utils.py
             (standard_dis_index, find_context); also dongwonjo/FastKV
             baselines/gemfilter/utils.py (proportional top-k = int(n * retain_rate))
  CLAA       BradMcDanel/kv-exps  FastKV/baseline/claa/claa_utils.py (CLAACluster.update_kv)
  ASL        TANIGUCHIREI/ASL  baseline/asl/customized_cache.py (sum_attn_cache,
             compress_kv, selecting_select_layer), baseline/asl/adaptive_select_layer_utils.py
             (get_rank_descending, relative_normalized_variance), baseline/asl/llama_hijack.py
  StreamingLLM  the first n_sink tokens plus the most recent ones (kvpress StreamingLLMPress;
             METHODS.md §4); no scores
  SlimInfer  no public code: the paper (arXiv 2508.06447, §4.1-4.2, eq. 1-2), METHODS.md §8
             and the choices runtime/prune/README.md documents where those are silent
             ("Decisions where the sources are silent or disagree": SlimInfer)
  decode_topk  a decode-time selection: the exact top-k of the step's own attention that
             Quest (Tang et al., ICML 2024) approximates, in blocks; Whittle's documented
             rule (runtime/prune/methods/decode_topk.cpp), the authors having no such method

Conventions shared by every method:
  * Arithmetic is float64 throughout (the authors cast softmax probabilities to fp16/bf16
    before summing, FastKV/SnapKV/CLAA; ASL keeps fp32; Whittle uses f32). Not mimicked.
  * Masked logits are -inf (the authors add finfo.min; after the softmax both give 0).
  * Every top-k breaks ties by the LOWER index first (torch.topk leaves ties unspecified;
    Whittle's selector picks the lower index). Max-pooling produces exact ties (plateaus),
    so this rule matters.
  * Budgets use floor(keep * n) (Python int() of a float64 product), as the authors'
    int(q_len * rate) does.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_forward import (  # noqa: E402
    Model, apply_rope, load_model, rms_norm, rope_frequencies, silu,
)

__all__ = [
    "load_model", "LayerState", "layer_qkv", "layer_finish", "full_trace", "run_from",
    "layer_tail", "window_scores", "pool1d", "topk_lower_first", "snapkv", "fastkv", "gemfilter",
    "claa", "asl", "streaming", "sliminfer", "tokenfilter", "decode_topk", "PruneResult",
]


# ----------------------------------------------------------------------------- layer step

@dataclass
class LayerState:
    """One layer's post-RoPE queries and keys for the rows it computed."""
    q: np.ndarray          # (n, H, D)
    k: np.ndarray          # (n, Hkv, D)
    positions: np.ndarray  # (n,) original positions of the rows, ascending


def layer_qkv(m: Model, il: int, x: np.ndarray, positions: np.ndarray):
    """Q, K, V of layer `il` for hidden rows x at the given (original) positions.

    Same float64 arithmetic as reference_forward.forward (RMSNorm, projections, biases,
    RoPE at `positions`)."""
    c = m.cfg
    L = m.layers[il]
    n = x.shape[0]
    h = rms_norm(x, L["attn_norm"], c.rms_eps)
    q = h @ L["attn_q"].T
    k = h @ L["attn_k"].T
    v = h @ L["attn_v"].T
    if "attn_q.bias" in L:
        q = q + L["attn_q.bias"]
    if "attn_k.bias" in L:
        k = k + L["attn_k.bias"]
    if "attn_v.bias" in L:
        v = v + L["attn_v.bias"]
    freqs, pos_scale = rope_frequencies(m)
    q = apply_rope(q.reshape(n, c.n_head, c.head_dim_k), positions, freqs, pos_scale, c.n_rot, c.rope_type)
    k = apply_rope(k.reshape(n, c.n_head_kv, c.head_dim_k), positions, freqs, pos_scale, c.n_rot, c.rope_type)
    v = v.reshape(n, c.n_head_kv, c.head_dim_v)
    return q, k, v


def layer_finish(m: Model, il: int, x: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                 skip: np.ndarray | None = None) -> np.ndarray:
    """Causal GQA attention over the current rows (array order = original order), output
    projection, residual, SwiGLU FFN, residual. Returns the layer's output rows. `skip`
    (bool per row, Token Filtering): those rows' attention output is zero before the
    projection, so only the residual (and the projection's bias) passes."""
    c = m.cfg
    n = x.shape[0]
    G = c.n_head // c.n_head_kv
    qg = q.reshape(n, c.n_head_kv, G, c.head_dim_k)
    s = np.einsum("qhgd,khd->hgqk", qg, k) / math.sqrt(c.head_dim_k)
    s = np.where(np.triu(np.ones((n, n), dtype=bool), k=1)[None, None], -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    o = np.einsum("hgqk,khd->qhgd", p, v).reshape(n, c.n_head * c.head_dim_v)
    if skip is not None:
        o[skip] = 0.0
    return layer_tail(m, il, x, o)


def layer_tail(m: Model, il: int, x: np.ndarray, o: np.ndarray) -> np.ndarray:
    """The rest of layer `il` after the attention heads' output o (n, H * Dv): output
    projection, residual, SwiGLU FFN, residual."""
    L = m.layers[il]
    eps = m.cfg.rms_eps
    o = o @ L["attn_output"].T
    if "attn_output.bias" in L:
        o = o + L["attn_output.bias"]
    x = x + o
    h = rms_norm(x, L["ffn_norm"], eps)
    return x + (silu(h @ L["ffn_gate"].T) * (h @ L["ffn_up"].T)) @ L["ffn_down"].T


def run_from(m: Model, x: np.ndarray, positions: np.ndarray, first: int, last: int, states: list) -> np.ndarray:
    """Run layers first..last (inclusive) on rows x at `positions`; append each layer's
    LayerState to `states`; return the hidden rows after layer `last`."""
    for il in range(first, last + 1):
        q, k, v = layer_qkv(m, il, x, positions)
        states.append(LayerState(q=q, k=k, positions=positions))
        x = layer_finish(m, il, x, q, k, v)
    return x


@dataclass
class FullTrace:
    """The unpruned prefill: every layer's Q/K, and the hidden rows after every layer."""
    tokens: np.ndarray
    states: list            # [n_layer] LayerState over all L rows
    hidden: list            # [n_layer] (L, n_embd) output of each layer


def full_trace(m: Model, tokens) -> FullTrace:
    toks = np.asarray(tokens, dtype=np.int64)
    pos = np.arange(len(toks))
    x = m.tok_embd[toks].copy()
    states, hidden = [], []
    for il in range(m.cfg.n_layer):
        q, k, v = layer_qkv(m, il, x, pos)
        states.append(LayerState(q=q, k=k, positions=pos))
        x = layer_finish(m, il, x, q, k, v)
        hidden.append(x)
    return FullTrace(tokens=toks, states=states, hidden=hidden)


def logits_of(m: Model, x: np.ndarray) -> np.ndarray:
    return rms_norm(x, m.output_norm, m.cfg.rms_eps) @ m.output.T


# ----------------------------------------------------------------------------- scoring

def pool1d(s: np.ndarray, kernel: int, kind: str) -> np.ndarray:
    """Pool along the last axis, stride 1, padding kernel//2, same output length.

    avg: zero padding and divisor `kernel` everywhere (F.avg_pool1d's default
         count_include_pad=True), so the first/last kernel//2 entries are diluted.
    max: padding never wins (F.max_pool1d pads with -inf).
    kernel 1 (or None) is no pooling."""
    if not kernel or kernel == 1:
        return s.copy()
    if kernel % 2 != 1:
        raise ValueError("pool kernel must be odd")
    r = kernel // 2
    n = s.shape[-1]
    pad_val = 0.0 if kind == "avg" else -np.inf
    padded = np.full(s.shape[:-1] + (n + 2 * r,), pad_val, dtype=np.float64)
    padded[..., r:r + n] = s
    win = np.stack([padded[..., i:i + n] for i in range(kernel)], axis=0)
    if kind == "avg":
        return win.sum(axis=0) / kernel
    if kind == "max":
        return win.max(axis=0)
    raise ValueError(f"unknown pool {kind!r}")


def window_scores(st: LayerState, window: int, pool_kernel: int, pool: str) -> np.ndarray:
    """The observation-window score of METHODS.md §0, per QUERY head: (H, n - W).

    For the last W rows' queries: logits q.k / sqrt(d) over all n keys of the layer's rows
    (GQA: query head h reads KV head h // G), a causal mask inside the W x W window block
    only, softmax over all n keys, then the probabilities summed over the W queries for
    the prefix keys [0, n - W) only, then pooled along the keys per query head (before any
    GQA reduction). SnapKVCluster.update_kv (snapkv_utils.py), FastKVCluster.update_kv
    (baselines/fastkv/utils.py), CLAACluster.update_kv (claa_utils.py),
    DynamicCache.sum_attn_cache (ASL customized_cache.py) all compute this."""
    q, k = st.q, st.k
    n, H, D = q.shape
    Hkv = k.shape[1]
    G = H // Hkv
    if not (0 < window < n):
        raise ValueError(f"window {window} must be in (0, {n})")
    qw = q[n - window:]                                        # (W, H, D)
    kr = np.repeat(k, G, axis=1)                               # (n, H, D): head h -> kv h // G
    z = np.einsum("whd,nhd->hwn", qw, kr) / math.sqrt(D)       # (H, W, n)
    qpos = np.arange(n - window, n)[:, None]
    kpos = np.arange(n)[None, :]
    mask = (kpos >= n - window) & (kpos > qpos)                # only the window block is masked
    z = np.where(mask[None], -np.inf, z)
    z = z - z.max(axis=-1, keepdims=True)
    a = np.exp(z)
    a = a / a.sum(axis=-1, keepdims=True)
    s = a[:, :, : n - window].sum(axis=1)                      # (H, n - W)
    return pool1d(s, pool_kernel, pool)


def group_sum(s_q: np.ndarray, n_head_kv: int) -> np.ndarray:
    """(H, n) -> (Hkv, n): sum over the G query heads of each KV head (FastKV/ASL/CLAA:
    attn_cache.view(bsz, -1, G, n).sum(dim=-2))."""
    H, n = s_q.shape
    return s_q.reshape(n_head_kv, H // n_head_kv, n).sum(axis=1)


def topk_lower_first(s: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries of a 1-D score vector; ties go to the lower index.
    Returned in selection order (score descending, index ascending)."""
    if k < 0 or k > s.shape[-1]:
        raise ValueError(f"top-k {k} out of range for {s.shape[-1]}")
    return np.argsort(-s, kind="stable")[:k]


def topk_gap(s: np.ndarray, k: int) -> float:
    """How decided a top-k is: (k-th best - (k+1)-th best) / max |s|; 0 for an exact tie at
    the boundary, inf when nothing is dropped (k == n) or nothing kept."""
    n = s.shape[-1]
    if k <= 0 or k >= n:
        return math.inf
    srt = np.sort(s)[::-1]
    scale = float(np.max(np.abs(s))) or 1.0
    return float(srt[k - 1] - srt[k]) / scale


def floor_budget(keep: float, n: int) -> int:
    """floor(keep * n), the authors' int(n * rate)."""
    return int(math.floor(keep * n))


def whittle_window(keep: float, n: int, window: int) -> int:
    """The observation window of a prompt of n tokens under Whittle's documented rule
    (runtime/prune/README.md, "Budgets below the window"; SnapKV, FastKV, CLAA, ASL): the
    parameter W, but at most half the budget floor(keep * n), at least 1. The authors use
    W as given (and assert C > W); the two agree whenever floor(keep * n) >= 2 W."""
    return max(1, min(window, floor_budget(keep, n) // 2))


# ----------------------------------------------------------------------------- results

@dataclass
class PruneResult:
    method: str
    params: dict
    n_prompt: int
    # kv[l][h]: sorted original positions kept by layer l, KV head h (np.int64 arrays)
    kv: list = field(default_factory=list)
    # gap[l][h]: topk_gap of the selection that produced kv[l][h] (inf: nothing dropped)
    gap: list = field(default_factory=list)
    # the propagated / re-prefilled token set (sorted original positions), or None
    selected: np.ndarray | None = None
    selected_gap: float = math.inf
    selection_layer: int = -1
    info: dict = field(default_factory=dict)


def _keep_all(st: LayerState, n_kv: int):
    return [st.positions.copy() for _ in range(n_kv)], [math.inf] * n_kv


def _kv_topk_plus_window(st: LayerState, S: np.ndarray, c: int, window: int):
    """Per KV head: the top (c - W) prefix rows by S[h] plus the last W rows, as sorted
    original positions. S: (Hkv, n - W). Caller ensures n > c."""
    n = st.positions.shape[0]
    out, gaps = [], []
    for h in range(S.shape[0]):
        idx = topk_lower_first(S[h], c - window)
        rows = np.concatenate([idx, np.arange(n - window, n)])
        out.append(np.sort(st.positions[rows]))
        gaps.append(topk_gap(S[h], c - window))
    return out, gaps


# ----------------------------------------------------------------------------- SnapKV

def snapkv(m: Model, trace: FullTrace, *, keep: float, window: int, pool_kernel: int, pool: str,
           per_query_head: bool) -> PruneResult:
    """SnapKV (FasterDecoding/SnapKV, snapkv/monkeypatch/snapkv_utils.py
    SnapKVCluster.update_kv; LongBench configs experiments/LongBench/config/
    ablation_c*_w32_k7_maxpool.json for W 32, max-pool 7).

    Every layer, on the full prompt (SnapKV never drops hidden rows): if L >= C, keep the
    top (C - W) prefix rows by the pooled window score plus the W window rows; otherwise
    keep all. C = floor(keep * L), raised to W when smaller (Whittle's rule; the authors'
    budget is a constant max_capacity_prompt, or int(L * r) in FastKV's copy, and asserts
    C > W).

    per_query_head=True: the authors' layout. llama_hijack_4_37.py repeats the KV heads
    before update_kv, so the top-k runs per QUERY head and `kv` has H entries per layer
    (entry g is query head g, which reads KV head g // G).
    per_query_head=False: Whittle's documented variant (runtime/prune/README.md, "SnapKV's
    GQA"): the pooled scores of each KV head's G query heads are summed and the top-k runs
    per KV head; `kv` has Hkv entries per layer."""
    c_model = m.cfg
    L = len(trace.tokens)
    w_param, window = window, whittle_window(keep, L, window)
    C = max(floor_budget(keep, L), window)
    res = PruneResult("snapkv" if not per_query_head else "snapkv_qhead",
                      dict(keep=keep, window=w_param, pool_kernel=pool_kernel, pool=pool,
                           per_query_head=int(per_query_head), budget=C), L)
    n_heads = c_model.n_head if per_query_head else c_model.n_head_kv
    for st in trace.states:
        if L <= C:   # authors: q_len < C stores all; at L == C the top-k keeps all anyway
            kv, gaps = _keep_all(st, n_heads)
        else:
            s = window_scores(st, window, pool_kernel, pool)
            S = s if per_query_head else group_sum(s, c_model.n_head_kv)
            kv, gaps = _kv_topk_plus_window(st, S, C, window)
        res.kv.append(kv)
        res.gap.append(gaps)
    return res


def _append_budgeted(res, st, n_kv: int, C: int, window: int, pool_kernel: int, pool: str) -> None:
    """A layer after a selection (FastKV, CLAA): per KV head the top (C - W) + window rows by
    the group-summed pooled window score when it holds more than C rows, else every row."""
    if st.positions.shape[0] > C:
        S = group_sum(window_scores(st, window, pool_kernel, pool), n_kv)
        kv, gaps = _kv_topk_plus_window(st, S, C, window)
    else:
        kv, gaps = _keep_all(st, n_kv)
    res.kv.append(kv)
    res.gap.append(gaps)


# ----------------------------------------------------------------------------- FastKV

def fastkv(m: Model, trace: FullTrace, *, keep: float, tsp_layer: int, window: int, pool_kernel: int,
           pool: str, retain_rate: float, tsp_rate: float) -> PruneResult:
    """FastKV, proportional mode (dongwonjo/FastKV baselines/fastkv/utils.py
    FastKVCluster.update_kv and compress_fastkv; baselines/fastkv/llama_model.py for the
    TSP gather of hidden states and position_ids).

    Layers l <= tsp_layer run on all L rows: KV budget C_l = floor(L * r); if L >= C_l keep
    per KV head the top (C_l - W) prefix rows by the group-summed pooled window score plus
    the W window rows. At tsp_layer, if L > T = floor(L * t), the same per-KV-head scores
    summed over all KV heads pick the top (T - W) prefix rows, plus the window, sorted:
    after that layer's MLP the hidden rows are gathered and later layers run on them at
    their original positions. Layers l > tsp_layer (n = T rows) use C_l = floor(n * r / t).
    `keep` is only recorded (Whittle: r = keep, t = 2 keep)."""
    c = m.cfg
    L = len(trace.tokens)
    n_kv = c.n_head_kv
    w_param, window = window, whittle_window(retain_rate, L, window)
    T = max(floor_budget(tsp_rate, L), window)   # Whittle raises T to W; authors: int(L t)
    res = PruneResult("fastkv", dict(keep=keep, tsp_layer=tsp_layer, window=w_param, pool_kernel=pool_kernel,
                                     pool=pool, retain_rate=retain_rate, tsp_rate=tsp_rate, tsp_len=T), L)
    states = list(trace.states[: tsp_layer + 1])
    sel_rows = None
    for il, st in enumerate(states):
        n = st.positions.shape[0]
        C = max(floor_budget(retain_rate, n), window)
        need_tsp = il == tsp_layer and n > T
        if n > C or need_tsp:
            S = group_sum(window_scores(st, window, pool_kernel, pool), n_kv)
        if n > C:
            kv, gaps = _kv_topk_plus_window(st, S, C, window)
        else:
            kv, gaps = _keep_all(st, n_kv)
        res.kv.append(kv)
        res.gap.append(gaps)
        if need_tsp:
            u = S.sum(axis=0)
            top = topk_lower_first(u, T - window)
            sel_rows = np.sort(np.concatenate([top, np.arange(n - window, n)]))
            res.selected = st.positions[sel_rows].copy()
            res.selected_gap = topk_gap(u, T - window)
            res.selection_layer = il
    if sel_rows is None:   # L <= T: no propagation, later layers see the full prompt
        later = trace.states[tsp_layer + 1:]
    else:
        later = []
        x = trace.hidden[tsp_layer][sel_rows]
        res.info["last_logits"] = logits_of(m, run_from(m, x, res.selected, tsp_layer + 1, c.n_layer - 1, later)[-1:])[0]
    ratio = retain_rate / tsp_rate
    for st in later:
        _append_budgeted(res, st, n_kv, max(floor_budget(ratio, st.positions.shape[0]), window), window,
                         pool_kernel, pool)
    return res


# ----------------------------------------------------------------------------- GemFilter

def gemfilter(m: Model, trace: FullTrace, *, keep: float, filter_layer: int, pool_kernel: int,
              by_window: bool = False, window: int = 0, pool: str = "avg") -> PruneResult:
    """GemFilter (SalesforceAIResearch/GemFilter my_baseline/GemFilter/gem_filter_utils.py
    standard_dis_index with sum_over_heads=True, called from find_context at the select
    layer, llama_select_attention.py; FastKV's copy baselines/gemfilter/utils.py).

    At filter_layer, after RoPE: r[j] = sum over ALL H query heads of q_last[h] . k[h//G, j]
    for every j in [0, L) (raw dot product: no 1/sqrt(d), no softmax, no mask; only the
    last query), avg-pooled (kernel pool_kernel, zero padding, divisor k), then the top
    K = min(floor(keep * L), L) positions (raised to 1), sorted. The last token is not
    forced. Pass 2 re-prefills those K tokens as a fresh prompt, so every layer's KV holds
    exactly these K tokens (at re-indexed positions 0..K-1 in the reference; the fixture
    lists their ORIGINAL positions).

    by_window=True: Whittle's default, not the authors' (runtime/prune/README.md,
    "GemFilter's scores"): at filter_layer SnapKV's window score of every query head
    (window_scores: the last W' = whittle_window(keep, L, window) queries' causal softmax,
    summed over them, pooled per head with `pool`) summed over all H heads scores the prefix
    [0, L - W'); the top (K - W') prefix rows plus the W' window rows, sorted, with K =
    min(L, max(floor(keep * L), W')). The re-prefill is the same."""
    c = m.cfg
    L = len(trace.tokens)
    st = trace.states[filter_layer]
    if by_window:
        w = whittle_window(keep, L, window)
        K = min(L, max(floor_budget(keep, L), w))
        res = PruneResult("gemfilter_window", dict(keep=keep, filter_layer=filter_layer, window=window,
                                                   pool_kernel=pool_kernel, pool=pool, window_scores=1,
                                                   top_k=K), L)
        u = window_scores(st, w, pool_kernel, pool).sum(axis=0)  # (L - w,) over all H heads
        top = topk_lower_first(u, K - w)
        rows = np.sort(np.concatenate([top, np.arange(L - w, L)]))
        res.selected = st.positions[rows].copy()
        res.selected_gap = topk_gap(u, K - w)
    else:
        K = min(L, max(floor_budget(keep, L), 1))
        res = PruneResult("gemfilter", dict(keep=keep, filter_layer=filter_layer, pool_kernel=pool_kernel,
                                            pool="avg", window_scores=0, top_k=K), L)
        G = c.n_head // c.n_head_kv
        q_last = st.q[-1]                                           # (H, D)
        kr = np.repeat(st.k, G, axis=1)                             # (L, H, D)
        r = np.einsum("hd,nhd->n", q_last, kr)                      # summed over heads
        r = pool1d(r[None], pool_kernel, "avg")[0]
        top = topk_lower_first(r, K)
        res.selected = np.sort(st.positions[top])
        res.selected_gap = topk_gap(r, K)
    res.selection_layer = filter_layer
    for _ in range(c.n_layer):
        res.kv.append([res.selected.copy() for _ in range(c.n_head_kv)])
        res.gap.append([math.inf] * c.n_head_kv)
    return res


# ----------------------------------------------------------------------------- CLAA

def zscore_max(bufs: list) -> np.ndarray:
    """CLAA's aggregate (claa_utils.py): each buffered layer's (Hkv, n) score z-scored per
    KV head over the tokens, (x - mean) / (std + 1e-8) with torch's default sample std
    (N - 1 divisor), then the max over (layers x KV heads)."""
    z = []
    for S in bufs:
        mu = S.mean(axis=-1, keepdims=True)
        sd = S.std(axis=-1, ddof=1, keepdims=True) + 1e-8
        z.append((S - mu) / sd)
    return np.concatenate(z, axis=0).max(axis=0)


def claa(m: Model, trace: FullTrace, *, keep: float, prune_layer: int, n_agg: int, min_layer: int,
         window: int, pool_kernel: int, pool: str) -> PruneResult:
    """CLAA (BradMcDanel/kv-exps FastKV/baseline/claa/claa_utils.py CLAACluster.update_kv).

    The budget C and the TSP length T are both floor(keep * L) of the ORIGINAL prompt
    length (max_capacity_prompt_percentage = tsp_len_percentage = keep), C raised to W.
    Every layer with n >= C computes FastKV's group-summed pooled window score S_l (Hkv,
    n - W) and pushes it into a rolling buffer of the last n_agg layers. Layers l >= m
    (min_layer) keep per KV head the top (C - W) prefix rows plus the window; layers < m
    keep their full KV. At prune_layer, if n > T: z-score each buffered (layer, KV head)
    vector over tokens, take the max over all of them, keep the top (T - W) plus the
    window, sorted; later layers run on those rows at their original positions (as FastKV).
    Later layers have n = T = C rows, so they keep all of them."""
    c = m.cfg
    L = len(trace.tokens)
    n_kv = c.n_head_kv
    w_param, window = window, whittle_window(keep, L, window)
    C = max(floor_budget(keep, L), window)
    T = C
    res = PruneResult("claa", dict(keep=keep, prune_layer=prune_layer, n_agg=n_agg, min_layer=min_layer,
                                   window=w_param, pool_kernel=pool_kernel, pool=pool, budget=C), L)
    buf = []
    sel_rows = None
    for il in range(prune_layer + 1):
        st = trace.states[il]
        n = st.positions.shape[0]
        if n > C:   # the authors score at n >= C; at n == C nothing is dropped either way
            S = group_sum(window_scores(st, window, pool_kernel, pool), n_kv)
            buf.append(S)
            buf = buf[-n_agg:]
        if il >= min_layer and n > C:
            kv, gaps = _kv_topk_plus_window(st, S, C, window)
        else:
            kv, gaps = _keep_all(st, n_kv)
        res.kv.append(kv)
        res.gap.append(gaps)
        if il == prune_layer and n > T:
            u = zscore_max(buf)
            top = topk_lower_first(u, T - window)
            sel_rows = np.sort(np.concatenate([top, np.arange(n - window, n)]))
            res.selected = st.positions[sel_rows].copy()
            res.selected_gap = topk_gap(u, T - window)
            res.selection_layer = il
    later = []
    if sel_rows is None:
        later = trace.states[prune_layer + 1:]
    else:
        x = trace.hidden[prune_layer][sel_rows]
        res.info["last_logits"] = logits_of(m, run_from(m, x, res.selected, prune_layer + 1, c.n_layer - 1, later)[-1:])[0]
    for st in later:
        _append_budgeted(res, st, n_kv, C, window, pool_kernel, pool)
    return res


# ----------------------------------------------------------------------------- ASL

def ranks_descending(s: np.ndarray) -> np.ndarray:
    """Rank 1 = highest score (get_rank_descending, adaptive_select_layer_utils.py); equal
    scores: the lower index gets the better rank."""
    order = np.argsort(-s, kind="stable")
    r = np.empty(s.shape[0], dtype=np.int64)
    r[order] = np.arange(1, s.shape[0] + 1)
    return r


def asl(m: Model, trace: FullTrace, *, keep: float, tau: float, min_layer: int, obs_layers: int,
        window: int, pool_kernel: int, pool: str, kv_topk: bool = True) -> PruneResult:
    """ASL, one-pass with top-k KV (TANIGUCHIREI/ASL baseline/asl/customized_cache.py:
    prefilling_score_update -> sum_attn_cache / compress_kv / selecting_select_layer;
    adaptive_select_layer_utils.py: get_rank_descending, relative_normalized_variance;
    llama_hijack.py: the hidden-row and RoPE gather after the selecting layer).

    K = budget = floor(keep * L) (raised to W) is both select_k and cache_k. From layer 0,
    every layer (while n > K) computes the pooled window score per query head, sums it
    over each KV head's group (KV top-k) and then over all KV heads, and ranks the prefix
    tokens (1 = best). With kv_topk each such layer keeps per KV head the top (K - W)
    prefix rows plus the window (compress_kv with cache_k; only if n > cache_k).
    At layers l >= L_min: stack the rank vectors of layers l-L_obs+1..l, take the union of
    each layer's top-(K - W) (smallest ranks), V_l = mean over the union of each token's
    population variance of rank across the L_obs layers. The first evaluated layer stores
    V_init (ratio 1). The first l with V_l / V_init < tau selects layer l's own top (K - W)
    plus the window (sorted); after layer l's MLP later layers run on those rows at their
    original positions. No fallback: without a trigger every layer keeps its top-k KV and
    `selected` is None."""
    c = m.cfg
    L = len(trace.tokens)
    n_kv = c.n_head_kv
    w_param, window = window, whittle_window(keep, L, window)
    K = max(floor_budget(keep, L), window)
    res = PruneResult("asl", dict(keep=keep, tau=tau, min_layer=min_layer, obs_layers=obs_layers, window=w_param,
                                  pool_kernel=pool_kernel, pool=pool, kv_topk=int(kv_topk), budget=K), L)
    ranks = []
    v_init = None
    sel_rows = None
    ratios = {}
    il = 0
    for il in range(c.n_layer):
        st = trace.states[il]
        n = st.positions.shape[0]
        if n <= K:   # the whole prompt fits: ASL scores nothing, keeps all
            res.kv.append(_keep_all(st, n_kv)[0])
            res.gap.append([math.inf] * n_kv)
            continue
        S = group_sum(window_scores(st, window, pool_kernel, pool), n_kv)
        u = S.sum(axis=0)
        ranks.append(ranks_descending(u))
        if kv_topk:
            kv, gaps = _kv_topk_plus_window(st, S, K, window)
        else:
            kv, gaps = _keep_all(st, n_kv)
        res.kv.append(kv)
        res.gap.append(gaps)
        if il >= min_layer and len(ranks) >= obs_layers:
            R = np.stack(ranks[-obs_layers:])                       # (L_obs, n - W)
            k_sel = min(K - window, R.shape[1])
            union = np.zeros(R.shape[1], dtype=bool)
            for row in R:
                union[row <= k_sel] = True                           # ranks are a permutation
            X = R[:, union].astype(np.float64)
            v = float(np.mean((X - X.mean(axis=0)) ** 2))
            if v_init is None:
                v_init, ratio = v, 1.0
            else:
                ratio = v / v_init
            ratios[il] = ratio
            if ratio < tau:
                top = topk_lower_first(u, K - window)
                sel_rows = np.sort(np.concatenate([top, np.arange(n - window, n)]))
                res.selected = st.positions[sel_rows].copy()
                res.selected_gap = topk_gap(u, K - window)
                res.selection_layer = il
                break
    res.info["ratios"] = ratios
    if sel_rows is not None:
        later = []
        x = trace.hidden[il][sel_rows]
        res.info["last_logits"] = logits_of(m, run_from(m, x, res.selected, il + 1, c.n_layer - 1, later)[-1:])[0]
        for st in later:   # n = K rows: nothing to drop (compress_kv keeps all when q_len <= cache_k)
            res.kv.append(_keep_all(st, n_kv)[0])
            res.gap.append([math.inf] * n_kv)
    assert len(res.kv) == c.n_layer
    return res


# ----------------------------------------------------------------------------- StreamingLLM

def streaming(m: Model, trace: FullTrace, *, keep: float, n_sink: int, window: int) -> PruneResult:
    """StreamingLLM (Xiao et al.; kvpress StreamingLLMPress, METHODS.md §4): every layer
    keeps the first n_sink prompt positions and the most recent (C - n_sink), C =
    floor(keep * L) raised to n_sink + window (Whittle's rule, so the recent part always
    covers the window; kvpress: n = int(L * (1 - compression_ratio)), no floor). Nothing
    is scored and no hidden row is dropped; L <= C keeps everything."""
    c = m.cfg
    L = len(trace.tokens)
    C = max(floor_budget(keep, L), n_sink + window)
    res = PruneResult("streaming", dict(keep=keep, n_sink=n_sink, window=window, budget=C), L)
    if L <= C:
        pos = np.arange(L)
    else:
        pos = np.concatenate([np.arange(n_sink), np.arange(L - (C - n_sink), L)])
    for _ in range(c.n_layer):
        res.kv.append([pos.copy() for _ in range(c.n_head_kv)])
        res.gap.append([math.inf] * c.n_head_kv)
    return res


# ----------------------------------------------------------------------------- SlimInfer

def slim_block_scores(st: LayerState, block: int, unit: int, query: int, abs_score: bool) -> np.ndarray:
    """SlimInfer's block importance (paper §4.2, eq. 1-2), over the layer's current rows
    cut into blocks of `block` rows (the last one may be short) made of units of `unit`
    rows: k_rep(j, m) = mean of the (post-RoPE) keys of unit m of block j, per KV head;
    q_l = mean of the (post-RoPE) queries of the last `query` rows, per query head;
    r(B_j) = max_m (1/H) sum_h f(q_l[h] . k_rep[h // G](j, m)), f = |.| (METHODS.md §8,
    Whittle) or the identity (the paper's eq. 2 as printed). No 1/sqrt(d), no softmax
    (a constant scale would not change the ranking)."""
    q, k = st.q, st.k
    n, H, D = q.shape
    G = H // k.shape[1]
    ql = q[n - min(query, n):].mean(axis=0)                     # (H, D)
    nb = -(-n // block)
    out = np.empty(nb)
    for b in range(nb):
        best = -np.inf
        for u0 in range(b * block, min(n, (b + 1) * block), unit):
            krep = k[u0:min(n, (b + 1) * block, u0 + unit)].mean(axis=0)   # (Hkv, D)
            d = np.einsum("hd,hd->h", ql, np.repeat(krep, G, axis=0))
            best = max(best, float(np.mean(np.abs(d) if abs_score else d)))
        out[b] = best
    return out


def sliminfer(m: Model, trace: FullTrace, *, keep: float, block: int, unit: int, query: int,
              layer0: int, layer1: int, layer2: int, window: int, abs_score: bool = True) -> PruneResult:
    """SlimInfer's prefill (paper §4.1-4.2; METHODS.md §8; runtime/prune/README.md,
    "Decisions ...: SlimInfer"). Hidden-state pruning in three stages: layer p_i
    (p = layer0, layer1, layer2) runs on its current rows (its KV holds all of them); its
    block scores (slim_block_scores) then choose the blocks whose rows continue, after the
    layer's MLP, into the layers after it at their original positions. Stage i keeps
    T_i = ceil(min(1, keep * 2^(2-i)) * L / block) blocks of the ORIGINAL length L (4 keep,
    2 keep, keep of the prompt, rounded up to whole blocks). Forced, and counted in T_i:
    the first block (attention sink) and every block holding one of the newest `window`
    rows; the other blocks by score, ties to the lower index, fill up to T_i (when the
    forced blocks alone reach T_i, only they are kept). A stage that keeps every current
    block (its block count <= max(T_i, forced)) drops nothing and is no selection.
    `selected` is the last dropping stage's kept positions (its layer: selection_layer);
    every layer's KV holds the rows it computed. The gap of a kv line (and of `selected`)
    is the smallest gap of the stages before it (its rows depend on each); a stage that
    kept only forced blocks chose nothing by score (gap inf)."""
    c = m.cfg
    L = len(trace.tokens)
    layers = (layer0, layer1, layer2)
    if not (0 <= layer0 < layer1 < layer2 < c.n_layer):
        raise ValueError(f"pruning layers {layers} must increase inside the model")
    rates = [min(1.0, keep * 2 ** (2 - i)) for i in range(3)]
    target = [int(math.ceil(r * L / block)) for r in rates]
    res = PruneResult("sliminfer", dict(keep=keep, block=block, unit=unit, query=query, layer0=layer0,
                                        layer1=layer1, layer2=layer2, window=window, abs_score=int(abs_score),
                                        stage_blocks=",".join(str(t) for t in target)), L)
    pos = np.arange(L)
    x = m.tok_embd[trace.tokens].copy()
    gap_so_far = math.inf
    stages = []
    pruned = False
    for il in range(c.n_layer):
        if pruned:
            q, k, v = layer_qkv(m, il, x, pos)
            st = LayerState(q=q, k=k, positions=pos)
            x = layer_finish(m, il, x, q, k, v)
        else:   # the full prompt so far: reuse the unpruned trace
            st = trace.states[il]
            x = trace.hidden[il]
        n = pos.shape[0]
        res.kv.append([pos.copy() for _ in range(c.n_head_kv)])
        res.gap.append([gap_so_far] * c.n_head_kv)
        if il not in layers:
            continue
        t = target[layers.index(il)]
        nb = -(-n // block)
        if nb <= t:
            continue
        r = slim_block_scores(st, block, unit, query, abs_score)
        forced = {0} | {j // block for j in range(max(0, n - window), n)}
        others = np.array([b for b in range(nb) if b not in forced], dtype=np.int64)
        k_fill = max(0, t - len(forced))
        top = others[topk_lower_first(r[others], k_fill)]
        kept = np.sort(np.concatenate([np.array(sorted(forced), dtype=np.int64), top]))
        if len(kept) == nb:   # the forced blocks are all there is: nothing dropped, no selection
            continue
        g = topk_gap(r[others], k_fill) if k_fill > 0 else math.inf
        rows = np.concatenate([np.arange(b * block, min(n, (b + 1) * block)) for b in kept])
        gap_so_far = min(gap_so_far, g)
        pos = pos[rows]
        x = x[rows]
        pruned = True
        stages.append((il, len(rows), g))
        res.selected = pos.copy()
        res.selected_gap = gap_so_far
        res.selection_layer = il
    res.info["stages"] = stages
    if pruned:
        res.info["last_logits"] = logits_of(m, x[-1:])[0]
    return res


# ----------------------------------------------------------------------------- Token Filtering

def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine along the last axis (0 where a norm is 0)."""
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.where(den > 0, np.sum(a * b, axis=-1) / np.where(den > 0, den, 1.0), 0.0)


def tokenfilter(m: Model, trace: FullTrace, *, target: float, start: float, anchor_decay: float,
                key_weight: float, warmup: int, window: int, step: float = 0.05) -> PruneResult:
    """Token Filtering's prefill (arXiv 2512.07090, secondary sources only: METHODS.md §9;
    the choices of runtime/prune/README.md "Decisions ...: Token Filtering" and
    runtime/prune/selection_math.h SkipController). Every KV row stays; in the tail layers
    l >= floor(start * n_layer) some rows' attention is skipped (their attention output is
    zero before the output projection; the residual and the FFN run).

    Per tail layer, rows 0..n-W-1 in order (the newest W rows are never skipped): per KV
    head h, s_h = a cos(k_h, Ak_h) + (1 - a) cos(v_h, Av_h) against the anchors (the layer's
    post-RoPE keys and values); redundancy = mean_h s - std_h s (population std). Anchors:
    an EMA A <- d A + (1 - d) x over every row (skipped or not), so row i is compared with
    the anchor of rows 0..i-1; the anchor starts at zero, and cos against a zero anchor is
    0, so row 0 scores 0 (kernels/ops.h, the kv_similarity op: "an all-zero anchor just
    takes x, cos 0"). The first `warmup` rows (from row 0) are never skipped and set the
    threshold at their (1 - target) quantile, taken as the sorted scores' element
    floor((1 - target) * warmup) (selection_math.h documents only "quantile"); every later
    row is skipped when its redundancy > threshold, and then threshold +=
    step * (skipped - target). Also chosen where the sources are silent: post-RoPE keys,
    no feedback during the warm-up. The fixture holds the skipped counts per layer
    (`info["skipped"]`); kv lines are every row."""
    c = m.cfg
    L = len(trace.tokens)
    first = int(math.floor(start * c.n_layer))
    res = PruneResult("tokenfilter", dict(target=target, start=start, anchor_decay=anchor_decay,
                                          key_weight=key_weight, warmup=warmup, window=window,
                                          first_layer=first), L)
    pos = np.arange(L)
    x = trace.hidden[first - 1].copy() if first > 0 else m.tok_embd[trace.tokens].copy()
    skipped = {}
    for il in range(first, c.n_layer):
        q, k, v = layer_qkv(m, il, x, pos)
        ak, av = np.zeros_like(k[0]), np.zeros_like(v[0])
        warm, thr = [], 0.0
        skip = np.zeros(L, dtype=bool)
        for i in range(L):
            if i < L - window:
                s = key_weight * _cos(k[i], ak) + (1 - key_weight) * _cos(v[i], av)   # (Hkv,)
                red = float(s.mean() - s.std())
                if len(warm) < warmup:
                    warm.append(red)
                    if len(warm) == warmup:
                        srt = sorted(warm)
                        thr = srt[min(len(srt) - 1, int(math.floor((1 - target) * len(srt))))]
                else:
                    if warmup == 0 and i == 0:   # no warm-up: the first score is the threshold
                        thr = red
                    skip[i] = red > thr
                    thr += step * (float(skip[i]) - target)
            ak = anchor_decay * ak + (1 - anchor_decay) * k[i]
            av = anchor_decay * av + (1 - anchor_decay) * v[i]
        skipped[il] = int(skip.sum())
        x = layer_finish(m, il, x, q, k, v, skip=skip)  # skipped rows: attention output zero
    for _ in range(c.n_layer):
        res.kv.append([pos.copy() for _ in range(c.n_head_kv)])
        res.gap.append([math.inf] * c.n_head_kv)
    res.info["skipped"] = skipped
    res.info["last_logits"] = logits_of(m, x[-1:])[0]
    return res


# ----------------------------------------------------------------------------- decode top-k

def f16_outward(x, up):
    """x (any float array) as Whittle stores Quest's key bounds (kernels/f16_bound.h): f16
    rounded toward +inf (up) or -inf, never a subnormal (2^-14 or zero, whichever is
    outward), magnitudes above 65504 saturated. Returned as float64."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
        toward = np.float16(np.inf if up else -np.inf)
        off = (h.astype(np.float64) < x) if up else (h.astype(np.float64) > x)
        h = np.where(off, np.nextafter(h, toward), h)
    tiny = np.float16(2.0 ** -14)
    sub = (h != 0) & (np.abs(h) < tiny)
    h = np.where(sub & (h > 0), tiny if up else np.float16(0), h)
    h = np.where(sub & (h < 0), np.float16(0) if up else -tiny, h)
    return np.clip(h.astype(np.float64), -65504.0, 65504.0)


def decode_topk(m: Model, trace: FullTrace, *, keep: float, block: int, steps: int,
                bounds: bool = False) -> PruneResult:
    """Query-aware decode selection (the "oracle top-k" that Quest approximates: Tang et al.,
    ICML 2024, §3; runtime/prune/methods/decode_topk.cpp says why Whittle has it). The prompt
    is prefilled in full and every layer keeps all of its KV (kv lines: every row). Then
    `steps` greedy decode steps, each fed the previous step's argmax (the first: the full
    prefill's). At each step, in each layer, the step's own query scores every prompt row:
    s[j] = sum over all H query heads of softmax(q_h . k_j / sqrt(d)) over ALL the layer's
    keys (prompt, generated, its own), for the prompt's columns j < L. A block of `block`
    consecutive prompt rows scores as its best row; the top kb blocks (ties: lower block
    first) are attended, kb = floor(keep * L) // block (at least 1), every block when
    floor(keep * L) >= L. The attention then reads the chosen blocks' rows plus every row
    from L on (generated and the step's own), softmax over those alone.

    bounds=True scores the blocks as Quest does (Tang et al., ICML 2024, §3.2 and Algorithm
    1): each block of `block` prompt rows and KV head g keeps the elementwise min lo and max
    hi of its (post-RoPE) keys, stored as f16 rounded outward (f16_outward); query head h gives block b the upper bound
    u[h][b] = sum_d max(q_d lo_d, q_d hi_d) / sqrt(d) of any of its keys' q.k / sqrt(d). Quest
    takes each head's top blocks by u; Whittle attends the same rows for every head, so the
    block score is sum over heads of softmax over the blocks of u[h] (the exact scores' sum
    over heads of the softmax, with a block's bound for its rows). The method is then
    "decode_topk_bounds".

    info["steps"]: one entry per step: (token fed, next argmax, its margin over the second,
    [per layer: (sorted prompt positions attended, topk_gap of the block scores)])."""
    c = m.cfg
    L = len(trace.tokens)
    params = dict(keep=keep, block=block, steps=steps)
    if bounds:
        params["bounds"] = True
    res = PruneResult("decode_topk_bounds" if bounds else "decode_topk", params, L)
    pos = np.arange(L)
    for _ in range(c.n_layer):
        res.kv.append([pos.copy() for _ in range(c.n_head_kv)])
        res.gap.append([math.inf] * c.n_head_kv)
    # Every layer's prompt K (post-RoPE) and V, recomputed from the layer's input rows.
    ks, vs = [], []
    for il in range(c.n_layer):
        x_in = trace.hidden[il - 1] if il > 0 else m.tok_embd[trace.tokens]
        _, k, v = layer_qkv(m, il, x_in, pos)
        ks.append(k)
        vs.append(v)
    n_blocks = (L + block - 1) // block
    # Quest's bounds per layer: [n_blocks, n_head_kv, head_dim] minima and maxima, stored as
    # f16 rounded outward as Whittle stores them.
    lo = [f16_outward(np.stack([k[b * block:(b + 1) * block].min(axis=0) for b in range(n_blocks)]), up=False)
          for k in ks]
    hi = [f16_outward(np.stack([k[b * block:(b + 1) * block].max(axis=0) for b in range(n_blocks)]), up=True)
          for k in ks]
    budget = floor_budget(keep, L)
    kb = n_blocks if budget >= L else max(1, budget // block)
    G = c.n_head // c.n_head_kv
    last = logits_of(m, trace.hidden[-1][-1:])[0]
    token = int(np.argsort(-last, kind="stable")[0])
    out = []
    for s in range(steps):
        p = L + s
        x = m.tok_embd[[token]].copy()
        layers = []
        for il in range(c.n_layer):
            q, k, v = layer_qkv(m, il, x, np.array([p]))
            ks[il] = np.concatenate([ks[il], k])
            vs[il] = np.concatenate([vs[il], v])
            K, V = ks[il], vs[il]
            kv_of = np.arange(c.n_head) // G                           # query head -> KV head
            z = np.einsum("hd,hkd->hk", q[0], K.transpose(1, 0, 2)[kv_of]) / math.sqrt(c.head_dim_k)
            prob = np.exp(z - z.max(axis=1, keepdims=True))
            prob /= prob.sum(axis=1, keepdims=True)
            if bounds:
                qh = q[0][:, None, :]                                   # [H, 1, d]
                u = np.maximum(qh * lo[il].transpose(1, 0, 2)[kv_of], qh * hi[il].transpose(1, 0, 2)[kv_of])
                u = u.sum(axis=2) / math.sqrt(c.head_dim_k)             # [H, n_blocks]
                pu = np.exp(u - u.max(axis=1, keepdims=True))
                bs = (pu / pu.sum(axis=1, keepdims=True)).sum(axis=0)
            else:
                score = prob[:, :L].sum(axis=0)
                bs = np.array([score[b * block:(b + 1) * block].max() for b in range(n_blocks)])
            chosen = np.sort(topk_lower_first(bs, kb))
            rows = np.concatenate([np.arange(b * block, min(L, (b + 1) * block)) for b in chosen])
            layers.append((rows.copy(), topk_gap(bs, kb)))
            rows = np.concatenate([rows, np.arange(L, p + 1)])
            zr = z[:, rows]
            pr_ = np.exp(zr - zr.max(axis=1, keepdims=True))
            pr_ /= pr_.sum(axis=1, keepdims=True)
            o = np.einsum("hk,hkd->hd", pr_, V[rows].transpose(1, 0, 2)[kv_of]).reshape(1, -1)
            x = layer_tail(m, il, x, o)
        lg = logits_of(m, x)[0]
        o2 = np.argsort(-lg, kind="stable")
        out.append((token, int(o2[0]), float(lg[o2[0]] - lg[o2[1]]), layers))
        token = int(o2[0])
    res.info["steps"] = out
    return res
