// The tokenizer of a GGUF vocabulary: byte-level BPE (tokenizer.ggml.model "gpt2"), exact
// against HF tokenizers, or SentencePiece BPE ("llama", spm.h), exact against sentencepiece.
//
// Encoding: special tokens are cut out of the text first (longest match wins). Byte-level
// BPE splits the rest into words by the pre-tokenizer the file names (pretokenizer.h), each
// word's bytes become byte-level symbols, and merges are applied lowest rank first
// (leftmost on ties) until none applies. SentencePiece encodes each stretch between special
// tokens whole (spm.h). Immutable after create; encode is safe from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "pretokenizer.h"
#include "spm.h"
#include "vocab.h"

namespace wt {

class Tokenizer {
 public:
  // Errors: WT_ERR_UNSUPPORTED for a tokenizer model other than "gpt2" and "llama" or an
  // unknown pre-tokenizer (the message names it); WT_ERR_FORMAT for a malformed merge, a
  // merge whose parts or result are not tokens, scores missing for "llama", token_types of
  // the wrong length, or a BOS/EOS id out of range while add_bos/add_eos asks for it.
  static Status create(const Vocab& vocab, std::unique_ptr<Tokenizer>* out);

  // Replaces *out with the tokens of text. Any bytes are accepted: ill-formed UTF-8 is
  // encoded byte by byte, and a byte with no token in the vocabulary is dropped.
  // add_special: BOS/EOS as vocab.add_bos/add_eos ask; a text whose first token is BOS
  // (a chat template that writes it) keeps that one only. parse_special: control tokens
  // written in the text ("<|im_start|>") become their ids. User-defined tokens are always
  // matched, as HF tokenizers and llama.cpp do.
  Status encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>* out) const;

  // The raw bytes a token stands for (byte-level mapping undone; SentencePiece's "▁"
  // as a space, <0xXX> as its byte); a control or user-defined token gives its text. May be part of a UTF-8 character. Empty for an id
  // out of range.
  const std::string& token_bytes(int32_t id) const;

  int32_t n_vocab() const { return static_cast<int32_t>(bytes_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  // A byte trie over the special tokens' texts, for longest-match search.
  struct TrieNode {
    int32_t token = -1;
    bool always = false;  // user-defined: matched even without parse_special
    std::vector<std::pair<uint8_t, int32_t>> next;
  };

  struct Scratch;  // per-encode buffers, reused across words

  Tokenizer() = default;
  Status build_merges(const Vocab& vocab);
  void add_special(const std::string& text, int32_t id, bool always);
  // Longest special token at text[pos]; returns its length and sets *id, or 0.
  size_t match_special(std::string_view text, size_t pos, bool parse_special, int32_t* id) const;
  void encode_plain(std::string_view text, bool space_prefix, Scratch* s, std::vector<int32_t>* out) const;
  void encode_word(std::string_view word, Scratch* s, std::vector<int32_t>* out) const;

  std::unique_ptr<SpmEncoder> spm_;  // set for SentencePiece; byte-level BPE otherwise
  bool add_space_prefix_ = false;    // SentencePiece: tokenizer.ggml.add_space_prefix
  PretokenizerKind pre_ = PretokenizerKind::gpt2;
  bool ignore_merges_ = false;  // a word that is itself a token skips BPE (Llama 3)
  int32_t bos_ = -1, eos_ = -1;
  bool add_bos_ = false, add_eos_ = false;
  std::vector<std::string> bytes_;                       // token id -> raw bytes
  std::unordered_map<std::string, int32_t> text_to_id_;  // byte-level text -> id
  int32_t byte_token_[256];                              // byte -> its one-symbol token, -1 if none
  std::unordered_map<uint64_t, Merge> merges_;           // (left << 32 | right) -> merge
  std::vector<TrieNode> trie_;                           // [0] is the root
  bool special_first_byte_[256] = {};
};

}  // namespace wt
