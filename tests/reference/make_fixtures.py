#!/usr/bin/env python3
"""Regenerate every reference fixture under tests/data/reference/ deterministically.

  * writes the random-weight models tiny_llama3.gguf, tiny_llama3_freqs.gguf and
    tiny_qwen2.gguf (seeded numpy RNG, gguf.GGUFWriter) and their .ref fixtures;
  * writes smollm2_{chat,prose,code}.ref from the real SmolLM2-135M-Instruct
    Q4_1 model (skipped with a message when the model file is absent).

Usage: make_fixtures.py [--models-dir DIR] [--out-dir DIR] [--only tiny|smollm2]

With --act-quant int8 (e.g. --act-quant int8 --out-dir tests/data/reference_int8) it
instead writes fixtures that emulate the engine's fast matmul mode (int8 activations
before every matmul with a block-quantized weight; see reference_forward.forward). Those
reuse the models and the exact tokens of the float fixtures in --float-dir (default
tests/data/reference): nothing is re-tokenized and no GGUF is rewritten, and the "model"
line stays the same, so tiny_* models still resolve under tests/data/reference/.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT
from gguf.quants import quantize, dequantize

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import reference_forward as rf  # noqa: E402

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# ============================================================================ K-quant writers
# gguf.quants can dequantize but not quantize K-quants. These simple (non-optimal)
# quantizers produce valid blocks whose dequantized values approximate the input;
# exactness does not matter: the reference dequantizes the written bytes with
# gguf.quants.dequantize, so fixtures are exact by construction.

QK_K = 256


def _f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def _pack_k_scales(sc: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """6-bit scales/mins (nb, 8) -> the 12-byte get_scale_min layout."""
    sc = sc.astype(np.uint8)
    mn = mn.astype(np.uint8)
    out = np.zeros((sc.shape[0], 12), dtype=np.uint8)
    for j in range(4):
        out[:, j] = (sc[:, j] & 0x3F) | ((sc[:, j + 4] >> 4) << 6)
        out[:, j + 4] = (mn[:, j] & 0x3F) | ((mn[:, j + 4] >> 4) << 6)
        out[:, j + 8] = (sc[:, j + 4] & 0x0F) | ((mn[:, j + 4] & 0x0F) << 4)
    return out


def _k_scale_min(x: np.ndarray, qmax: int):
    """x: (nb, 8, 32). Returns d16, dmin16 (nb,), sc, mn (nb, 8) ints, q (nb, 8, 32)."""
    lo = np.minimum(x.min(axis=-1), 0.0)
    hi = x.max(axis=-1)
    scale = (hi - lo) / qmax
    mins = -lo
    d16 = _f16(scale.max(axis=-1) / 63.0)
    dm16 = _f16(mins.max(axis=-1) / 63.0)
    d = d16.astype(np.float32)[:, None]
    dm = dm16.astype(np.float32)[:, None]
    sc = np.clip(np.rint(np.divide(scale, d, out=np.zeros_like(scale), where=d > 0)), 0, 63)
    mn = np.clip(np.rint(np.divide(mins, dm, out=np.zeros_like(mins), where=dm > 0)), 0, 63)
    eff_d = (d * sc)[..., None]
    eff_m = (dm * mn)[..., None]
    q = np.divide(x + eff_m, eff_d, out=np.zeros_like(x), where=eff_d > 0)
    q = np.clip(np.rint(q), 0, qmax).astype(np.uint8)
    return d16, dm16, sc, mn, q


def quantize_q4_k(w: np.ndarray) -> np.ndarray:
    rows, n = w.shape
    x = w.astype(np.float32).reshape(-1, 8, 32)
    d16, dm16, sc, mn, q = _k_scale_min(x, 15)
    nb = x.shape[0]
    qs = np.zeros((nb, 4, 32), dtype=np.uint8)
    for c in range(4):
        qs[:, c, :] = q[:, 2 * c, :] | (q[:, 2 * c + 1, :] << 4)
    blk = np.concatenate([d16.view(np.uint8).reshape(nb, 2), dm16.view(np.uint8).reshape(nb, 2),
                          _pack_k_scales(sc, mn), qs.reshape(nb, 128)], axis=1)
    assert blk.shape[1] == 144
    return blk.reshape(rows, -1)


def quantize_q5_k(w: np.ndarray) -> np.ndarray:
    rows, n = w.shape
    x = w.astype(np.float32).reshape(-1, 8, 32)
    d16, dm16, sc, mn, q = _k_scale_min(x, 31)
    nb = x.shape[0]
    lo = q & 0x0F
    qs = np.zeros((nb, 4, 32), dtype=np.uint8)
    for c in range(4):
        qs[:, c, :] = lo[:, 2 * c, :] | (lo[:, 2 * c + 1, :] << 4)
    qh = np.zeros((nb, 32), dtype=np.uint8)
    for j in range(8):
        qh |= ((q[:, j, :] >> 4) & 1) << j
    blk = np.concatenate([d16.view(np.uint8).reshape(nb, 2), dm16.view(np.uint8).reshape(nb, 2),
                          _pack_k_scales(sc, mn), qh, qs.reshape(nb, 128)], axis=1)
    assert blk.shape[1] == 176
    return blk.reshape(rows, -1)


def quantize_q6_k(w: np.ndarray) -> np.ndarray:
    rows, n = w.shape
    x = w.astype(np.float32).reshape(-1, 16, 16)
    nb = x.shape[0]
    s = np.abs(x).max(axis=-1) / 31.0                     # (nb, 16)
    d16 = _f16(s.max(axis=-1) / 127.0)
    d = d16.astype(np.float32)[:, None]
    sc = np.clip(np.rint(np.divide(s, d, out=np.zeros_like(s), where=d > 0)), -128, 127)
    eff = (d * sc)[..., None]
    q = np.divide(x, eff, out=np.zeros_like(x), where=eff > 0)
    q = (np.clip(np.rint(q), -32, 31) + 32).astype(np.uint8).reshape(nb, 256)
    ql = np.zeros((nb, 128), dtype=np.uint8)
    qh = np.zeros((nb, 64), dtype=np.uint8)
    for e in range(256):
        h, r = divmod(e, 128)
        ql[:, h * 64 + r % 64] |= (q[:, e] & 0x0F) << (4 * (r // 64))
        qh[:, h * 32 + r % 32] |= ((q[:, e] >> 4) & 3) << (2 * (r // 32))
    blk = np.concatenate([ql, qh, sc.astype(np.int8).view(np.uint8), d16.view(np.uint8).reshape(nb, 2)],
                         axis=1)
    assert blk.shape[1] == 210
    return blk.reshape(rows, -1)


def encode_tensor(w: np.ndarray, qtype: QT):
    """Returns (array, raw_dtype) for GGUFWriter.add_tensor."""
    if qtype == QT.F32:
        return w.astype(np.float32), None
    if qtype == QT.F16:
        return w.astype(np.float16), None
    if qtype == QT.Q4_K:
        return quantize_q4_k(w), qtype
    if qtype == QT.Q5_K:
        return quantize_q5_k(w), qtype
    if qtype == QT.Q6_K:
        return quantize_q6_k(w), qtype
    return quantize(w.astype(np.float32), qtype), qtype  # BF16, Q8_0, Q4_0, Q4_1


def self_test_quantizers() -> None:
    """Round-trip check of the K-quant packers against gguf.quants.dequantize."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((8, 512)).astype(np.float32) * 0.05
    for qt, tol in ((QT.Q4_K, 0.15), (QT.Q5_K, 0.08), (QT.Q6_K, 0.04)):
        data, _ = encode_tensor(w, qt)
        back = dequantize(data, qt)
        rel = np.sqrt(np.mean((back - w) ** 2)) / np.sqrt(np.mean(w ** 2))
        assert back.shape == w.shape and np.all(np.isfinite(back)), qt
        assert rel < tol, (qt.name, rel)


