// The tokenizer vocabulary as the GGUF stores it (tokenizer.ggml.*), validated on load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wt {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

struct Vocab {
  std::string model;                   // tokenizer.ggml.model ("gpt2", or "llama": SentencePiece)
  std::string pre;                     // tokenizer.ggml.pre ("smollm", "llama-bpe", "qwen2", "gpt-4o")
  std::vector<std::string> tokens;     // token text in GGUF form (byte-level: "Ġthe")
  std::vector<TokenType> token_types;  // same length as tokens (normal when absent)
  std::vector<std::string> merges;     // "Ġ t" pairs, rank = index (gpt2)
  std::vector<float> scores;           // SentencePiece: a merge's priority is its piece's score
  int32_t bos = -1, eos = -1, eot = -1, unk = -1, pad = -1;
  int32_t eom = -1;  // Llama 3.1's <|eom_id|>: a turn that ends with a tool call, awaiting its result
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = false;       // SentencePiece: "▁" before the text (tokenizer.ggml.add_space_prefix)
  std::string chat_template;           // tokenizer.chat_template, "" when absent

  int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }
  // A token that ends a generation.
  bool is_end(int32_t token) const { return token >= 0 && (token == eos || token == eot || token == eom); }
};

}  // namespace wt
