// The whittle-bench suite fuzz_resume replays --resume documents against, and the seed
// corpus runs for real: the tiny synthetic model of the bench ctests (8 layers, a byte-level
// tokenizer), the "tiny" suite at one length with full KV and two methods, fixed machine
// facts. Built once per process.
#pragma once

#include "suite.h"  // tools/whittle-bench

namespace wt::fuzz {

struct BenchSetup {
  bench::BenchModel model;
  bench::Machine machine;
  bench::SuiteOptions suite;
  bench::Json meta;  // base_record("meta", ...): what a document's meta must match
};

const BenchSetup& bench_setup();

}  // namespace wt::fuzz