# ============================================================================ tiny tokenizer

def bytes_to_unicode() -> dict[int, str]:
    """GPT-2 byte -> printable unicode char map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


TINY_CORPUS = (
    "the quick brown fox jumps over the lazy dog. the dog sleeps in the sun and the fox "
    "runs into the forest. in the evening there is rain, then the sun returns and the "
    "animals are out again. there are many stories about the fox and the dog in the north."
)


def tiny_vocab(n_vocab: int, specials: list[str]):
    """256 byte tokens (bytes_to_unicode order) + BPE merges learned from TINY_CORPUS +
    special tokens at the end. Returns tokens, token_types, merges."""
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    n_merges = n_vocab - 256 - len(specials)
    # pre-tokenize roughly like the GPT-2 regex: letter runs / punctuation runs, each with
    # an optional leading space, so no merge crosses a pre-token boundary
    words = [[b2u[b] for b in piece.encode()]
             for piece in re.findall(r" ?[a-z]+| ?[^\sa-z]+", TINY_CORPUS)]
    merges = []
    for _ in range(n_merges):
        counts = {}
        for wd in words:
            for a, b in zip(wd, wd[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best)
        tokens.append(best[0] + best[1])
        new_words = []
        for wd in words:
            out, i = [], 0
            while i < len(wd):
                if i + 1 < len(wd) and (wd[i], wd[i + 1]) == best:
                    out.append(wd[i] + wd[i + 1])
                    i += 2
                else:
                    out.append(wd[i])
                    i += 1
            new_words.append(out)
        words = new_words
    assert len(merges) == n_merges and len(set(tokens)) == len(tokens)
    types = [1] * len(tokens) + [3] * len(specials)
    tokens = tokens + specials
    return tokens, types, [f"{a} {b}" for a, b in merges]


# ============================================================================ tiny models

MATS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def llama3_rope_factors(base, n_rot, factor, low, high, orig):
    """Per-frequency divisors as convert_hf_to_gguf writes into rope_freqs.weight."""
    i = np.arange(n_rot // 2, dtype=np.float64)
    freqs = base ** (-2.0 * i / n_rot)
    wavelen = 2 * np.pi / freqs
    smooth = (orig / wavelen - low) / (high - low)
    f = np.where(wavelen < orig / high, 1.0,
                 np.where(wavelen > orig / low, factor, 1.0 / ((1 - smooth) / factor + smooth)))
    return f.astype(np.float32)


def write_tiny_model(path: Path, spec: dict) -> None:
    rng = np.random.default_rng(spec["seed"])
    arch = spec["arch"]
    n_embd, n_ff, n_layer = spec["n_embd"], spec["n_ff"], spec["n_layer"]
    n_head, n_head_kv, n_vocab = spec["n_head"], spec["n_head_kv"], spec["n_vocab"]
    # head_dim: n_embd / n_head unless the spec sets it (Qwen3: 16 heads of 128 over 1024).
    hd = spec.get("head_dim", n_embd // n_head)
    q_out = n_head * hd
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens, types, merges = tiny_vocab(n_vocab, specials)

    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(path.stem)
    w.add_block_count(n_layer)
    w.add_context_length(spec.get("context_length", 2048))
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(spec["eps"])
    w.add_rope_freq_base(spec["rope_base"])
    n_rot = spec.get("n_rot", hd)  # Phi-4-mini: rope over the first 3/4 of each head
    w.add_rope_dimension_count(n_rot)
    if "head_dim" in spec:
        w.add_key_length(hd)
        w.add_value_length(hd)
    if spec.get("sliding_window"):  # gemma3: the window of five of every six layers
        w.add_uint32(f"{arch}.attention.sliding_window", spec["sliding_window"])
    if spec.get("yarn_keys"):
        factor, orig, beta_fast, beta_slow, attn = spec["yarn_keys"]
        w.add_string(f"{arch}.rope.scaling.type", "yarn")
        w.add_rope_scaling_factor(factor)
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_float32(f"{arch}.rope.scaling.yarn_beta_fast", beta_fast)
        w.add_float32(f"{arch}.rope.scaling.yarn_beta_slow", beta_slow)
        w.add_float32(f"{arch}.rope.scaling.yarn_attn_factor", attn)
    if spec.get("longrope"):  # phi3's LongRoPE: the original context and the factor on cos and sin
        orig, _, _ = spec["longrope"]
        scale = spec["context_length"] / orig
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_float32(f"{arch}.rope.scaling.attn_factor", math.sqrt(1.0 + math.log(scale) / math.log(orig)))
    w.add_vocab_size(n_vocab)
    if spec.get("llama3_keys"):
        factor, low, high, orig = spec["llama3_keys"]
        w.add_string(f"{arch}.rope.scaling.type", "llama3")
        w.add_rope_scaling_factor(factor)
        w.add_float32(f"{arch}.rope.scaling.low_freq_factor", low)
        w.add_float32(f"{arch}.rope.scaling.high_freq_factor", high)
        w.add_rope_scaling_orig_ctx_len(orig)
    w.add_file_type(1)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(spec["pre"])
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    eot = tokens.index("<|endoftext|>")
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_add_bos_token(False)

    types_of = spec["types"]

    def add(name, arr, qt=QT.F32):
        data, raw = encode_tensor(arr, qt)
        w.add_tensor(name, data, raw_dtype=raw)

    def mat(n_out, n_in, std):
        return rng.standard_normal((n_out, n_in)) * std

    add("token_embd.weight", mat(n_vocab, n_embd, spec["embd_std"]), types_of["token_embd"])
    if spec.get("rope_freqs"):
        add("rope_freqs.weight", llama3_rope_factors(spec["rope_base"], hd, *spec["rope_freqs"]))
    if spec.get("longrope"):  # per-pair divisors: short ones near 1, long ones up to the scale and past it
        _, short_max, long_max = spec["longrope"]
        half = n_rot // 2
        add("rope_factors_short.weight", 1.0 + (short_max - 1.0) * rng.random(half))
        add("rope_factors_long.weight", np.linspace(1.0, long_max, half) * (1.0 + 0.1 * rng.random(half)))
    fused = spec.get("fused", False)  # phi3: one attn_qkv and one ffn_up of gate then up rows
    for il in range(n_layer):
        p = f"blk.{il}."
        add(p + "attn_norm.weight", 1.0 + 0.1 * rng.standard_normal(n_embd))
        shapes = {"attn_q": (q_out, n_embd), "attn_k": (n_head_kv * hd, n_embd),
                  "attn_v": (n_head_kv * hd, n_embd), "attn_output": (n_embd, q_out),
                  "ffn_gate": (n_ff, n_embd), "ffn_up": (n_ff, n_embd), "ffn_down": (n_embd, n_ff)}
        parts = {}
        for nm in MATS:
            n_out, n_in = shapes[nm]
            gain = 1.5 if nm in ("attn_q", "attn_k") else 1.0
            if fused and nm in ("attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"):
                parts[nm] = mat(n_out, n_in, gain / np.sqrt(n_in))
                if nm == "attn_v":
                    qkv = np.concatenate([parts["attn_q"], parts["attn_k"], parts["attn_v"]])
                    add(p + "attn_qkv.weight", qkv, types_of[f"{il}.attn_qkv"])
                if nm == "ffn_up":
                    add(p + "ffn_up.weight", np.concatenate([parts["ffn_gate"], parts["ffn_up"]]),
                        types_of[f"{il}.ffn_up"])
                continue
            add(p + nm + ".weight", mat(n_out, n_in, gain / np.sqrt(n_in)), types_of[f"{il}.{nm}"])
            if spec.get("qkv_bias") and nm in ("attn_q", "attn_k", "attn_v"):
                add(p + nm + ".bias", 0.3 * rng.standard_normal(n_out))
            if spec.get("qk_norm") and nm == "attn_v":  # qwen3: an RMSNorm weight per head dim
                add(p + "attn_q_norm.weight", 1.0 + 0.3 * rng.standard_normal(hd))
                add(p + "attn_k_norm.weight", 1.0 + 0.3 * rng.standard_normal(hd))
        add(p + "ffn_norm.weight", 1.0 + 0.1 * rng.standard_normal(n_embd))
        if spec.get("post_norms"):  # gemma3: each block's output normed before the residual add
            add(p + "post_attention_norm.weight", 1.0 + 0.1 * rng.standard_normal(n_embd))
            add(p + "post_ffw_norm.weight", 1.0 + 0.1 * rng.standard_normal(n_embd))
    add("output_norm.weight", 1.0 + 0.1 * rng.standard_normal(n_embd))
    if "output" in types_of:
        add("output.weight", mat(n_vocab, n_embd, 2.0 / np.sqrt(n_embd)), types_of["output"])

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# Type assignment: together the two llama models cover every type on every matrix role
# family; each single model covers all nine types.
_LLAMA_TYPES_A = {
    "token_embd": QT.F16, "output": QT.Q6_K,
    "0.attn_q": QT.F32, "0.attn_k": QT.F16, "0.attn_v": QT.BF16, "0.attn_output": QT.Q8_0,
    "0.ffn_gate": QT.Q4_0, "0.ffn_up": QT.Q4_1, "0.ffn_down": QT.Q4_K,
    "1.attn_q": QT.Q5_K, "1.attn_k": QT.Q6_K, "1.attn_v": QT.Q4_K, "1.attn_output": QT.Q4_0,
    "1.ffn_gate": QT.Q5_K, "1.ffn_up": QT.Q8_0, "1.ffn_down": QT.Q6_K,
}
_LLAMA_TYPES_B = {
    "token_embd": QT.Q8_0, "output": QT.Q4_K,
    "0.attn_q": QT.Q4_K, "0.attn_k": QT.Q5_K, "0.attn_v": QT.Q6_K, "0.attn_output": QT.BF16,
    "0.ffn_gate": QT.Q8_0, "0.ffn_up": QT.F16, "0.ffn_down": QT.Q5_K,
    "1.attn_q": QT.Q4_1, "1.attn_k": QT.Q4_0, "1.attn_v": QT.F32, "1.attn_output": QT.Q5_K,
    "1.ffn_gate": QT.Q6_K, "1.ffn_up": QT.Q4_K, "1.ffn_down": QT.BF16,
}
_QWEN2_TYPES = {
    "token_embd": QT.Q8_0,
    "0.attn_q": QT.Q8_0, "0.attn_k": QT.Q4_1, "0.attn_v": QT.F16, "0.attn_output": QT.Q4_1,
    "0.ffn_gate": QT.Q8_0, "0.ffn_up": QT.Q4_1, "0.ffn_down": QT.F16,
    "1.attn_q": QT.Q4_1, "1.attn_k": QT.F16, "1.attn_v": QT.Q8_0, "1.attn_output": QT.F16,
    "1.ffn_gate": QT.Q4_1, "1.ffn_up": QT.F16, "1.ffn_down": QT.Q8_0,
}

_TINY_COMMON = dict(n_embd=256, n_ff=512, n_layer=2, n_head=4, n_head_kv=2, n_vocab=300)

TINY_SPECS = {
    # llama3 scaling chosen so that, with head_dim 64 and base 10000, frequencies fall in
    # all three regimes (kept: i<=3, smoothed: 4..8, divided: >=9) at small positions.
    "tiny_llama3": dict(_TINY_COMMON, seed=1001, arch="llama", pre="smollm", eps=1e-5,
                        rope_base=10000.0, llama3_keys=(8.0, 1.0, 4.0, 64),
                        types=_LLAMA_TYPES_A, embd_std=1.0, n_tokens=40, token_seed=1037),
    "tiny_llama3_freqs": dict(_TINY_COMMON, seed=1002, arch="llama", pre="llama-bpe", eps=1e-5,
                              rope_base=10000.0, rope_freqs=(4.0, 1.0, 2.0, 128),
                              types=_LLAMA_TYPES_B, embd_std=1.0, n_tokens=33, token_seed=1026),
    "tiny_qwen2": dict(_TINY_COMMON, seed=1003, arch="qwen2", pre="qwen2", eps=1e-6,
                       rope_base=1000000.0, qkv_bias=True,
                       types=_QWEN2_TYPES, embd_std=0.15, n_tokens=24, token_seed=1017),
}


# ============================================================================ SmolLM2 prompts

SMOLLM2_CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
                "Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?"
                "<|im_end|>\n<|im_start|>assistant\n")

SMOLLM2_PROSE = (
    "The old lighthouse stood at the edge of the cliff, its white paint peeling after decades "
    "of salt and wind. Every evening, the keeper climbed the narrow spiral staircase to light "
    "the lamp, even though ships now relied on satellites to find their way. She did it because "
    "her father had done it, and his mother before him. On clear nights she could see the lights "
    "of the fishing village across the bay, and she liked to imagine that someone there was "
    "looking back at her."
)

SMOLLM2_CODE = (
    "def fibonacci(n: int) -> list[int]:\n"
    "    \"\"\"Return the first n Fibonacci numbers.\"\"\"\n"
    "    seq = [0, 1]\n"
    "    while len(seq) < n:\n"
    "        seq.append(seq[-1] + seq[-2])\n"
    "    return seq[:n]\n"
    "\n"
    "# fibonacci(8) == [0, 1, 1, 2, 3, 5, 8, 13]\n"
    "prices = {\"apple\": 1.25, \"cherry\": 12.75}\n"
    "total = sum(prices.values()) * 3  # 42.0\n"
    "for i in range(2024, 2031):\n"
    "    print(f\"{i}: {i % 7} {i ** 2}\")\n"
    "print(total, 0x1F, 3.14159)\n"
)


def gen_smollm2(models_dir: Path, out_dir: Path) -> list[tuple[str, int, float]]:
    path = models_dir / SMOLLM2_FILE
    if not path.exists():
        print(f"skip smollm2 fixtures: {path} not found")
        return []
    t0 = time.time()
    m = rf.load_model(path)
    tok = rf.build_tokenizer(m)
    print(f"loaded {path.name} in {time.time() - t0:.1f}s")
    results = []
    for case, text in (("smollm2_chat", SMOLLM2_CHAT), ("smollm2_prose", SMOLLM2_PROSE),
                       ("smollm2_code", SMOLLM2_CODE)):
        ids = tok.encode(text).ids
        t0 = time.time()
        logits = rf.forward(m, ids)
        rf.write_fixture(out_dir / f"{case}.ref", SMOLLM2_FILE, ids, logits)
        (out_dir / f"{case}.txt").write_text(text)  # raw prompt, for tokenizer checks
        mm = min_margin(logits)
        print(f"{case}: {len(ids)} tokens, forward {time.time() - t0:.1f}s, min margin {mm:.3e}")
        results.append((case, len(ids), mm))
        if case == "smollm2_chat":
            cont = rf.greedy(m, ids, 8)
            print(f"  greedy 8: {cont} -> {tok.decode(cont, skip_special_tokens=False)!r}")
    return results


def min_margin(logits: np.ndarray) -> float:
    s = np.sort(logits, axis=-1)
    return float(np.min(s[:, -1] - s[:, -2]))


def gen_tiny(out_dir: Path) -> list[tuple[str, int, float]]:
    self_test_quantizers()
    results = []
    for case, spec in TINY_SPECS.items():
        gpath = out_dir / f"{case}.gguf"
        write_tiny_model(gpath, spec)
        m = rf.load_model(gpath)
        # token_seed was picked (once, by hand) so that no position has a near-tie argmax
        rng = np.random.default_rng(spec["token_seed"])
        ids = [int(t) for t in rng.integers(0, spec["n_vocab"], size=spec["n_tokens"])]
        logits = rf.forward(m, ids)
        rf.write_fixture(out_dir / f"{case}.ref", gpath.name, ids, logits)
        mm = min_margin(logits)
        print(f"{case}: {gpath.stat().st_size} bytes gguf, {len(ids)} tokens, min margin {mm:.3e}")
        results.append((case, len(ids), mm))
    return results


def read_fixture_header(path: Path) -> tuple[str, list[int]]:
    """(model name, tokens) of an existing .ref fixture."""
    model, tokens = None, None
    for line in path.read_text().splitlines():
        if line.startswith("model "):
            model = line.split(" ", 1)[1]
        elif line.startswith("tokens "):
            tokens = [int(t) for t in line.split()[1:]]
        if model is not None and tokens is not None:
            return model, tokens
    raise ValueError(f"{path}: no model/tokens line")


def gen_act_quant(act_quant: str, float_dir: Path, models_dir: Path, out_dir: Path,
                  only: str | None) -> list[tuple[str, int, float]]:
    results = []
    loaded: dict[str, rf.Model] = {}
    for ref in sorted(float_dir.glob("*.ref")):
        case = ref.stem
        if only == "tiny" and not case.startswith("tiny_"):
            continue
        if only == "smollm2" and not case.startswith("smollm2_"):
            continue
        model_name, ids = read_fixture_header(ref)
        mpath = (float_dir if model_name.startswith("tiny_") else models_dir) / model_name
        if not mpath.exists():
            print(f"skip {case}: {mpath} not found")
            continue
        if model_name not in loaded:
            loaded[model_name] = rf.load_model(mpath)
        t0 = time.time()
        logits = rf.forward(loaded[model_name], ids, act_quant)
        rf.write_fixture(out_dir / f"{case}.ref", model_name, ids, logits)
        mm = min_margin(logits)
        print(f"{case} [act {act_quant}]: {len(ids)} tokens, forward {time.time() - t0:.1f}s, "
              f"min margin {mm:.3e}")
        results.append((case, len(ids), mm))
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", type=Path, default=REPO / "models")
    ap.add_argument("--out-dir", type=Path, default=REPO / "tests" / "data" / "reference")
    ap.add_argument("--only", choices=("tiny", "smollm2"))
    ap.add_argument("--act-quant", choices=("none", "int8"), default="none",
                    help="int8: fast-mode fixtures from the float fixtures' tokens (see above)")
    ap.add_argument("--float-dir", type=Path, default=REPO / "tests" / "data" / "reference",
                    help="with --act-quant: where the float fixtures and tiny models are")
    args = ap.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.act_quant != "none":
        if args.out_dir.resolve() == args.float_dir.resolve():
            ap.error("--act-quant needs an --out-dir other than the float fixtures' directory")
        gen_act_quant(args.act_quant, args.float_dir, args.models_dir, args.out_dir, args.only)
        return 0
    if args.only in (None, "tiny"):
        gen_tiny(args.out_dir)
    if args.only in (None, "smollm2"):
        gen_smollm2(args.models_dir, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
