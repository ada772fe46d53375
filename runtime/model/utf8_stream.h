// UTF-8 helpers shared by the tokenizer, and the streaming detokenizer behind
// wt_detokenizer_*: token bytes go in, only complete characters come out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wt {

enum class Utf8Result : uint8_t {
  ok,         // a well-formed character of n_bytes bytes
  invalid,    // ill-formed: the first n_bytes bytes are its maximal subpart (>= 1)
  truncated,  // the n_bytes left are a well-formed prefix that needs more bytes
};

struct Utf8Char {
  Utf8Result result = Utf8Result::invalid;
  uint32_t n_bytes = 1;
  uint32_t cp = 0;  // valid only when result == ok
};

// Decodes the character at s[pos] (pos < s.size()) strictly by RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF. "Maximal subpart" is the Unicode
// recommendation (also Python's errors="replace"): one U+FFFD per ill-formed run.
Utf8Char utf8_decode(std::string_view s, size_t pos);

// Appends the UTF-8 encoding of cp (cp <= U+10FFFF) to out.
void utf8_append(uint32_t cp, std::string* out);

// Holds back a character split across tokens until its last byte arrives. Ill-formed
// bytes come out as U+FFFD (one per maximal subpart). Copyable, so a caller can push
// into a copy and commit only when the output fits its buffer.
class Utf8Stream {
 public:
  // Appends to out the text that bytes complete.
  void push(std::string_view bytes, std::string* out);
  // Appends what is held back (an incomplete character becomes one U+FFFD) and resets.
  void flush(std::string* out);
  // Bytes held back, waiting for the rest of a character (0..3).
  size_t n_pending_bytes() const { return n_pending_; }

 private:
  char pending_[4] = {};
  size_t n_pending_ = 0;
};

}  // namespace wt
