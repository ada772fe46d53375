// whittle-bench pager mode (--pager): the KV pager's cost and how much of it is hidden, and
// SlimInfer's swap ablation (its Tables 4 and G). For each prompt length and method (the
// --method/--keep/--prune-param cross product, e.g. slim_gamma=0.9,0.95,0.99), three
// contexts run the same prompt and the same teacher-forced tokens, interleaved per
// repetition: every block resident, the pager with prefetch (async), the pager waiting for
// every swap on the host (sync). Reported per configuration: TTFT/TPOT/E2E medians and the
// E2E ratio to resident; bytes moved per decoded token each way; blocks fetched per token and
// the share fetched on demand; the decode copy time (the sync run's host wait for its
// fetches), the decode time the async run lost against resident and the fraction of the copy
// time hidden (1 - lost / copy; null when the copy time is below twice the spread of the
// resident decode time: noise); greedy top-1 agreement with full KV over the decoded tokens.
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"
#include "speed.h"

namespace bench {

struct PagerOptions {
  std::vector<int32_t> prompt_lengths = {1024};
  int32_t n_gen = 32;
  int threads = 2;
  std::vector<MethodSpec> methods;  // default: full and sliminfer
  double device_fraction = 0.25;    // device pool as a fraction of the KV at n_ctx
  int32_t block_tokens = 64;
  int reps = 3;
  uint64_t seed = 1;
};

bool run_pager(const BenchModel& m, const Machine& mc, const PagerOptions& o, SpeedOutput* out, std::string* error);

}  // namespace bench
