// The seed corpus generator (make_corpus.cpp): one function per harness, each returning its
// seeds by file name, and the encoder that lays values out the way FuzzedDataProvider reads
// them back, so a seed of fuzz_chat or fuzz_api means a chosen conversation or set of params.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wt::fuzz {

using Seeds = std::map<std::string, std::vector<uint8_t>>;

Seeds gguf_seeds(const std::string& real_model_path);  // real model: a header prefix, if present
Seeds tokenizer_seeds(const std::string& source_dir);  // from tests/data/tokenizer/{smollm,spm-llama}.txt
Seeds chat_seeds(const std::string& source_dir);  // the templates of tests/data/chat/ that Whittle runs
Seeds reply_seeds();  // corpus_fdp.cpp
Seeds api_seeds();
Seeds tool_args_seeds();  // corpus_tools.cpp
Seeds resume_seeds();     // runs the fuzzed suite (bench_setup.h) for real
Seeds state_seeds();      // corpus_state.cpp: the states of state_setup.h, whole and damaged

// Builds an input for FuzzedDataProvider (LLVM's fuzzer/FuzzedDataProvider.h): it takes
// integers from the end of the data, the last byte first and most significant first, and
// strings from the front (a backslash doubles itself; a backslash and any other byte end the
// string). Values are given in the order the harness consumes them.
class FdpEncoder {
 public:
  // An integer the harness reads with ConsumeIntegralInRange(lo, hi); `value` in [lo, hi].
  FdpEncoder& range(int64_t lo, int64_t hi, int64_t value);
  FdpEncoder& boolean(bool v) { return range(0, 255, v ? 1 : 0); }
  FdpEncoder& byte(uint8_t v) { return range(0, 255, v); }
  // ConsumeRandomLengthString: the text (no longer than the harness's max) at the front.
  FdpEncoder& string(const std::string& s);
  std::vector<uint8_t> bytes() const;

 private:
  std::vector<uint8_t> front_;
  std::vector<uint8_t> back_;  // in consumption order; stored reversed at the end
};

}  // namespace wt::fuzz
