#!/usr/bin/env python3
"""Fixtures for tests/unit/test_matmul.cpp: random blocks of every weight type Whittle
reads and their dequantization by the `gguf` PyPI package (its NumPy dequantizers are an
implementation independent of ours), and its quantization of Q5_0 / Q5_1 blocks.

Writes tests/data/quant/<type>.raw (block bytes as GGUF stores them) and <type>.f32
(little-endian float32 values), plus f32_to_f16.{f32,u16} and f32_to_bf16.{f32,u16} for
the rounding conversions and q5_0_quant / q5_1_quant.{f32,raw} for the quantizers. Deterministic (fixed seed); rerun only to change the fixtures:

    python3 tests/reference/make_quant_fixture.py
"""
import os

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "quant")
rng = np.random.default_rng(20240611)


def f16_bytes(values):
    return np.asarray(values, dtype=np.float16).view(np.uint8)


def random_blocks(qtype, n_blocks):
    """Random bytes everywhere, then sane f16 scales (raw random f16s are often inf/NaN)."""
    _, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    scale = lambda: f16_bytes(rng.uniform(1e-3, 2e-2, n_blocks) * rng.choice([-1, 1], n_blocks))
    if qtype in (T.Q4_0, T.Q8_0):
        raw[:, 0:2] = scale().reshape(n_blocks, 2)
    elif qtype == T.Q5_0:
        raw[:, 0:2] = scale().reshape(n_blocks, 2)
    elif qtype in (T.Q4_1, T.Q5_1):
        raw[:, 0:2] = scale().reshape(n_blocks, 2)
        raw[:, 2:4] = f16_bytes(rng.uniform(-0.2, 0.2, n_blocks)).reshape(n_blocks, 2)
    elif qtype in (T.Q4_K, T.Q5_K):
        raw[:, 0:2] = scale().reshape(n_blocks, 2)
        raw[:, 2:4] = scale().reshape(n_blocks, 2)
    elif qtype == T.Q6_K:
        raw[:, 208:210] = scale().reshape(n_blocks, 2)
    return raw.reshape(-1)


def write(name, raw, values):
    raw.astype(np.uint8).tofile(os.path.join(OUT, name + ".raw"))
    np.asarray(values, dtype="<f4").tofile(os.path.join(OUT, name + ".f32"))


def main():
    os.makedirs(OUT, exist_ok=True)
    for qtype, name, n_blocks in [(T.Q4_0, "q4_0", 16), (T.Q4_1, "q4_1", 16), (T.Q8_0, "q8_0", 16),
                                  (T.Q4_K, "q4_k", 4), (T.Q5_K, "q5_k", 4), (T.Q6_K, "q6_k", 4)]:
        raw = random_blocks(qtype, n_blocks)
        write(name, raw, dequantize(raw, qtype).reshape(-1))

    # Plain 16-bit types: random bit patterns without NaN (inf and subnormals included).
    bits = rng.integers(0, 65536, size=512, dtype=np.uint16)
    f16 = bits[((bits & 0x7C00) != 0x7C00) | ((bits & 0x3FF) == 0)]
    write("f16", f16.view(np.uint8), f16.view(np.float16).astype(np.float32))
    bf = bits[((bits & 0x7F80) != 0x7F80) | ((bits & 0x7F) == 0)]
    write("bf16", bf.view(np.uint8), dequantize(bf.view(np.uint8), T.BF16).reshape(-1))

    # Rounding f32 -> f16 / bf16 across the whole range, ties included.
    x = np.concatenate([
        rng.standard_normal(256).astype(np.float32) * np.float32(10.0) ** rng.integers(-8, 6, 256),
        (rng.integers(0, 1 << 14, 64).astype(np.float32) + np.float32(0.5)) * np.float32(2.0 ** -24),  # f16 subnormal ties
        np.array([65504, 65519.99, 65520, 1e9, -1e9, 0.0, -0.0, 6e-8, 3e-8, 2.9e-8, np.inf, -np.inf], np.float32),
    ]).astype(np.float32)
    x.astype("<f4").tofile(os.path.join(OUT, "f32_to_f16.f32"))
    with np.errstate(over="ignore"):  # values past 65520 round to inf, as intended
        x.astype(np.float16).view("<u2").tofile(os.path.join(OUT, "f32_to_f16.u16"))
    x.astype("<f4").tofile(os.path.join(OUT, "f32_to_bf16.f32"))
    quantize(x, T.BF16).view("<u2").tofile(os.path.join(OUT, "f32_to_bf16.u16"))

    # Added later, after everything above so that the earlier fixtures keep their bytes.
    for qtype, name in [(T.Q5_0, "q5_0"), (T.Q5_1, "q5_1")]:
        raw = random_blocks(qtype, 16)
        write(name, raw, dequantize(raw, qtype).reshape(-1))
    # The reference quantizers (quantize_q5_0 / _q5_1): blocks of N(0,1) values with 5%
    # outliers, a constant block, an all-zero block and one holding a single nonzero value;
    # <type>_quant.f32 is the input, <type>_quant.raw the gguf package's quantization.
    xq = rng.standard_normal((64, 32)).astype(np.float32)
    xq[rng.random((64, 32)) < 0.05] *= np.float32(20.0)
    xq *= (np.float32(10.0) ** rng.integers(-3, 3, (64, 1))).astype(np.float32)
    xq[60] = np.float32(0.75)
    xq[61] = np.float32(0.0)
    xq[62] = np.float32(0.0)
    xq[62, 17] = np.float32(-3.0)
    xq = xq.reshape(-1)
    for qtype, name in [(T.Q5_0, "q5_0"), (T.Q5_1, "q5_1")]:
        xq.astype("<f4").tofile(os.path.join(OUT, name + "_quant.f32"))
        quantize(xq, qtype).astype(np.uint8).reshape(-1).tofile(os.path.join(OUT, name + "_quant.raw"))


if __name__ == "__main__":
    main()
