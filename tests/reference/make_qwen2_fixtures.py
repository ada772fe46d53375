#!/usr/bin/env python3
"""Regenerate tests/data/reference_qwen2/: the NumPy reference for qwen2 and the Q5_0/Q5_1
weight types (issue 25), checked by tests/unit/test_qwen2_reference.cpp.

  * tiny_qwen2_q5.gguf + .ref: a random-weight qwen2 (q/k/v biases, neox rope, base 1e6,
    UNTIED output) whose width (320) is not a multiple of 256, so its matrices are
    Q5_0/Q5_1/Q8_0 except ffn_down (Q6_K/Q4_K), as in a real Q4_K_M file of such a model;
    the token embedding is Q5_0. About 1.2 MB; the C++ test runs it everywhere.
  * tiny_qwen3.gguf + .ref (`--only tiny3`): a random-weight qwen3 (no biases, each query
    and key head RMS-normed before rope, heads of 128 over a width of 256, tied output) in
    K-quants and Q8_0, as a Qwen3 Q4_K_M file has them. No real Qwen3 file is fetchable here
    (PyPI only), so this is the architecture's check.
  * qwen2_{chat,code,prose}.ref: logits of Qwen2.5-Coder-0.5B-Instruct Q4_K_M
    (models/, `scripts/fetch-model.sh qwen2.5-0.5b`) for three short prompts.
  * qwen15_{chat,code,prose}.ref: the same prompts through Qwen2.5-Coder-1.5B-Instruct Q4_K_M
    (`scripts/fetch-model.sh qwen2.5-1.5b`, `--only logits15`): its width (1536) is a multiple
    of 256, so its matrices are the real Q4_K/Q6_K layout, and its heads are 128 wide (12 on
    2 KV heads). The float64 weights need about 13 GB of memory.
  * qwen2_ppl_apache.ppl: that model's perplexity on the Apache 2.0 license text
    (apache-2.0.txt), as llama.cpp's perplexity tool measures it: 512-token chunks, the
    second half of each chunk scored, BOS only where the model adds one (Qwen: no).

Every weight is dequantized by the `gguf` package (reference_forward.py); nothing here
comes from Whittle's code except the token ids. The NumPy side has no qwen2 tokenizer, so
the prompts and the perplexity text are tokenized by Whittle's tokenizer through the C API
(tests/tools/tokenize_text.cpp, built as build/tests/tokenize_text); the test checks that
Whittle still gives the same ids. Without that tool the ids already in the fixtures are
reused (a message says so).

Usage: make_qwen2_fixtures.py [--models-dir DIR] [--out-dir DIR] [--only tiny|tiny3|logits|ppl|logits15]
                              [--tokenizer PATH] [--ppl-chunks N] [--ppl-int8]
"""
from __future__ import annotations

import argparse
import hashlib
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as QT

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import reference_forward as rf  # noqa: E402
import make_fixtures as mf  # noqa: E402

QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN15_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PPL_MAGIC = "whittle-perplexity 1"
PPL_CASE = "qwen2_ppl_apache"
PPL_TEXT = "apache-2.0.txt"
# Debian's /usr/share/common-licenses/Apache-2.0 (base-files), copied to PPL_TEXT.
PPL_TEXT_SOURCE = Path("/usr/share/common-licenses/Apache-2.0")
PPL_TEXT_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
PPL_N_CTX = 512

# ============================================================================ tiny model

