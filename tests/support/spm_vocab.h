// Reading the SentencePiece vocabularies of tests/data/tokenizer/spm-*.vocab (written by
// tests/reference/make_spm_fixture.py) into a Vocab as the GGUF loader fills it: model
// "llama", <unk> 0, <s> 1 (added), </s> 2, and add_space_prefix from the file's header.
// Shared by the tokenizer tests and the tokenizer fuzz harness.
#pragma once

#include <string>

#include "runtime/model/vocab.h"

namespace wt::test {

// False, with *error set, when the file cannot be read or a line is malformed.
bool read_spm_vocab(const std::string& path, Vocab* out, std::string* error);

}  // namespace wt::test
