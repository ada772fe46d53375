// whittle-bench --suite: accuracy, fidelity and speed of every method against full KV on
// the same prompts, in one process. For each prompt length, each prompt (synthetic tasks,
// then two fidelity prompts of real text) runs under every method in turn, so each method's
// timing ratio to full KV comes from the same prompt at nearly the same moment.
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"

namespace bench {

struct SuiteOptions {
  std::string name;
  std::vector<int32_t> lengths;
  std::vector<TaskSpec> tasks;
  bool fidelity_agree = true;  // greedy top-1 agreement with full KV over n_agree tokens
  bool fidelity_kl = true;     // KL(full || method) over n_kl teacher-forced real tokens
  int32_t n_agree = 32;
  int32_t n_kl = 32;
  uint64_t seed = 1;
  std::vector<MethodSpec> methods;  // "full" first (added when missing)
  // --resume: the "run" records of an earlier run of the same suite. A method's run of a
  // prompt that is there is taken from it (record kept as it was) instead of run, unless a
  // method that runs is compared with it (run_suite's resume_plan).
  std::vector<Json> resume;
  // false (--summarize): run no prompt; each length's summary covers the prompts before the
  // first one not in `resume`.
  bool run_missing = true;
};

// The built-in suites: "quick" (1k, 2k; passkey + NIAH at 5 depths; agreement), "full"
// (1k-8k; every task; agreement and KL), "tiny" (a few hundred tokens, for ctest).
bool suite_preset(const std::string& name, int32_t n_ctx_train, SuiteOptions* out, std::string* error);

struct SuiteOutput {
  std::vector<Json> records;
  std::string markdown;
  bool complete = false;  // false: stopped by Ctrl-C (what is done is in records)
};

// Runs the suite; false with *error on a failure that is not a Ctrl-C.
bool run_suite(const BenchModel& m, const Machine& mc, const SuiteOptions& o, SuiteOutput* out, std::string* error);

}  // namespace bench
