// Pre-tokenizers for byte-level BPE: split text into "words" that BPE encodes one at a
// time. Each is a hand-written scanner equivalent to the regex HF tokenizers runs (on
// Oniguruma), over code points classed by unicode_tables.h. std::regex would be slow and
// has no \p{L}.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"

namespace wt {

enum class PretokenizerKind {
  gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  smollm,  // every \p{N} its own word (HF Digits, individual), then gpt2 on the rest
  llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
           //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  qwen2,   // llama3 with \p{N} (single digits) for \p{N}{1,3}
  gpt4o,   // [^\r\n\p{L}\p{N}]?U*L+C?|[^\r\n\p{L}\p{N}]?U+L*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|
           //  \s*[\r\n]+|\s+(?!\S)|\s+ with U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], L =
           //  [\p{Ll}\p{Lm}\p{Lo}\p{M}], C = (?i:'s|'t|'re|'ve|'m|'ll|'d) (o200k, Phi-4-mini)
};

// Maps tokenizer.ggml.pre to a kind. "" (no key in the file) means "default", the GPT-2
// regex, as llama.cpp reads it. WT_ERR_UNSUPPORTED names anything else unknown.
Status pretokenizer_from_name(std::string_view name, PretokenizerKind* out);

// Appends the words of text to out_words, in order; their concatenation is text.
// Ill-formed UTF-8 is not an error: each invalid byte is a unit of its own, classed like
// punctuation (not letter, number or space), so it stays in the output unchanged and
// encode/decode round-trips arbitrary bytes.
void pretokenize(PretokenizerKind kind, std::string_view text, std::vector<std::string_view>* out_words);

}  // namespace wt
