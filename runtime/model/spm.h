// SentencePiece BPE (tokenizer.ggml.model "llama": Llama 1/2, TinyLlama, Mistral, Gemma),
// exact against Google's sentencepiece for text between special tokens.
//
// A stretch of text has its spaces written as U+2581 ("▁"), optionally a "▁" put in
// front, and is split into UTF-8 characters; then the adjacent pair whose concatenation is
// a piece with the highest score merges (leftmost on ties) until no pair is a piece. A
// piece of type unused is split back into the two it was made of (sentencepiece's
// resegmentation); a character that is no piece becomes its bytes' <0xXX> tokens, or, where
// the vocabulary lacks one of them, the unknown token (one for a run of such characters).
// Where this differs from sentencepiece: ill-formed UTF-8 is kept as bytes (sentencepiece
// makes it U+FFFD), so any bytes round-trip. Only normal, user-defined and unused
// pieces take part in merges: control, unknown and byte tokens never come out of text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "vocab.h"

namespace wt {

class SpmEncoder {
 public:
  // Buffers one encode call reuses across stretches.
  struct Scratch {
    struct Symbol {
      uint32_t start, len;  // in text; len 0: merged into its left neighbour
      int32_t prev, next;
    };
    struct Pair {
      float score;
      int32_t left;  // symbol index
      uint32_t len;  // of the merged piece: a pair whose sides changed since is stale
    };
    std::string text;  // the stretch as SentencePiece sees it
    std::string key;
    std::vector<Symbol> symbols;
    std::vector<Pair> heap;
    std::unordered_map<std::string, uint32_t> unused_splits;  // unused piece -> its left part's length
    bool last_unknown = false;  // the last token emitted stood for unknown characters
  };

  // WT_ERR_FORMAT: scores missing or not one per token.
  static Status create(const Vocab& vocab, SpmEncoder* out);

  // Appends the tokens of text; space_prefix puts a "▁" in front (nothing for empty text).
  void encode(std::string_view text, bool space_prefix, Scratch* s, std::vector<int32_t>* out) const;

  // A piece's text as bytes: each "▁" back to a space.
  static std::string piece_bytes(const std::string& piece);

 private:
  int32_t find_piece(Scratch* s, uint32_t start, uint32_t len) const;
  void emit(Scratch* s, uint32_t start, uint32_t len, std::vector<int32_t>* out) const;

  std::unordered_map<std::string, int32_t> pieces_;  // mergeable pieces -> id
  std::vector<float> scores_;
  std::vector<bool> unused_;
  int32_t byte_token_[256];  // byte -> its <0xXX> token, -1 if none
  int32_t unk_ = -1;
};

}  // namespace wt
