// whittle-bench state mode (--state): restoring a saved context state (wt_context_state_*)
// against prefilling the prompt again (issue 30). For each prompt length and method (the
// --method/--keep/--prune-param cross product; full KV first), per repetition: the prompt
// prefilled (TTFT), the state saved to memory and to a file, and loaded into a second context
// from each; the loaded context's logits must be the prefilled one's, bit for bit. Reported:
// medians of TTFT, save and restore times, re-prefill / restore (the speedup), the state's
// size against the KV the method kept.
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"
#include "speed.h"

namespace bench {

struct StateOptions {
  std::vector<int32_t> prompt_lengths = {2048, 8192};
  int threads = 2;
  std::vector<MethodSpec> methods;  // default: full KV and SnapKV
  int reps = 3;
  uint64_t seed = 1;
};

bool run_state(const BenchModel& m, const Machine& mc, const StateOptions& o, SpeedOutput* out, std::string* error);

}  // namespace bench
