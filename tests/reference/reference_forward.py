#!/usr/bin/env python3
"""Independent NumPy reference forward pass for Llama-family GGUF models.

This file exists only to produce fixture files that the C++ engine is checked
against. It shares no code with the engine: GGUF parsing and dequantization come
from the `gguf` PyPI package (gguf.GGUFReader, gguf.quants.dequantize), and all
arithmetic after dequantization is done in float64.

Supported architectures: "llama" and "qwen2".

  * token embedding (token_embd.weight)
  * per layer: RMSNorm -> Q/K/V projections (+ q/k/v biases when present,
    as in qwen2) -> RoPE -> causal grouped-query attention -> output projection
    -> residual -> RMSNorm -> SwiGLU FFN (down(silu(gate(x)) * up(x))) -> residual
  * final RMSNorm, output matrix (output.weight, or tied token_embd.weight)

RoPE: llama GGUF files have the Q/K rows permuted by the converter, so "llama"
uses the "normal" rope that rotates ADJACENT pairs (x[2i], x[2i+1]); "qwen2" uses
the "neox" rope that rotates (x[i], x[i + n_rot/2]). theta_i = base^(-2i/n_rot).
Scaling: llama3 (either a rope_freqs.weight tensor of per-frequency divisors or
<arch>.rope.scaling.type == "llama3" with factor / low_freq_factor /
high_freq_factor / original_context_length) and linear (positions / factor).

Command line:
  reference_forward.py MODEL.gguf --tokens 1 2 3 [--greedy N] [--out X.ref --model-name NAME]
  reference_forward.py MODEL.gguf --text "..." [--chatml]   (tokenizes with HF `tokenizers`)
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import gguf
from gguf.quants import dequantize

SUPPORTED_ARCHS = ("llama", "qwen2")
ROPE_NORMAL = "normal"  # adjacent pairs (x[2i], x[2i+1])
ROPE_NEOX = "neox"      # split halves (x[i], x[i + n_rot/2])

FIXTURE_MAGIC = "whittle-reference 1"
SUBSET_SIZE = 64
SUBSET_SEED = 20240601
TOP_K = 8


# ----------------------------------------------------------------------------- GGUF access

def _field_value(reader: gguf.GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


@dataclass
class Config:
    arch: str
    n_layer: int
    n_embd: int
    n_ff: int
    n_head: int
    n_head_kv: int
    head_dim_k: int
    head_dim_v: int
    n_rot: int
    rms_eps: float
    rope_base: float
    rope_type: str
    rope_scaling_type: str = "none"
    rope_scaling_factor: float = 1.0
    rope_low_freq_factor: float = 1.0
    rope_high_freq_factor: float = 4.0
    rope_orig_ctx: int = 8192
    n_vocab: int = 0


@dataclass
class Model:
    cfg: Config
    tok_embd: np.ndarray                  # (n_vocab, n_embd) float64
    output: np.ndarray                    # (n_vocab, n_embd) float64 (may alias tok_embd)
    output_norm: np.ndarray               # (n_embd,)
    layers: list = field(default_factory=list)  # list of dict name -> float64 array
    rope_freqs: np.ndarray | None = None  # (n_rot/2,) per-frequency divisors, if present
    tied_output: bool = False
    tokens: list | None = None
    token_types: list | None = None
    merges: list | None = None
    pre: str | None = None


def _tensor_f64(t) -> np.ndarray:
    """Dequantize a ReaderTensor to float64 with numpy shape (ne1, ne0) / (ne0,)."""
    qtype = gguf.GGMLQuantizationType(int(t.tensor_type))
    data = np.asarray(t.data)
    x = dequantize(data, qtype)
    ne = [int(v) for v in t.shape]  # GGUF order: ne0 first
    expected = tuple(reversed(ne))
    x = np.asarray(x, dtype=np.float64).reshape(expected)
    return x


def load_model(path: str | Path) -> Model:
    reader = gguf.GGUFReader(str(path))
    arch = _field_value(reader, "general.architecture")
    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"unsupported architecture {arch!r}")

    def kv(name, default=None, required=True):
        v = _field_value(reader, f"{arch}.{name}", default)
        if v is None and required:
            raise KeyError(f"missing metadata {arch}.{name}")
        return v

    n_embd = int(kv("embedding_length"))
    n_head = int(kv("attention.head_count"))
    n_head_kv = int(kv("attention.head_count_kv", n_head))
    head_dim_k = int(kv("attention.key_length", n_embd // n_head))
    head_dim_v = int(kv("attention.value_length", n_embd // n_head))
    cfg = Config(
        arch=arch,
        n_layer=int(kv("block_count")),
        n_embd=n_embd,
        n_ff=int(kv("feed_forward_length")),
        n_head=n_head,
        n_head_kv=n_head_kv,
        head_dim_k=head_dim_k,
        head_dim_v=head_dim_v,
        n_rot=int(kv("rope.dimension_count", head_dim_k)),
        rms_eps=float(kv("attention.layer_norm_rms_epsilon")),
        rope_base=float(kv("rope.freq_base", 10000.0)),
        rope_type=ROPE_NORMAL if arch == "llama" else ROPE_NEOX,
    )
    stype = kv("rope.scaling.type", None, required=False)
    if stype is not None:
        cfg.rope_scaling_type = str(stype)
        cfg.rope_scaling_factor = float(kv("rope.scaling.factor", 1.0, required=False))
        cfg.rope_low_freq_factor = float(kv("rope.scaling.low_freq_factor", 1.0, required=False))
        cfg.rope_high_freq_factor = float(kv("rope.scaling.high_freq_factor", 4.0, required=False))
        cfg.rope_orig_ctx = int(kv("rope.scaling.original_context_length", 8192, required=False))
    else:
        legacy = kv("rope.scale_linear", None, required=False)
        if legacy is not None and float(legacy) != 1.0:
            cfg.rope_scaling_type = "linear"
            cfg.rope_scaling_factor = float(legacy)

    tensors = {t.name: t for t in reader.tensors}

    def get(name):
        return _tensor_f64(tensors[name])

    tok_embd = get("token_embd.weight")
    cfg.n_vocab = tok_embd.shape[0]
    tied = "output.weight" not in tensors
    output = tok_embd if tied else get("output.weight")
    m = Model(cfg=cfg, tok_embd=tok_embd, output=output,
              output_norm=get("output_norm.weight"), tied_output=tied)
    if "rope_freqs.weight" in tensors:
        m.rope_freqs = get("rope_freqs.weight").reshape(-1)
    for il in range(cfg.n_layer):
        p = f"blk.{il}."
        L = {}
        for n in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                  "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
            L[n] = get(p + n + ".weight")
        for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
            if p + n + ".bias" in tensors:
                L[n + ".bias"] = get(p + n + ".bias")
        m.layers.append(L)

    m.tokens = _field_value(reader, "tokenizer.ggml.tokens")
    m.token_types = _field_value(reader, "tokenizer.ggml.token_type")
    m.merges = _field_value(reader, "tokenizer.ggml.merges")
    m.pre = _field_value(reader, "tokenizer.ggml.pre")
    return m


# ----------------------------------------------------------------------------- math

def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * w


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def rope_frequencies(m: Model) -> tuple[np.ndarray, float]:
    """Per-pair angular frequencies (n_rot/2,) and a position multiplier."""
    c = m.cfg
    i = np.arange(c.n_rot // 2, dtype=np.float64)
    freqs = c.rope_base ** (-2.0 * i / c.n_rot)
    pos_scale = 1.0
    if m.rope_freqs is not None:
        # llama3 via precomputed per-frequency divisors (what convert_hf_to_gguf writes)
        freqs = freqs / m.rope_freqs.astype(np.float64)
    elif c.rope_scaling_type == "llama3":
        factor = c.rope_scaling_factor
        low, high, orig = c.rope_low_freq_factor, c.rope_high_freq_factor, float(c.rope_orig_ctx)
        low_wavelen = orig / low
        high_wavelen = orig / high
        out = np.empty_like(freqs)
        for j, f in enumerate(freqs):
            wavelen = 2.0 * math.pi / f
            if wavelen < high_wavelen:
                out[j] = f
            elif wavelen > low_wavelen:
                out[j] = f / factor
            else:
                smooth = (orig / wavelen - low) / (high - low)
                out[j] = (1.0 - smooth) * f / factor + smooth * f
        freqs = out
    elif c.rope_scaling_type == "linear":
        pos_scale = 1.0 / c.rope_scaling_factor
    elif c.rope_scaling_type not in ("none", ""):
        raise ValueError(f"unsupported rope scaling {c.rope_scaling_type!r}")
    return freqs, pos_scale


def apply_rope(x: np.ndarray, positions: np.ndarray, freqs: np.ndarray, pos_scale: float,
               n_rot: int, mode: str) -> np.ndarray:
    """x: (N, H, D). Rotates the first n_rot dims of each head."""
    theta = (positions.astype(np.float64) * pos_scale)[:, None] * freqs[None, :]  # (N, n_rot/2)
    cos = np.cos(theta)[:, None, :]
    sin = np.sin(theta)[:, None, :]
    y = x.copy()
    if mode == ROPE_NORMAL:
        x0 = x[..., 0:n_rot:2]
        x1 = x[..., 1:n_rot:2]
        y[..., 0:n_rot:2] = x0 * cos - x1 * sin
        y[..., 1:n_rot:2] = x0 * sin + x1 * cos
    else:
        h = n_rot // 2
        x0 = x[..., 0:h]
        x1 = x[..., h:n_rot]
        y[..., 0:h] = x0 * cos - x1 * sin
        y[..., h:n_rot] = x0 * sin + x1 * cos
    return y


def forward(m: Model, tokens) -> np.ndarray:
    """Logits (N, n_vocab) float64 for every position of `tokens` (positions 0..N-1)."""
    c = m.cfg
    toks = np.asarray(tokens, dtype=np.int64)
    N = len(toks)
    pos = np.arange(N)
    freqs, pos_scale = rope_frequencies(m)
    G = c.n_head // c.n_head_kv
    scale = 1.0 / math.sqrt(c.head_dim_k)
    causal = np.triu(np.ones((N, N), dtype=bool), k=1)  # [q, k] True where k > q

    x = m.tok_embd[toks].copy()
    for L in m.layers:
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
        q = q.reshape(N, c.n_head, c.head_dim_k)
        k = k.reshape(N, c.n_head_kv, c.head_dim_k)
        v = v.reshape(N, c.n_head_kv, c.head_dim_v)
        q = apply_rope(q, pos, freqs, pos_scale, c.n_rot, c.rope_type)
        k = apply_rope(k, pos, freqs, pos_scale, c.n_rot, c.rope_type)
        # head hq uses kv head hq // G
        qg = q.reshape(N, c.n_head_kv, G, c.head_dim_k)
        s = np.einsum("qhgd,khd->hgqk", qg, k) * scale
        s = np.where(causal[None, None], -np.inf, s)
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p = p / p.sum(axis=-1, keepdims=True)
        o = np.einsum("hgqk,khd->qhgd", p, v).reshape(N, c.n_head * c.head_dim_v)
        o = o @ L["attn_output"].T
        if "attn_output.bias" in L:
            o = o + L["attn_output.bias"]
        x = x + o

        h = rms_norm(x, L["ffn_norm"], c.rms_eps)
        g = h @ L["ffn_gate"].T
        u = h @ L["ffn_up"].T
        x = x + (silu(g) * u) @ L["ffn_down"].T

    x = rms_norm(x, m.output_norm, c.rms_eps)
    return x @ m.output.T


def greedy(m: Model, tokens, n_steps: int) -> list[int]:
    toks = list(tokens)
    out = []
    for _ in range(n_steps):
        logits = forward(m, toks)
        t = int(np.argmax(logits[-1]))
        out.append(t)
        toks.append(t)
    return out


# ----------------------------------------------------------------------------- tokenizer

def build_tokenizer(m: Model):
    """HF `tokenizers` byte-level BPE built from the GGUF vocab + merges."""
    from tokenizers import Tokenizer, AddedToken, decoders, models, pre_tokenizers
    vocab = {t: i for i, t in enumerate(m.tokens)}
    merges = [tuple(s.split(" ", 1)) for s in m.merges]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    if m.pre in ("smollm",):
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken(m.tokens[i], special=True, normalized=False)
                for i, ty in enumerate(m.token_types or []) if int(ty) == 3]
    if specials:
        tok.add_special_tokens(specials)
    return tok


# ----------------------------------------------------------------------------- fixtures

def subset_ids(n_vocab: int) -> list[int]:
    if n_vocab <= SUBSET_SIZE:
        return list(range(n_vocab))
    rng = np.random.default_rng(SUBSET_SEED)
    return sorted(int(i) for i in rng.choice(n_vocab, size=SUBSET_SIZE, replace=False))


def fixture_text(model_name: str, tokens, logits: np.ndarray) -> str:
    N, V = logits.shape
    sub = subset_ids(V)
    lines = [FIXTURE_MAGIC,
             f"model {model_name}",
             f"n_tokens {N}",
             "tokens " + " ".join(str(int(t)) for t in tokens),
             f"n_vocab {V}",
             f"subset {len(sub)} " + " ".join(str(i) for i in sub)]
    for p in range(N):
        row = logits[p]
        order = np.argsort(-row, kind="stable")
        top = order[:TOP_K]
        a = int(order[0])
        margin = float(row[order[0]] - row[order[1]])
        tops = " ".join(f"{int(i)}:{row[i]:.6e}" for i in top)
        subv = " ".join(f"{row[i]:.6e}" for i in sub)
        lines.append(f"row {p} argmax {a} margin {margin:.6e} top {tops} sub {subv}")
    return "\n".join(lines) + "\n"


def write_fixture(path: str | Path, model_name: str, tokens, logits: np.ndarray) -> None:
    Path(path).write_text(fixture_text(model_name, tokens, logits))


# ----------------------------------------------------------------------------- CLI

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--tokens", type=int, nargs="*")
    ap.add_argument("--text")
    ap.add_argument("--greedy", type=int, default=0, help="greedy continuation steps")
    ap.add_argument("--out", help="write a fixture file")
    ap.add_argument("--model-name", help="model line of the fixture (default: file name)")
    args = ap.parse_args(argv)

    m = load_model(args.model)
    if args.tokens is not None:
        toks = args.tokens
    elif args.text is not None:
        toks = build_tokenizer(m).encode(args.text.encode().decode("unicode_escape")).ids
    else:
        ap.error("need --tokens or --text")
    print(f"arch={m.cfg.arch} n_tokens={len(toks)} tokens={toks}")
    logits = forward(m, toks)
    print(f"last argmax={int(np.argmax(logits[-1]))}")
    if args.out:
        write_fixture(args.out, args.model_name or Path(args.model).name, toks, logits)
    if args.greedy:
        cont = greedy(m, toks, args.greedy)
        print("greedy ids:", cont)
        if m.tokens:
            try:
                print("greedy text:", repr(build_tokenizer(m).decode(cont, skip_special_tokens=False)))
            except Exception as e:  # tokenizer is optional for the forward
                print("decode failed:", e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