_TINY_Q5_TYPES = {
    "token_embd": QT.Q5_0, "output": QT.Q8_0,
    "0.attn_q": QT.Q5_0, "0.attn_k": QT.Q5_1, "0.attn_v": QT.Q8_0, "0.attn_output": QT.Q5_1,
    "0.ffn_gate": QT.Q5_0, "0.ffn_up": QT.Q5_1, "0.ffn_down": QT.Q6_K,
    "1.attn_q": QT.Q5_1, "1.attn_k": QT.Q5_0, "1.attn_v": QT.Q5_1, "1.attn_output": QT.Q5_0,
    "1.ffn_gate": QT.Q5_1, "1.ffn_up": QT.Q5_0, "1.ffn_down": QT.Q4_K,
}
# 5 heads over 1 kv head (Qwen2.5-0.5B: 14 over 2), head_dim 64, width 320 = 10 blocks of 32.
TINY_Q5_SPEC = dict(n_embd=320, n_ff=512, n_layer=2, n_head=5, n_head_kv=1, n_vocab=300,
                    seed=1004, arch="qwen2", pre="qwen2", eps=1e-6, rope_base=1000000.0,
                    qkv_bias=True, types=_TINY_Q5_TYPES, embd_std=0.15, n_tokens=28,
                    token_seed=1171)


# qwen3 (Qwen3-0.6B's shape in small): no biases, each query and key head RMS-normed before
# rope (attn_q_norm / attn_k_norm), heads wider than n_embd / n_head (4 of 128 over 256:
# attn_q is 512 x 256, attn_output 256 x 512), tied output, K-quants as a Q4_K_M file has them.
_TINY_QWEN3_TYPES = {
    "token_embd": QT.Q6_K,
    "0.attn_q": QT.Q4_K, "0.attn_k": QT.Q4_K, "0.attn_v": QT.Q6_K, "0.attn_output": QT.Q4_K,
    "0.ffn_gate": QT.Q4_K, "0.ffn_up": QT.Q4_K, "0.ffn_down": QT.Q6_K,
    "1.attn_q": QT.Q5_K, "1.attn_k": QT.Q8_0, "1.attn_v": QT.Q4_K, "1.attn_output": QT.Q6_K,
    "1.ffn_gate": QT.Q5_K, "1.ffn_up": QT.Q4_K, "1.ffn_down": QT.Q4_K,
}
TINY_QWEN3_SPEC = dict(n_embd=256, n_ff=512, n_layer=2, n_head=4, n_head_kv=2, head_dim=128,
                       n_vocab=300, seed=3006, arch="qwen3", pre="qwen2", eps=1e-6,
                       rope_base=1000000.0, qk_norm=True, types=_TINY_QWEN3_TYPES,
                       embd_std=0.15, n_tokens=28, token_seed=3171)

# YaRN from the file's keys (every one Whittle reads, none at its default): one layer of
# tiny_qwen3's shape, factor 4 over 8 tokens, betas 16 and 2, an extra attention factor 1.1.
TINY_QWEN3_YARN_KEYS_SPEC = dict(TINY_QWEN3_SPEC, n_layer=1, seed=3008, token_seed=3181,
                                 yarn_keys=(4.0, 8, 16.0, 2.0, 1.1))

# smollm3: llama whose every fourth layer has no rope, so five layers (the fourth without);
# heads of 32, 4 over 2 KV heads, tied output, Q8_0 and F16 (small: no K-quant widths).
def every_layer(n_layer: int, embd, **roles) -> dict:
    """A types dict: token_embd's type, and each matrix role's type in every layer."""
    types = {"token_embd": embd}
    for layer in range(n_layer):
        types.update({f"{layer}.{role}": qt for role, qt in roles.items()})
    return types


_TINY_SMOLLM3_TYPES = every_layer(5, QT.Q8_0, attn_q=QT.Q8_0, attn_k=QT.F16, attn_v=QT.Q8_0, attn_output=QT.Q8_0,
                                  ffn_gate=QT.Q8_0, ffn_up=QT.F16, ffn_down=QT.Q8_0)
TINY_SMOLLM3_SPEC = dict(n_embd=128, n_ff=256, n_layer=5, n_head=4, n_head_kv=2, n_vocab=300, seed=3009,
                         arch="smollm3", pre="llama-bpe", eps=1e-6, rope_base=5000000.0,
                         types=_TINY_SMOLLM3_TYPES, embd_std=0.15, n_tokens=28, token_seed=3206)

