#!/usr/bin/env python3
"""Writes a copy of a GGUF model with its Q4_0/Q4_1 matrices requantized to Q8_0, so the
benchmark can compare quantizations of exactly the same model shape (llama.cpp's published
figures for this machine include Q8_0). Uses the `gguf` PyPI package.

    python3 scripts/requantize.py models/SmolLM2-135M-Instruct.Q4_1.gguf models/SmolLM2-135M-Instruct.Q8_0.gguf
"""
import sys

import numpy as np
from gguf import GGMLQuantizationType as T, GGUFReader, GGUFValueType as V, GGUFWriter
from gguf.quants import dequantize, quantize


def main(src: str, dst: str) -> None:
    r = GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name == "general.file_type":
            w.add_uint32(name, 7)  # MOSTLY_Q8_0
            continue
        vtype = f.types[0]
        if vtype == V.ARRAY:
            w.add_array(name, f.contents())
        else:
            w.add_key_value(name, f.contents(), vtype)
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape.tolist())]  # numpy order: outermost first
        if t.tensor_type in (T.Q4_0, T.Q4_1):
            data = dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
            w.add_tensor(t.name, quantize(data, T.Q8_0), raw_dtype=T.Q8_0)
        else:
            w.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
