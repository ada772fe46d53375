// Reading the tokenizer fixtures (tests/data/tokenizer/*.txt, written by
// tests/reference/make_tokenizer_fixture.py and make_spm_fixture.py) and printing their
// cases readably when one does not match.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/tokenizer.h"

namespace wt::test {

struct TokenizerCase {
  bool parse_special = true;  // FLAG S; P: special tokens left as text
  std::string text;
  std::vector<int32_t> ids;
};

// Bytes from a string of hex digit pairs.
std::string from_hex(const std::string& hex);
// The cases of tests/data/tokenizer/<name>.txt; fails the test when it cannot be read.
std::vector<TokenizerCase> read_tokenizer_cases(const std::string& name);
// "[1 2 3]"
std::string ids_string(const std::vector<int32_t>& ids);
// Printable ASCII as is, any other byte as \xNN; cut at 300 characters.
std::string escaped(const std::string& text);

// Tokenizer::create, failing the test when it refuses the vocabulary.
std::unique_ptr<Tokenizer> make_tokenizer(const Vocab& vocab);
// The ids of text (failing the test on an error status).
std::vector<int32_t> encode(const Tokenizer& t, const std::string& text, bool add_special = false,
                            bool parse_special = true);
// Every token's bytes, joined.
std::string detokenize(const Tokenizer& t, const std::vector<int32_t>& ids);

}  // namespace wt::test