# gemma3 (Gemma 3 1B's layout in small): six layers, so five slide and the sixth is global,
# a window of 8 over 28 tokens (so most rows of the sliding layers lose keys), heads of 128
# (4 over 1 KV head, over a width of 256), the two head norms, the two post-block norms, gelu,
# tied output; K-quants where the rows allow (attn_output reads 512).
_TINY_GEMMA3_TYPES = every_layer(6, QT.Q6_K, attn_q=QT.Q4_K, attn_k=QT.Q8_0, attn_v=QT.Q6_K, attn_output=QT.Q4_K,
                                 ffn_gate=QT.Q5_K, ffn_up=QT.Q4_K, ffn_down=QT.Q6_K)
TINY_GEMMA3_SPEC = dict(n_embd=256, n_ff=256, n_layer=6, n_head=4, n_head_kv=1, head_dim=128, n_vocab=300,
                        seed=3010, arch="gemma3", pre="default", eps=1e-6, rope_base=1000000.0, qk_norm=True,
                        post_norms=True, sliding_window=8, types=_TINY_GEMMA3_TYPES, embd_std=0.05,
                        n_tokens=28, token_seed=3212)

# phi3 (Phi-3.5-mini's layout in small): the q, k and v rows in one attn_qkv, the gate and
# up rows in one ffn_up (both row ranges start mid-matrix), neox rope with LongRoPE over an
# original context of 32 in a trained one of 128 (so the factor on cos and sin is
# sqrt(1 + ln 4 / ln 32) = 1.18), 4 heads of 64 over 2 KV heads, untied output, K-quants.
_TINY_PHI3_TYPES = dict(every_layer(2, QT.Q4_K, attn_qkv=QT.Q4_K, attn_output=QT.Q5_K, ffn_up=QT.Q4_K,
                                    ffn_down=QT.Q6_K), output=QT.Q6_K)
TINY_PHI3_SPEC = dict(n_embd=256, n_ff=256, n_layer=2, n_head=4, n_head_kv=2, n_vocab=300, seed=3011,
                      arch="phi3", pre="default", eps=1e-5, rope_base=10000.0, fused=True, context_length=128,
                      longrope=(32, 1.3, 6.0), types=_TINY_PHI3_TYPES, embd_std=0.15, n_tokens=28,
                      token_seed=3219)
# phi4 (Phi-4-mini's layout in small): phi3's, but rope over 48 of each head's 64 dims (its
# partial_rotary_factor 0.75) with LongRoPE's factor on cos and sin, so on those 48 only; tied
# output; the gpt-4o pre-tokenizer. Made for a context past the original one (the long
# factors).
_TINY_PHI4_TYPES = every_layer(2, QT.Q4_K, attn_qkv=QT.Q4_K, attn_output=QT.Q5_K, ffn_up=QT.Q4_K, ffn_down=QT.Q6_K)
TINY_PHI4_SPEC = dict(TINY_PHI3_SPEC, seed=3012, token_seed=3225, n_rot=48, pre="gpt-4o", types=_TINY_PHI4_TYPES)
# The context sizes its fixtures are made for: up to the original context (the short
# factors: tiny_phi3.ref) and beyond it (the long ones: tiny_phi3_long.ref, tiny_phi4.ref).
PHI3_N_CTX = {"tiny_phi3": 28, "tiny_phi3_long": 64, "tiny_phi4": 64}

TINY_CASES = {"tiny_qwen2_q5": TINY_Q5_SPEC, "tiny_qwen3": TINY_QWEN3_SPEC,
              "tiny_qwen3_yarnkeys": TINY_QWEN3_YARN_KEYS_SPEC, "tiny_smollm3": TINY_SMOLLM3_SPEC,
              "tiny_gemma3": TINY_GEMMA3_SPEC, "tiny_phi3": TINY_PHI3_SPEC, "tiny_phi4": TINY_PHI4_SPEC}

