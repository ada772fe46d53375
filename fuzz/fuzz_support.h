// What the harnesses share: failing loudly (abort, so libFuzzer saves the input), status
// checks against the statuses a call documents, tiny models written once per process, and an
// independent UTF-8 validity check for the text the library hands out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "support/gguf_writer.h"
#include "whittle.h"

namespace wt::fuzz {

// Prints the message (printf-style) and aborts: libFuzzer reports a deadly signal and saves
// the input that got here.
[[noreturn]] void fail(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Aborts unless `status` is one of `allowed` (what `call` documents for this input).
void expect_status(wt_status status, std::initializer_list<wt_status> allowed, const char* call);

// Routes the library's log lines nowhere: a million runs of a failing load would otherwise
// flood the output libFuzzer's own report has to be read from.
void quiet_logs();

// Sends what the code under test prints with stdio (the tools' usage, errors and tables) to
// /dev/null; libFuzzer's and the sanitizers' reports still go to the log.
void silence_stdio();

// The small model shapes the harnesses and the seed corpora use (a few KB to a few hundred;
// test::fuzz_model_options is the larger one, shared with the regression tests).
test::TinyModelOptions seed_model_options();  // 1 layer, n_embd 8, n_ff 32, tied output: ~12 KB

// Writes the model to a temporary file, loads it with wt_model_load and removes the file
// (the mapping outlives it). Aborts when the load fails: a harness without its model would
// only test nothing.
wt_model* load_model_bytes(const std::vector<uint8_t>& gguf, const std::string& name);

// True when text is well-formed UTF-8 (RFC 3629: no overlongs, surrogates or values above
// U+10FFFF). Written apart from runtime/model/utf8_stream.cpp so the two check each other.
bool is_valid_utf8(std::string_view text);

}  // namespace wt::fuzz
