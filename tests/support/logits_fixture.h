// Bit-level fingerprints of the default model's logits, for refactors that must not change
// a single bit: for a fixed prompt and each case (full KV, every pruning method at keep
// 0.2, the pager), the FNV-1a hash of the last prefill row's logits and of each of a few
// greedy decode steps' logits, and the greedy tokens. Uses the C API only, so the generator
// (tests/tools/make_logits_fixture.cpp) builds against an older library unchanged and the
// fixture it writes records that library's output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "whittle.h"

namespace wt::test {

struct LogitsCase {
  std::string name;                        // "fastkv", "full+pager", ...
  std::vector<std::pair<std::string, std::string>> params;  // wt_prune_set_param pairs
  int32_t kv_device_blocks = 0;            // > 0: the pager, a device pool of this many layers' blocks
};

struct LogitsPrint {
  std::string name;
  std::vector<uint64_t> hashes;  // [0]: the prefill's last row; [1..]: each decode step
  std::vector<wt_token> tokens;  // the greedy token after the prefill and after each step
};

// Fixed for every fixture: the prompt is the first kPromptTokens tokens of the same text
// the real-model tests use (tests/support/real_model.cpp), kDecodeSteps greedy steps,
// 2 threads, the fast matmul mode.
inline constexpr int32_t kLogitsPromptTokens = 640;
inline constexpr int32_t kLogitsDecodeSteps = 8;

// Every case of the fixture, in file order.
std::vector<LogitsCase> logits_cases();

// The CPU features that pick the SIMD kernels ("avx512vnni+avx512bw+..."): bit identity is
// only defined between runs that took the same kernels.
std::string logits_isa();

// Runs one case. false with *err set on a failing call.
bool run_logits_case(const wt_model* model, const std::vector<wt_token>& prompt, const LogitsCase& c,
                     LogitsPrint* out, std::string* err);

// The fixture file: a line "isa <isa>", then per case "case <name> <hash>... | <token>...".
bool write_logits_fixture(const std::string& path, const std::string& isa, const std::vector<LogitsPrint>& prints,
                          std::string* err);
bool read_logits_fixture(const std::string& path, std::string* isa, std::vector<LogitsPrint>* prints,
                         std::string* err);

// The prompt text (a Debian license, as real_model.cpp reads it).
std::string logits_prompt_text();

}  // namespace wt::test