# tiny_qwen3_yarn.ref: tiny_qwen3's logits with YaRN asked for at load (wt_model_params'
# rope override; the file has no scaling keys), factor 4 over an original context of 8
# tokens: the 28 positions run past it, pairs 2 and up are interpolated, pair 1 blended,
# and the attention factor 0.1 ln 4 + 1 scales every q.k by 1.30. test_qwen2_reference.cpp
# asks for the same.
YARN_OVERRIDE = dict(factor=4.0, orig_ctx=8)


def gen_tiny(out_dir: Path, case: str = "tiny_qwen2_q5") -> None:
    spec = TINY_CASES[case]
    gpath = out_dir / f"{case}.gguf"
    mf.write_tiny_model(gpath, spec)
    m = rf.load_model(gpath)
    assert m.tied_output == ("output" not in spec["types"])
    rng = np.random.default_rng(spec["token_seed"])
    ids = [int(t) for t in rng.integers(0, spec["n_vocab"], size=spec["n_tokens"])]
    logits = rf.forward(m, ids, n_ctx=PHI3_N_CTX.get(case))
    rf.write_fixture(out_dir / f"{case}.ref", gpath.name, ids, logits)
    print(f"{case}: {gpath.stat().st_size} bytes gguf, {len(ids)} tokens, "
          f"min margin {mf.min_margin(logits):.3e}, logit std {logits.std():.2f}")
    if case == "tiny_phi3":
        long = rf.forward(m, ids, n_ctx=PHI3_N_CTX["tiny_phi3_long"])
        rf.write_fixture(out_dir / "tiny_phi3_long.ref", gpath.name, ids, long)
        print(f"tiny_phi3_long: min margin {mf.min_margin(long):.3e}, "
              f"max |logit - short factors'| {np.abs(long - logits).max():.2f}")
    if case == "tiny_qwen3":
        m.cfg.rope_scaling_type = "yarn"
        m.cfg.rope_scaling_factor = YARN_OVERRIDE["factor"]
        m.cfg.rope_orig_ctx = YARN_OVERRIDE["orig_ctx"]
        yarn = rf.forward(m, ids)
        rf.write_fixture(out_dir / f"{case}_yarn.ref", gpath.name, ids, yarn)
        print(f"{case}_yarn: min margin {mf.min_margin(yarn):.3e}, "
              f"max |logit - unscaled| {np.abs(yarn - logits).max():.2f}")


# ============================================================================ Qwen2.5-0.5B

QWEN_CHAT = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
             "assistant.<|im_end|>\n<|im_start|>user\nWrite a Python function that reverses a "
             "string.<|im_end|>\n<|im_start|>assistant\n")

QWEN_CODE = (
    "def binary_search(items: list[int], target: int) -> int:\n"
    "    lo, hi = 0, len(items) - 1\n"
    "    while lo <= hi:\n"
    "        mid = (lo + hi) // 2\n"
)

QWEN_PROSE = ("The old lighthouse stood at the edge of the cliff, its white paint peeling after "
              "decades of salt and wind.")

# case -> (text, parse_special)
QWEN_CASES = {
    "qwen2_chat": (QWEN_CHAT, True),
    "qwen2_code": (QWEN_CODE, False),
    "qwen2_prose": (QWEN_PROSE, False),
}


def default_tokenizer() -> Path:
    return REPO / "build" / "tests" / "tokenize_text"


def tokenize(tool: Path | None, model: Path, text_file: Path, special: bool,
             fallback: Path, fallback_kind: str) -> list[int]:
    """Whittle's ids of text_file, or those already stored in `fallback` without the tool."""
    if tool is not None and tool.exists():
        cmd = [str(tool), str(model), str(text_file)] + (["--parse-special"] if special else [])
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return [int(t) for t in out.split()]
    if not fallback.exists():
        raise SystemExit(f"no tokenizer tool ({tool}) and no earlier fixture {fallback}: build "
                         f"the tokenize_text target first")
    print(f"  {text_file.name}: no tokenizer tool at {tool}; reusing the ids in {fallback.name}")
    if fallback_kind == "ref":
        return mf.read_fixture_header(fallback)[1]
    return read_ppl_fixture(fallback)["tokens"]


