#!/usr/bin/env python3
"""Writes tests/data/tokenizer/<pre>.txt: token ids from HF `tokenizers` for a fixed set
of strings, one file per pre-tokenizer Whittle implements, all with the vocabulary and
merges of the default model's GGUF (read with the `gguf` package).

smollm.txt is the real model's tokenizer. The HF pipeline is rebuilt from the GGUF
because no hub is reachable; it is the one in SmolLM2's tokenizer.json:
  pre_tokenizer Sequence[Digits(individual_digits=True),
                         ByteLevel(add_prefix_space=False, use_regex=True)],
  BPE without ignore_merges and without unk_token (as HF's GPT-2 converter makes it; a
  byte missing from the vocabulary is dropped; SmolLM2 lacks 21 of the 256), ByteLevel
  decoder, the control tokens as special AddedTokens.
The other files swap in the pre-tokenizer of tokenizer.json for that family (gpt2: plain
ByteLevel; llama-bpe: Split(Llama 3 regex) + ByteLevel(use_regex=False) and BPE
ignore_merges=True; qwen2: Split(Qwen2 regex) + ByteLevel(use_regex=False); gpt-4o, Phi-4-mini's:
Split(o200k's regex, as tiktoken has it) + ByteLevel(use_regex=False)), so each
scanner is checked against Oniguruma on the same vocabulary.

<pre>.splits (the pre-tokenizers that are a Split regex: llama-bpe, qwen2, gpt-4o): the words
Oniguruma's split gives, each as hex of its UTF-8, separated by spaces, after the text's hex
and a tab: the scanner compared word by word, not only through the ids.

Format, per case: FLAG <tab> text as hex of its UTF-8 <tab> ids separated by spaces.
FLAG is S when encoded with special tokens parsed, P when they are left as plain text.
Lines starting with # are comments.

    pip install gguf tokenizers numpy
    python3 tests/reference/make_tokenizer_fixture.py [model.gguf]
"""
import os
import sys

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
OUT_DIR = os.path.join(ROOT, "tests", "data", "tokenizer")

LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
            r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT4O_RE = ("|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"]))
SPLIT_RE = {"llama-bpe": LLAMA3_RE, "qwen2": QWEN2_RE, "gpt-4o": GPT4O_RE}
CONTROL = 3


def read_vocab(path):
    r = gguf.GGUFReader(path)

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    f = r.fields["tokenizer.ggml.token_type"]
    types = [int(f.parts[i][0]) for i in f.data]
    return strings("tokenizer.ggml.tokens"), types, strings("tokenizer.ggml.merges")


def build(tokens, types, merges, pre):
    vocab = {t: i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ")) for m in merges]
    bl_split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if pre == "smollm":
        pt = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                      pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    elif pre == "gpt2":
        pt = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif pre == "llama-bpe":
        pt = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated"), bl_split])
    elif pre == "qwen2":
        pt = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2_RE), behavior="isolated"), bl_split])
    elif pre == "gpt-4o":
        pt = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(GPT4O_RE), behavior="isolated"), bl_split])
    else:
        raise ValueError(pre)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=pairs, ignore_merges=(pre == "llama-bpe")))
    tok.pre_tokenizer = pt
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == CONTROL]
    tok.add_special_tokens(specials)
    for t, ty in zip(tokens, types):
        if ty == CONTROL:
            assert tok.token_to_id(t) == vocab[t], t
    return tok


def byte_level_chars():
    """GPT-2's bytes_to_unicode, as a list indexed by byte."""
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE]
    out, n = {}, 0
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return [out[b] for b in range(256)]


def alphabet_chars_missing(tokens):
    have = set(tokens)
    return [c for c in byte_level_chars() if c not in have]


from tokenizer_strings import FIXED, LONG, random_cases  # noqa: E402


SPECIAL_TEXTS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<filename>", "<file_sep>",
                 "<repo_name>", "<reponame>", "<gh_stars>")


def cases():
    texts = FIXED + LONG + random_cases(160, seed=1234)
    seen, out = set(), []
    for t in texts:
        has_special = any(s in t for s in SPECIAL_TEXTS)
        for parse in ((True, False) if has_special else (True,)):
            if (t, parse) not in seen:
                seen.add((t, parse))
                out.append((t, parse))
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    tokens, types, merges = read_vocab(path)
    os.makedirs(OUT_DIR, exist_ok=True)
    alphabet = {ord(c): b for b, c in enumerate(byte_level_chars())}
    missing = {alphabet[ord(t)] for t in alphabet_chars_missing(tokens)}
    print("bytes missing from the vocabulary:", " ".join(f"{b:02x}" for b in sorted(missing)))
    all_cases = cases()
    for pre in ("smollm", "gpt2", "llama-bpe", "qwen2", "gpt-4o"):
        tok = build(tokens, types, merges, pre)
        lines = [f"# HF tokenizers for pre-tokenizer '{pre}' with the vocabulary of "
                 f"{os.path.basename(path)}; made by tests/reference/make_tokenizer_fixture.py",
                 "# FLAG (S: parse special, P: specials as plain text) <tab> hex(UTF-8 text) <tab> ids"]
        for text, parse in all_cases:
            tok.encode_special_tokens = not parse
            ids = tok.encode(text, add_special_tokens=False).ids
            # Decoding gives the text back, less the bytes the vocabulary lacks.
            dropped = bytes(b for b in text.encode("utf-8") if b not in missing)
            assert tok.decode(ids, skip_special_tokens=False).encode("utf-8") == dropped, (pre, text)
            lines.append(f"{'S' if parse else 'P'}\t{text.encode('utf-8').hex()}\t{' '.join(map(str, ids))}")
        out = os.path.join(OUT_DIR, f"{pre}.txt")
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")
        if pre in SPLIT_RE:
            split = pre_tokenizers.Split(Regex(SPLIT_RE[pre]), behavior="isolated")
            rows = [f"# words of pre-tokenizer '{pre}' (HF tokenizers' Split); tests/reference/make_tokenizer_fixture.py"]
            for text in dict.fromkeys(t for t, _ in all_cases):
                words = [w for w, _ in split.pre_tokenize_str(text)]
                assert "".join(words) == text, (pre, text)
                rows.append(f"{text.encode('utf-8').hex()}\t{' '.join(w.encode('utf-8').hex() for w in words)}")
            with open(os.path.join(OUT_DIR, f"{pre}.splits"), "w") as f:
                f.write("\n".join(rows) + "\n")
        print(f"{out}: {len(all_cases)} cases, {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main()
