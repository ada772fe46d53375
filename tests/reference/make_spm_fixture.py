#!/usr/bin/env python3
"""Writes tests/data/tokenizer/spm-<variant>.{vocab,txt}: SentencePiece BPE vocabularies and
the token ids Google's `sentencepiece` library gives for the shared strings
(tokenizer_strings.py), to check Whittle's tokenizer for GGUF files whose
tokenizer.ggml.model is "llama" (Llama 1/2, TinyLlama, Mistral, Gemma).

No real SentencePiece model can be fetched here, so each variant is a BPE model trained by
`sentencepiece` itself, configured as the families' tokenizer.model files are:
  llama: add_dummy_prefix (a "▁" before the text), as Llama, TinyLlama and Mistral;
  gemma: no dummy prefix (GGUF's tokenizer.ggml.add_space_prefix = false), as Gemma.
Both: identity normalization (no NFKC), extra whitespace kept, digits split, byte fallback
(<0x00>..<0xFF> pieces), whitespace-only pieces allowed, <unk>/<s>/</s> at ids 0/1/2, two
control symbols and two user-defined ones. Character coverage below 1 leaves the rarer
characters (emoji, most scripts) to byte fallback, so that path is exercised.

Special tokens, as llama.cpp handles them for this tokenizer model: user-defined pieces are
always cut out of the text, control pieces only when special tokens are parsed (FLAG S),
and each stretch of text between them is encoded on its own, so with add_space_prefix each
stretch gets its own "▁" (llama.cpp's is_prev_special; HF's legacy Llama tokenizer does the
same). SentencePiece has no notion of parsing control text, so the ids for those cases come
from encoding each stretch with sentencepiece and joining them with the special ids.

.vocab format: a header line `# add_space_prefix 0|1`, then one line per token id:
type (GGUF tokenizer.ggml.token_type) <tab> score <tab> hex(UTF-8 piece).
.txt format: as make_tokenizer_fixture.py's (FLAG <tab> hex(text) <tab> ids).

    pip install sentencepiece
    python3 tests/reference/make_spm_fixture.py [corpus.txt]   (default: the GPL-3 text)
"""
import os
import sys
import tempfile

import sentencepiece as spm

from tokenizer_strings import FIXED, FRAGMENTS, LONG, random_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "data", "tokenizer")
CONTROL = ["<start_of_turn>", "<end_of_turn>"]
USER_DEFINED = ["<br>", "<|tool|>"]
# GGUF token types (tokenizer.ggml.token_type).
NORMAL, UNKNOWN, CONTROL_T, USER_DEFINED_T, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

SPECIAL_CASES = [
    "<s>", "</s>", "<unk>", "<s>Hello", "Hello</s>", "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>", " <start_of_turn> ", "a<end_of_turn>b", "<start_of_turn<end_of_turn>", "<end_of_turn>1",
    "line<br>break", "<br><br>", " <br> ", "x<|tool|>y", "<|tool|><start_of_turn>", "<b<br>r>", "<br", "<|tool",
    "<start_of_turn>  two spaces", "<start_of_turn>\n", "tab\t<br>\tafter",
]


def train(corpus, variant, workdir):
    prefix = os.path.join(workdir, variant)
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, model_type="bpe", vocab_size=1200,
        character_coverage=0.985, byte_fallback=True, split_digits=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=variant == "llama", allow_whitespace_only_pieces=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, control_symbols=CONTROL,
        user_defined_symbols=USER_DEFINED, num_threads=1, minloglevel=2,
        max_sentence_length=1 << 16)
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


def token_type(sp, i):
    if sp.is_unknown(i):
        return UNKNOWN
    if sp.is_control(i):
        return CONTROL_T
    if sp.is_byte(i):
        return BYTE
    if sp.is_unused(i):
        return UNUSED
    return USER_DEFINED_T if sp.id_to_piece(i) in USER_DEFINED else NORMAL


def stretches(text, specials):
    """Splits text at the specials (longest match, left to right): [(is_special, str)]."""
    out, seg, pos = [], 0, 0
    while pos < len(text):
        match = max((s for s in specials if text.startswith(s, pos)), key=len, default=None)
        if match is None:
            pos += 1
            continue
        if pos > seg:
            out.append((False, text[seg:pos]))
        out.append((True, match))
        pos += len(match)
        seg = pos
    if seg < len(text):
        out.append((False, text[seg:]))
    return out


def encode(sp, text, parse_special):
    specials = USER_DEFINED + (CONTROL + ["<s>", "</s>", "<unk>"] if parse_special else [])
    ids = []
    for is_special, s in stretches(text, specials):
        ids += [sp.piece_to_id(s)] if is_special else sp.encode(s)
    return ids


def main():
    corpus_src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/common-licenses/GPL-3"
    texts = FIXED + LONG + random_cases(160, seed=1234) + SPECIAL_CASES
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.txt")
        with open(corpus_src, encoding="utf-8") as f, open(corpus, "w", encoding="utf-8") as out:
            out.write(f.read())
            # The fragments, so that the other scripts and digits have pieces of their own.
            for _ in range(20):
                out.write("\n".join(FRAGMENTS + FIXED) + "\n")
        for variant in ("llama", "gemma"):
            sp = train(corpus, variant, work)
            n = sp.get_piece_size()
            vocab = [f"# add_space_prefix {int(variant == 'llama')}; SentencePiece BPE trained on "
                     f"{os.path.basename(corpus_src)} + tokenizer_strings.py by tests/reference/make_spm_fixture.py",
                     "# type <tab> score <tab> hex(piece)"]
            for i in range(n):
                vocab.append(f"{token_type(sp, i)}\t{sp.get_score(i)!r}\t{sp.id_to_piece(i).encode('utf-8').hex()}")
            lines = [f"# sentencepiece {spm.__version__} on spm-{variant}.vocab; made by "
                     "tests/reference/make_spm_fixture.py",
                     "# FLAG (S: parse special, P: control tokens as plain text) <tab> hex(UTF-8 text) <tab> ids"]
            n_cases, n_bytes = 0, 0
            for text in dict.fromkeys(texts):
                has_control = any(s in text for s in CONTROL + ["<s>", "</s>", "<unk>"])
                for parse in ((True, False) if has_control else (True,)):
                    ids = encode(sp, text, parse)
                    n_bytes += sum(1 for i in ids if sp.is_byte(i))
                    lines.append(f"{'S' if parse else 'P'}\t{text.encode('utf-8').hex()}\t{' '.join(map(str, ids))}")
                    n_cases += 1
            for name, body in ((f"spm-{variant}.vocab", vocab), (f"spm-{variant}.txt", lines)):
                with open(os.path.join(OUT_DIR, name), "w") as f:
                    f.write("\n".join(body) + "\n")
            print(f"spm-{variant}: {n} pieces, {n_cases} cases, {n_bytes} byte-fallback tokens")


if __name__ == "__main__":
    main()