def gen_logits(m: rf.Model, model_path: Path, out_dir: Path, tool: Path | None,
               prefix: str = "qwen2") -> None:
    """<prefix>_{chat,code,prose}.ref; the prompt texts are the qwen2_*.txt files."""
    for base, (text, special) in QWEN_CASES.items():
        case = prefix + base[len("qwen2"):]
        txt = out_dir / f"{base}.txt"
        txt.write_text(text)
        ids = tokenize(tool, model_path, txt, special, out_dir / f"{case}.ref", "ref")
        t0 = time.time()
        logits = rf.forward(m, ids)
        rf.write_fixture(out_dir / f"{case}.ref", model_path.name, ids, logits)
        print(f"{case}: {len(ids)} tokens, forward {time.time() - t0:.1f}s, "
              f"min margin {mf.min_margin(logits):.3e}, last argmax {int(np.argmax(logits[-1]))}")


def chunk_nll(m: rf.Model, chunk: list[int], act_quant: str | None = None) -> tuple[float, int]:
    """Sum of -log p(chunk[j+1] | chunk[..j]) over j = n/2 .. n-2, as llama.cpp's perplexity
    scores a chunk (first = n_ctx/2; the last row predicts nothing inside the chunk)."""
    n = len(chunk)
    first = n // 2
    rows = list(range(first, n - 1))
    logits = rf.forward(m, chunk, act_quant, rows=rows)            # (len(rows), V) float64
    mx = logits.max(axis=-1, keepdims=True)
    lse = (mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=-1)))
    tgt = np.asarray(chunk[first + 1:n], dtype=np.int64)
    nll = lse - logits[np.arange(len(rows)), tgt]
    return float(nll.sum()), len(rows)


def read_ppl_fixture(path: Path) -> dict:
    d = {"chunks": []}
    for line in path.read_text().splitlines():
        k, _, rest = line.partition(" ")
        if k == "tokens":
            d["tokens"] = [int(t) for t in rest.split()]
        elif k == "chunk":
            f = rest.split()
            d["chunks"].append((int(f[0]), int(f[2]), float(f[4])))
        elif k in ("n_ctx", "n_chunks", "n_tokens", "add_bos"):
            d[k] = int(rest)
        elif k == "ppl":
            d[k] = float(rest)
    return d


def gen_ppl(m: rf.Model, model_path: Path, out_dir: Path, tool: Path | None, n_chunks: int,
            int8: bool) -> None:
    txt = out_dir / PPL_TEXT
    if PPL_TEXT_SOURCE.exists():
        data = PPL_TEXT_SOURCE.read_bytes()
        if hashlib.sha256(data).hexdigest() != PPL_TEXT_SHA256:
            raise SystemExit(f"{PPL_TEXT_SOURCE} is not the text the fixture was made from")
        txt.write_bytes(data)
    elif hashlib.sha256(txt.read_bytes()).hexdigest() != PPL_TEXT_SHA256:
        raise SystemExit(f"{txt} changed")
    ids = tokenize(tool, model_path, txt, False, out_dir / f"{PPL_CASE}.ppl", "ppl")
    # BOS only where the model adds one: then, as llama.cpp does, the first token of every
    # chunk is replaced by BOS. Qwen2.5 has add_bos_token = false, so its ids are the text's.
    if m.add_bos is None:
        raise SystemExit(f"{QWEN_FILE} has no tokenizer.ggml.add_bos_token: say what BOS to use")
    add_bos = m.add_bos
    avail = len(ids) // PPL_N_CTX
    n_chunks = min(n_chunks, avail)
    lines = [PPL_MAGIC, f"model {QWEN_FILE}", f"text {PPL_TEXT}", f"n_ctx {PPL_N_CTX}",
             f"add_bos {int(add_bos)}", f"n_chunks {n_chunks}",
             f"n_tokens {n_chunks * PPL_N_CTX}",
             "tokens " + " ".join(str(t) for t in ids[:n_chunks * PPL_N_CTX])]
    total, count = 0.0, 0
    total8 = 0.0
    for c in range(n_chunks):
        chunk = ids[c * PPL_N_CTX:(c + 1) * PPL_N_CTX]
        if add_bos:
            chunk = [m.bos_id] + chunk[1:]
        t0 = time.time()
        nll, n = chunk_nll(m, chunk)
        total += nll
        count += n
        lines.append(f"chunk {c} n_scored {n} nll {nll:.9e}")
        msg = f"chunk {c}: nll/token {nll / n:.6f}, ppl so far {math.exp(total / count):.6f}"
        if int8:
            nll8, _ = chunk_nll(m, chunk, "int8")
            total8 += nll8
            msg += f"; int8-activation emulation nll/token {nll8 / n:.6f}"
        print(f"{msg} ({time.time() - t0:.1f}s)")
    ppl = math.exp(total / count)
    lines.append(f"ppl {ppl:.9e}")
    (out_dir / f"{PPL_CASE}.ppl").write_text("\n".join(lines) + "\n")
    print(f"{PPL_CASE}: {len(ids)} tokens in the text, {n_chunks} chunks of {PPL_N_CTX}, "
          f"{count} scored, ppl {ppl:.6f}")
    if int8:
        print(f"  int8-activation emulation: ppl {math.exp(total8 / count):.6f}")


