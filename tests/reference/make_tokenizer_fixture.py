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
ignore_merges=True; qwen2: Split(Qwen2 regex) + ByteLevel(use_regex=False)), so each
scanner is checked against Oniguruma on the same vocabulary.

Format, per case: FLAG <tab> text as hex of its UTF-8 <tab> ids separated by spaces.
FLAG is S when encoded with special tokens parsed, P when they are left as plain text.
Lines starting with # are comments.

    pip install gguf tokenizers numpy
    python3 tests/reference/make_tokenizer_fixture.py [model.gguf]
"""
import os
import random
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


# ---- the strings -------------------------------------------------------------------------

FIXED = [
    "", " ", "  ", "a", "Hello", "Hello world", " Hello world", "Hello world!", "hello  world",
    "The quick brown fox jumps over the lazy dog.",
    "It's a test: don't, can't, won't, I'm, you're, we've, they'll, he'd.",
    "IT'S DON'T I'M YOU'RE WE'VE THEY'LL HE'D", "It'S dOn'T i'M yOu'Re We'vE tHeY'lL hE'D",
    "'s 't 're 've 'm 'll 'd", "'S 'T 'RE 'VE 'M 'LL 'D", "''s '''t 's's", "'ſ 'ſt x'ſ", "rock'n'roll",
    "O'Neil's dog's bone", "'", "''", "'x", "' s", "'\u2019s", "it\u2019s",
    "naïve café résumé coöperate", "Straße größer Maß", "Ünïcödé ÀÉÎÕÜ",
    "Привет, мир! Как дела?", "Γειά σου Κόσμε", "שלום עולם", "مرحبا بالعالم", "سلام دنیا",
    "नमस्ते दुनिया", "বাংলা ভাষা", "ਪੰਜਾਬੀ", "தமிழ் மொழி", "తెలుగు", "ಕನ್ನಡ", "മലയാളം",
    "ภาษาไทย สวัสดี", "ພາສາລາວ", "ქართული ენა", "Հայերեն", "አማርኛ", "ᏣᎳᎩ", "ᚠᚢᚦᚨᚱᚲ",
    "こんにちは世界", "カタカナとひらがな", "你好，世界！", "中文字符测试。", "繁體中文測試",
    "한국어 텍스트입니다", "Tiếng Việt có dấu", "Türkçe İıŞşĞğ", "Ελληνικά ΆΈΉΊΌΎΏ",
    "e\u0301 a\u0308 n\u0303", "A\u030a\u0301\u0323", "\u0301start with a combining mark",
    "Z\u0351\u0359a\u0352l\u0357g\u0353o", "\u0915\u094d\u0937", "\u0e01\u0e34\u0e4a",
    "😀", "😀😃😄", "👍🏽 👍🏿", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "❤️ ♥ ❣", "🇯🇵🇺🇸",
    "1️⃣ 2️⃣ #️⃣", "🧑🏽\u200d💻 coding", "emoji😀inside😃words", "🤖🤖🤖🤖🤖🤖🤖🤖",
    "0", "1", "12", "123", "1234", "12345", "1234567890", "3.14159", "-42", "+1 (555) 123-4567",
    "1,000,000", "2024-01-15T10:30:00Z", "v1.2.3", "0x1F600", "1e-10", "abc123def", "123abc",
    " 1", "  1", "a 1", "a  1", "a   1", "1 2 3", "1  2", "x=1+2", "$100", "100%",
    "١٢٣ ٤٥٦", "१२३४", "১২৩", "๑๒๓", "Ⅻ Ⅳ ⅷ", "½ ¾ ⅓", "² ³ ¹", "①②③", "𝟘𝟙𝟚",
    "\t", "\n", "\r\n", "\n\n", "\n\n\n", " \n", "\n ", " \n ", "a\nb", "a\n\nb", "a\r\nb",
    "line1\r\nline2\r\n", "a \n b", "a  \n  b", "a\t\tb", "\ta", "  \ta", "a\t", "a   ",
    "trailing space ", "trailing spaces   ", "   leading", "\u00a0nbsp", "a\u00a0b", "a\u3000b",
    "a\u2028b\u2029c", "a\x0bb\x0cc", "a\x85b", "a\u200bb", "a\u200db", "a\ufeffb",
    "\x00", "a\x00b", "\x01\x02\x1b[31m", "a\x1cb\x1dc\x1ed\x1f", "\x7f", " \t\n\r\x0b\x0c",
    "tabs\tand\nnewlines\r\nmixed \t \n ", "   \n\n   \t\t  x",
    "def foo(x):\n    return x * 2\n",
    "int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    "for (auto& [k, v] : map) { std::cout << k << \"->\" << v << '\\n'; }",
    "fn main() { let v: Vec<i32> = (0..10).collect(); println!(\"{:?}\", v); }",
    "const f = async (a, b) => { await Promise.all([a(), b()]); };",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<div class=\"x\"><a href='/y?z=1&w=2'>link</a></div>",
    "#!/bin/bash\nset -euo pipefail\necho \"${HOME}\" | grep -E '^/h' && exit 0\n",
    "x += 1; y -= 2; z *= 3; w /= 4; a %= 5; b <<= 6; c >>= 7; d ^= e;",
    "if (a != b && c == d || !e) { /* comment */ } // line comment",
    "{\"key\": [1, 2.5, true, null], \"nested\": {\"a\": \"b\"}}",
    "https://example.com/path/to/page?query=value&other=123#fragment",
    "user@example.com", "C:\\Users\\name\\file.txt", "~/.config/app/settings.toml",
    "$$\\frac{a}{b} = \\sum_{i=0}^{n} x_i^2$$", "∀x ∈ ℝ: x² ≥ 0", "→ ← ↑ ↓ ⇒ ⇔",
    "...", "!!!", "???", "?!", "---", "___", "***", "===", "~~~", "@#$%^&*()", "«quotes» „quotes“",
    "¿Qué? ¡Sí!", "—em dash—", "…ellipsis…", "·middle·dot·",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>",
    "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text", "<|im_start|><|im_end|>", "<|im_start|<|im_end|>", "<|im_start",
    "|im_end|>", "<filename>main.py<file_sep>", "<repo_name>x<reponame>y<gh_stars>10",
    " <|im_start|> ", "<|im_start|>  \n", "a<|im_end|>b", "<<|im_end|>>", "<|im_end|>1<|im_end|>",
]

# Long inputs: BPE must stay fast on words with thousands of bytes.
LONG = [
    "a" * 2000, "ab" * 700, "supercalifragilisticexpialidocious" * 30, "1234567890" * 40,
    " " * 300, "\n" * 200, " \n" * 100, "=" * 400, "🙂" * 150, "中文" * 300, "é" * 500,
    "word " * 300, "x" * 1000 + " " + "y" * 1000,
]

FRAGMENTS = [
    "hello", "World", "the", "The", "naïve", "Straße", "Привет", "мир", "Γειά", "שלום", "مرحبا",
    "नमस्ते", "こんにちは", "世界", "한국어", "ไทย", "e\u0301", "a\u0308\u0301", "İ", "ǅ", "ß",
    "0", "7", "42", "1234567", "3.14", "٣٤٥", "१२३", "Ⅻ", "½", "²", "①",
    ".", ",", "!?", "...", "'", "''", "\"", "(", ")", "{}", "[", "]", "<", ">", "/*", "->", "::",
    "&&", "\\", "@", "#", "$", "%", "^", "~", "`", "—", "…", "«", "»", "¿", "·", "_", "-", "+",
    " ", " ", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "   \n", " \t ", "\r", "\u00a0",
    "\u3000", "\u2028", "\x0b", "\x85", "\u200b",
    "'s", "'S", "'re", "'RE", "'Ve", "'ll", "'LL", "'d", "'D", "'m", "'t", "'ſ",
    "😀", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "❤️", "🇯🇵", "1️⃣",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<filename>", "<|im_start", "|im_end|>",
    "\x00", "\x1c", "\x7f",
]


def random_cases(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 14)
        seps = ["", "", " ", "\n"]
        out.append("".join(rng.choice(FRAGMENTS) + rng.choice(seps) for _ in range(k)))
    return out


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
    for pre in ("smollm", "gpt2", "llama-bpe", "qwen2"):
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
        print(f"{out}: {len(all_cases)} cases, {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main()
