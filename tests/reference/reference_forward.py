#!/usr/bin/env python3
"""Independent NumPy reference forward pass for Llama-family GGUF models.

This file exists only to produce fixture files that the C++ engine is checked
against. It shares no code with the engine: GGUF parsing and dequantization come
from the `gguf` PyPI package (gguf.GGUFReader, gguf.quants.dequantize), and all
arithmetic after dequantization is done in float64.

Supported architectures: "llama", "qwen2", "qwen3", "smollm3" (llama without rope in
layers 3, 7, 11, ...), "gemma3" and "phi3" (HF's Phi3: one qkv matrix whose rows are q, k
then v, one gate_up matrix whose first half is the gate, neox rope with LongRoPE).

  * token embedding (token_embd.weight)
  * per layer: RMSNorm -> Q/K/V projections (+ q/k/v biases when present,
    as in qwen2) -> (qwen3: RMSNorm of each query and key head, weights
    attn_q_norm / attn_k_norm over head_dim, as HF's Qwen3Attention) -> RoPE ->
    causal grouped-query attention -> output projection
    -> residual -> RMSNorm -> SwiGLU FFN (down(silu(gate(x)) * up(x))) -> residual
  * final RMSNorm, output matrix (output.weight, or tied token_embd.weight)

RoPE: llama GGUF files have the Q/K rows permuted by the converter, so "llama"
uses the "normal" rope that rotates ADJACENT pairs (x[2i], x[2i+1]); "qwen2" and "qwen3" use
the "neox" rope that rotates (x[i], x[i + n_rot/2]). theta_i = base^(-2i/n_rot).
Scaling: llama3 (either a rope_freqs.weight tensor of per-frequency divisors or
<arch>.rope.scaling.type == "llama3" with factor / low_freq_factor /
high_freq_factor / original_context_length), linear (positions / factor) and yarn
(factor, original_context_length, yarn_beta_fast / yarn_beta_slow: HF transformers'
_compute_yarn_parameters, its attention factor 0.1 ln(factor) + 1 on cos and sin) and
LongRoPE (rope_factors_short / rope_factors_long per-pair divisors, the long ones where the
context is longer than original_context_length, as llama.cpp picks them by n_ctx: HF picks
by the sequence length; rope.scaling.attn_factor on cos and sin).

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

SUPPORTED_ARCHS = ("llama", "qwen2", "qwen3", "smollm3", "gemma3", "phi3")
# smollm3: llama (the converter permutes Q and K as for llama) whose layers il with
# (il + 1) % 4 == 0 have no rope: HF's no_rope_layers with its no_rope_layer_interval 4.
NO_ROPE_STEP = {"smollm3": 4}
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
    yarn_beta_fast: float = 32.0
    yarn_beta_slow: float = 1.0
    yarn_attn_factor: float = 1.0
    n_vocab: int = 0
    # gemma3 (HF's Gemma3TextModel): layers il with (il + 1) % swa_pattern != 0 attend only keys
    # with q - k < swa_window and rope with base rope_base_swa, unscaled.
    swa_window: int = 0
    swa_pattern: int = 0
    rope_base_swa: float = 10000.0
    query_pre_attn_scalar: float = 0.0
    rope_attn_factor: float = 1.0  # rope.scaling.attn_factor: on cos and sin (LongRoPE's)


@dataclass
class Model:
    cfg: Config
    tok_embd: np.ndarray                  # (n_vocab, n_embd) float64
    output: np.ndarray                    # (n_vocab, n_embd) float64 (may alias tok_embd)
    output_norm: np.ndarray               # (n_embd,)
    layers: list = field(default_factory=list)  # list of dict name -> float64 array
    rope_freqs: np.ndarray | None = None  # (n_rot/2,) per-frequency divisors, if present
    rope_factors_short: np.ndarray | None = None  # LongRoPE's divisors up to the original context
    rope_factors_long: np.ndarray | None = None   # and beyond it
    tied_output: bool = False
    output_quantized: bool = False        # output matrix stored as a block-quantized type
    tokens: list | None = None
    token_types: list | None = None
    merges: list | None = None
    pre: str | None = None
    add_bos: bool | None = None           # tokenizer.ggml.add_bos_token (None when absent)
    bos_id: int | None = None


def _tensor_f64(t) -> np.ndarray:
    """Dequantize a ReaderTensor to float64 with numpy shape (ne1, ne0) / (ne0,)."""
    qtype = gguf.GGMLQuantizationType(int(t.tensor_type))
    data = np.asarray(t.data)
    x = dequantize(data, qtype)
    ne = [int(v) for v in t.shape]  # GGUF order: ne0 first
    expected = tuple(reversed(ne))
    x = np.asarray(x, dtype=np.float64).reshape(expected)
    return x


# Weight types whose matmul quantizes the activation rows to int8 in the engine's fast
# mode (everything except F32/F16/BF16).
QUANTIZED_WEIGHT_TYPES = frozenset({
    gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q4_1,
    gguf.GGMLQuantizationType.Q5_0, gguf.GGMLQuantizationType.Q5_1,
    gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_K,
    gguf.GGMLQuantizationType.Q5_K, gguf.GGMLQuantizationType.Q6_K,
})
FLOAT_WEIGHT_TYPES = frozenset({
    gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16,
    gguf.GGMLQuantizationType.BF16,
})


def _is_quantized(t) -> bool:
    qtype = gguf.GGMLQuantizationType(int(t.tensor_type))
    if qtype in QUANTIZED_WEIGHT_TYPES:
        return True
    if qtype in FLOAT_WEIGHT_TYPES:
        return False
    raise ValueError(f"{t.name}: unsupported matmul weight type {qtype.name}")


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
        rope_type=ROPE_NORMAL if arch in ("llama", "smollm3") else ROPE_NEOX,
    )
    if arch == "gemma3":
        cfg.swa_window = int(kv("attention.sliding_window"))
        cfg.swa_pattern = int(kv("attention.sliding_window_pattern", 6, required=False))
        cfg.rope_base_swa = float(kv("rope.freq_base_swa", 10000.0, required=False))
        # HF's query_pre_attn_scalar is not in GGUF: head_dim, but n_embd / n_head for the
        # 27B (62 layers), as llama.cpp takes it.
        cfg.query_pre_attn_scalar = float(n_embd // n_head if cfg.n_layer == 62 else head_dim_k)
    cfg.rope_attn_factor = float(kv("rope.scaling.attn_factor", 1.0, required=False))
    stype = kv("rope.scaling.type", None, required=False)
    if stype is not None:
        cfg.rope_scaling_type = str(stype)
        cfg.rope_scaling_factor = float(kv("rope.scaling.factor", 1.0, required=False))
        cfg.rope_low_freq_factor = float(kv("rope.scaling.low_freq_factor", 1.0, required=False))
        cfg.rope_high_freq_factor = float(kv("rope.scaling.high_freq_factor", 4.0, required=False))
        cfg.rope_orig_ctx = int(kv("rope.scaling.original_context_length",
                                   8192 if cfg.rope_scaling_type != "yarn" else kv("context_length"),
                                   required=False))
        cfg.yarn_beta_fast = float(kv("rope.scaling.yarn_beta_fast", 32.0, required=False))
        cfg.yarn_beta_slow = float(kv("rope.scaling.yarn_beta_slow", 1.0, required=False))
        cfg.yarn_attn_factor = float(kv("rope.scaling.yarn_attn_factor", 1.0, required=False))
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
              output_norm=get("output_norm.weight"), tied_output=tied,
              output_quantized=_is_quantized(tensors["token_embd.weight" if tied else "output.weight"]))
    if "rope_freqs.weight" in tensors:
        m.rope_freqs = get("rope_freqs.weight").reshape(-1)
    if "rope_factors_long.weight" in tensors:
        m.rope_factors_short = get("rope_factors_short.weight").reshape(-1)
        m.rope_factors_long = get("rope_factors_long.weight").reshape(-1)
        if stype is None:
            cfg.rope_orig_ctx = int(kv("rope.scaling.original_context_length", kv("context_length"), required=False))
    for il in range(cfg.n_layer):
        p = f"blk.{il}."
        L = {}
        names = ["attn_norm", "attn_output", "ffn_norm", "ffn_down"]
        if arch == "phi3":  # HF's qkv_proj (q, k, v rows) and gate_up_proj (gate rows, then up rows)
            q_rows, kv_rows = n_head * head_dim_k, n_head_kv * head_dim_k
            qkv, gate_up = get(p + "attn_qkv.weight"), get(p + "ffn_up.weight")
            L["attn_q"], L["attn_k"], L["attn_v"] = np.split(qkv, [q_rows, q_rows + kv_rows])
            L["ffn_gate"], L["ffn_up"] = np.split(gate_up, 2)
            for n, t in (("attn_q", "attn_qkv"), ("attn_k", "attn_qkv"), ("attn_v", "attn_qkv"),
                         ("ffn_gate", "ffn_up"), ("ffn_up", "ffn_up")):
                L[n + ".quantized"] = _is_quantized(tensors[p + t + ".weight"])
        else:
            names += ["attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"]
        for n in names:
            L[n] = get(p + n + ".weight")
            if n not in ("attn_norm", "ffn_norm"):
                L[n + ".quantized"] = _is_quantized(tensors[p + n + ".weight"])
        for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
            if p + n + ".bias" in tensors:
                L[n + ".bias"] = get(p + n + ".bias")
        for n in ("attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm"):
            if p + n + ".weight" in tensors:
                L[n] = get(p + n + ".weight").reshape(-1)
        if arch in ("qwen3", "gemma3") and "attn_q_norm" not in L:
            raise KeyError(f"{arch} without {p}attn_q_norm.weight")
        if arch == "gemma3" and "post_ffw_norm" not in L:
            raise KeyError(f"gemma3 without {p}post_ffw_norm.weight")
        m.layers.append(L)

    m.tokens = _field_value(reader, "tokenizer.ggml.tokens")
    m.token_types = _field_value(reader, "tokenizer.ggml.token_type")
    m.merges = _field_value(reader, "tokenizer.ggml.merges")
    m.pre = _field_value(reader, "tokenizer.ggml.pre")
    add_bos = _field_value(reader, "tokenizer.ggml.add_bos_token")
    m.add_bos = None if add_bos is None else bool(add_bos)
    bos = _field_value(reader, "tokenizer.ggml.bos_token_id")
    m.bos_id = None if bos is None else int(bos)
    return m


# ----------------------------------------------------------------------------- math

def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * w


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """HF's gelu_pytorch_tanh (Gemma 3's hidden_activation)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def yarn_frequencies(c: Config) -> np.ndarray:
    """YaRN's per-pair frequencies, as HF transformers' _compute_yarn_parameters makes them:
    pairs that turn more than beta_fast times over the original context keep their frequency
    (extrapolation), pairs that turn fewer than beta_slow times are divided by the factor
    (interpolation), and a linear ramp over the pair index blends the two between."""
    d, base, factor = c.n_rot, c.rope_base, c.rope_scaling_factor

    def correction_dim(rotations: float) -> float:  # the pair index that turns `rotations` times
        return d * math.log(c.rope_orig_ctx / (rotations * 2.0 * math.pi)) / (2.0 * math.log(base))

    low = max(math.floor(correction_dim(c.yarn_beta_fast)), 0)
    high = min(math.ceil(correction_dim(c.yarn_beta_slow)), d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrapolation = 1.0 - ramp  # the weight of the unscaled frequency
    freqs = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    return freqs / factor * (1.0 - extrapolation) + freqs * extrapolation


def yarn_attention_factor(c: Config) -> float:
    """YaRN's factor on cos and sin (so on q.k twice over); 1 without YaRN. A file's
    rope.scaling.yarn_attn_factor multiplies it, as llama.cpp's rope does."""
    if c.rope_scaling_type != "yarn":
        return 1.0
    m = 0.1 * math.log(c.rope_scaling_factor) + 1.0 if c.rope_scaling_factor > 1.0 else 1.0
    return m * c.yarn_attn_factor


def rope_frequencies(m: Model, n_ctx: int | None = None) -> tuple[np.ndarray, float]:
    """Per-pair angular frequencies (n_rot/2,) and a position multiplier, for a context of
    n_ctx tokens (LongRoPE's choice of factors)."""
    c = m.cfg
    i = np.arange(c.n_rot // 2, dtype=np.float64)
    freqs = c.rope_base ** (-2.0 * i / c.n_rot)
    pos_scale = 1.0
    if m.rope_factors_long is not None:
        if n_ctx is None:
            raise ValueError("LongRoPE's factors depend on the context's size: give n_ctx")
        long = n_ctx > c.rope_orig_ctx
        freqs = freqs / (m.rope_factors_long if long else m.rope_factors_short).astype(np.float64)
    elif m.rope_freqs is not None:
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
    elif c.rope_scaling_type == "yarn":
        freqs = yarn_frequencies(c)
    elif c.rope_scaling_type not in ("none", ""):
        raise ValueError(f"unsupported rope scaling {c.rope_scaling_type!r}")
    return freqs, pos_scale


def apply_rope(x: np.ndarray, positions: np.ndarray, freqs: np.ndarray, pos_scale: float,
               n_rot: int, mode: str, mscale: float = 1.0) -> np.ndarray:
    """x: (N, H, D). Rotates the first n_rot dims of each head; cos and sin are multiplied
    by mscale (YaRN's attention factor, as HF's rotary embedding applies it)."""
    theta = (positions.astype(np.float64) * pos_scale)[:, None] * freqs[None, :]  # (N, n_rot/2)
    cos = np.cos(theta)[:, None, :] * mscale
    sin = np.sin(theta)[:, None, :] * mscale
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


ACT_QUANT_MODES = (None, "none", "int8")


def act_int8_roundtrip(x: np.ndarray) -> np.ndarray:
    """The engine's int8 activation quantization of each row of x, dequantized to float64.

    Emulates kernels/cpu/quant.cpp quantize_act_row_ref (which every SIMD quantizer must
    reproduce byte for byte): the engine's activations are f32, so x is first rounded to
    f32; then per block of 32 along the last axis, in f32 arithmetic,
        amax = max |x|,  d = amax / 127,  id = d != 0 ? 1 / d : 0,
        q = round-to-nearest-even(x * id)   (clamped to [-127, 127])
    and the step d is kept as f32 (it is stored as f32 in the activation layout, not f16).
    The returned row is q * d in float64. The matmul itself is then exact up to float
    rounding: per block/lane the engine computes isum * (d_w dx) + m_w * dx * sum(q), which
    is sum((d_w q_w + m_w) * q_x dx) = sum(w_dequant * x'), for every weight format (Q8_0's
    +128 offset for unsigned dot products is folded back into m: m = -128 d_w).
    """
    shape = x.shape
    k = shape[-1]
    if k % 32:
        raise ValueError(f"activation row length {k} is not a multiple of 32")
    xf = np.asarray(x, dtype=np.float32).reshape(-1, k // 32, 32)
    amax = np.max(np.abs(xf), axis=-1, keepdims=True)                 # f32, exact
    d = (amax / np.float32(127.0)).astype(np.float32)                # f32 division
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    v = (xf * inv).astype(np.float32)                                # f32 product
    v = np.clip(v, np.float32(-127.0), np.float32(127.0))
    q = np.rint(v)                                                   # ties to even
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(shape)


def forward(m: Model, tokens, act_quant: str | None = None, rows=None, n_ctx: int | None = None) -> np.ndarray:
    """Logits (N, n_vocab) float64 for every position of `tokens` (positions 0..N-1), in a
    context of n_ctx tokens (default N; only LongRoPE depends on it).

    rows: only these positions' logits (len(rows), n_vocab) -- the final norm and the
    output matrix are applied to those rows alone (perplexity needs half of them).

    act_quant="int8" emulates the engine's fast matmul mode: the input rows of every
    matmul whose weight is block-quantized (Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q4_K/Q5_K/Q6_K, not
    F32/F16/BF16) are replaced by their int8 round trip (act_int8_roundtrip) first.
    """
    if act_quant not in ACT_QUANT_MODES:
        raise ValueError(f"unsupported act_quant {act_quant!r}")
    int8 = act_quant == "int8"

    def mm(a: np.ndarray, w: np.ndarray, quantized: bool) -> np.ndarray:
        if int8 and quantized:
            a = act_int8_roundtrip(a)
        return a @ w.T

    c = m.cfg
    toks = np.asarray(tokens, dtype=np.int64)
    N = len(toks)
    pos = np.arange(N)
    freqs, pos_scale = rope_frequencies(m, N if n_ctx is None else n_ctx)
    mscale = yarn_attention_factor(c) * c.rope_attn_factor
    G = c.n_head // c.n_head_kv
    scale = 1.0 / math.sqrt(c.query_pre_attn_scalar or c.head_dim_k)
    causal = np.triu(np.ones((N, N), dtype=bool), k=1)  # [q, k] True where k > q
    # gemma3's sliding layers: also masked where q - k >= window (HF's sliding_window_mask).
    qi, ki = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    outside_window = causal | (qi - ki >= c.swa_window) if c.swa_window > 0 else causal
    i_half = np.arange(c.n_rot // 2, dtype=np.float64)
    freqs_swa = c.rope_base_swa ** (-2.0 * i_half / c.n_rot)

    x = m.tok_embd[toks].copy()
    if c.arch == "gemma3":  # Gemma3ScaledWordEmbedding
        x = x * math.sqrt(c.n_embd)
    step = NO_ROPE_STEP.get(c.arch, 0)
    for il, L in enumerate(m.layers):
        swa = c.swa_window > 0 and (c.swa_pattern <= 0 or (il + 1) % c.swa_pattern != 0)
        h = rms_norm(x, L["attn_norm"], c.rms_eps)
        q = mm(h, L["attn_q"], L["attn_q.quantized"])
        k = mm(h, L["attn_k"], L["attn_k.quantized"])
        v = mm(h, L["attn_v"], L["attn_v.quantized"])
        if "attn_q.bias" in L:
            q = q + L["attn_q.bias"]
        if "attn_k.bias" in L:
            k = k + L["attn_k.bias"]
        if "attn_v.bias" in L:
            v = v + L["attn_v.bias"]
        q = q.reshape(N, c.n_head, c.head_dim_k)
        k = k.reshape(N, c.n_head_kv, c.head_dim_k)
        v = v.reshape(N, c.n_head_kv, c.head_dim_v)
        if "attn_q_norm" in L:  # qwen3: each head's query and key normed before rope
            q = rms_norm(q, L["attn_q_norm"], c.rms_eps)
            k = rms_norm(k, L["attn_k_norm"], c.rms_eps)
        if swa:  # the local rope: its own base, no scaling
            q = apply_rope(q, pos, freqs_swa, 1.0, c.n_rot, c.rope_type)
            k = apply_rope(k, pos, freqs_swa, 1.0, c.n_rot, c.rope_type)
        elif step == 0 or (il + 1) % step != 0:
            q = apply_rope(q, pos, freqs, pos_scale, c.n_rot, c.rope_type, mscale)
            k = apply_rope(k, pos, freqs, pos_scale, c.n_rot, c.rope_type, mscale)
        # head hq uses kv head hq // G
        qg = q.reshape(N, c.n_head_kv, G, c.head_dim_k)
        s = np.einsum("qhgd,khd->hgqk", qg, k) * scale
        s = np.where((outside_window if swa else causal)[None, None], -np.inf, s)
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p = p / p.sum(axis=-1, keepdims=True)
        o = np.einsum("hgqk,khd->qhgd", p, v).reshape(N, c.n_head * c.head_dim_v)
        o = mm(o, L["attn_output"], L["attn_output.quantized"])
        if "attn_output.bias" in L:
            o = o + L["attn_output.bias"]
        if "post_attention_norm" in L:  # gemma3: each block's output normed before the add
            o = rms_norm(o, L["post_attention_norm"], c.rms_eps)
        x = x + o

        h = rms_norm(x, L["ffn_norm"], c.rms_eps)
        g = mm(h, L["ffn_gate"], L["ffn_gate.quantized"])
        u = mm(h, L["ffn_up"], L["ffn_up.quantized"])
        act = gelu_tanh(g) if c.arch == "gemma3" else silu(g)
        f = mm(act * u, L["ffn_down"], L["ffn_down.quantized"])
        if "post_ffw_norm" in L:
            f = rms_norm(f, L["post_ffw_norm"], c.rms_eps)
        x = x + f

    if rows is not None:
        x = x[np.asarray(rows, dtype=np.int64)]
    x = rms_norm(x, m.output_norm, c.rms_eps)
    return mm(x, m.output, m.output_quantized)


def greedy(m: Model, tokens, n_steps: int, act_quant: str | None = None, n_ctx: int | None = None) -> list[int]:
    """n_steps greedy tokens after `tokens`, in a context of n_ctx tokens (default: the prompt
    and the steps)."""
    toks = list(tokens)
    out = []
    n_ctx = len(toks) + n_steps if n_ctx is None else n_ctx
    for _ in range(n_steps):
        logits = forward(m, toks, act_quant, n_ctx=n_ctx)
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
    ap.add_argument("--act-quant", choices=("none", "int8"), default="none",
                    help="int8: emulate the engine's fast mode (int8 activations before "
                         "matmuls with block-quantized weights)")
    ap.add_argument("--n-ctx", type=int, help="the context's size (LongRoPE's factors; default: the tokens)")
    args = ap.parse_args(argv)

    m = load_model(args.model)
    if args.tokens is not None:
        toks = args.tokens
    elif args.text is not None:
        toks = build_tokenizer(m).encode(args.text.encode().decode("unicode_escape")).ids
    else:
        ap.error("need --tokens or --text")
    print(f"arch={m.cfg.arch} n_tokens={len(toks)} tokens={toks}")
    logits = forward(m, toks, args.act_quant, n_ctx=args.n_ctx)
    print(f"last argmax={int(np.argmax(logits[-1]))}")
    if args.out:
        write_fixture(args.out, args.model_name or Path(args.model).name, toks, logits)
    if args.greedy:
        cont = greedy(m, toks, args.greedy, args.act_quant, args.n_ctx)
        print("greedy ids:", cont)
        if m.tokens:
            try:
                print("greedy text:", repr(build_tokenizer(m).decode(cont, skip_special_tokens=False)))
            except Exception as e:  # tokenizer is optional for the forward
                print("decode failed:", e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