def load(path: Path) -> rf.Model:
    t0 = time.time()
    m = rf.load_model(path)
    print(f"loaded {path.name} in {time.time() - t0:.1f}s (tied output: {m.tied_output})")
    return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", type=Path, default=REPO / "models")
    ap.add_argument("--out-dir", type=Path, default=REPO / "tests" / "data" / "reference_qwen2")
    ap.add_argument("--only", choices=("tiny", "tiny3", "logits", "ppl", "logits15"))
    ap.add_argument("--tokenizer", type=Path, default=default_tokenizer(),
                    help="Whittle's tokenize_text tool (default build/tests/tokenize_text)")
    ap.add_argument("--ppl-chunks", type=int, default=4, help="at most this many 512-token chunks")
    ap.add_argument("--ppl-int8", action="store_true",
                    help="also print the perplexity with the int8-activation emulation (not stored)")
    args = ap.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "tiny", "tiny3"):
        mf.self_test_quantizers()
    if args.only in (None, "tiny"):
        gen_tiny(args.out_dir)
    if args.only in (None, "tiny3"):
        gen_tiny(args.out_dir, "tiny_qwen3")
        gen_tiny(args.out_dir, "tiny_qwen3_yarnkeys")
        gen_tiny(args.out_dir, "tiny_smollm3")
        gen_tiny(args.out_dir, "tiny_gemma3")
        gen_tiny(args.out_dir, "tiny_phi3")
        gen_tiny(args.out_dir, "tiny_phi4")
    if args.only in ("tiny", "tiny3"):
        return 0
    if args.only == "logits15":  # never by default: 13 GB and a model CI does not fetch
        path15 = args.models_dir / QWEN15_FILE
        if not path15.exists():
            raise SystemExit(f"{path15} not found (scripts/fetch-model.sh qwen2.5-1.5b)")
        gen_logits(load(path15), path15, args.out_dir, args.tokenizer, prefix="qwen15")
        return 0
    model_path = args.models_dir / QWEN_FILE
    if not model_path.exists():
        print(f"skip the Qwen2.5-0.5B fixtures: {model_path} not found "
              f"(scripts/fetch-model.sh qwen2.5-0.5b)")
        return 0
    m = load(model_path)
    if args.only in (None, "logits"):
        gen_logits(m, model_path, args.out_dir, args.tokenizer)
    if args.only in (None, "ppl"):
        gen_ppl(m, model_path, args.out_dir, args.tokenizer, args.ppl_chunks, args.ppl_int8)
    return 0


if __name__ == "__main__":
    sys.exit(main())
