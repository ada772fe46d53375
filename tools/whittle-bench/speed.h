// whittle-bench speed mode, like llama-bench and beyond: the cross product of prompt
// lengths, generated tokens, thread counts, methods and method parameters; repetitions
// interleaved across methods, reported as mean ± stddev, each pruned figure also as a ratio
// to full KV from the same repetitions, and as a fraction of the machine's roofline.
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"

namespace bench {

struct SpeedOptions {
  std::vector<int32_t> prompt_lengths = {512, 2048};  // 0: decode only (one prompt token)
  std::vector<int32_t> n_gen = {16, 128};
  std::vector<int> threads = {2};
  std::vector<MethodSpec> methods;  // every point of the parameter cross product; full added
  int reps = 5;
  uint64_t seed = 1;
};

struct SpeedOutput {
  std::vector<Json> records;
  std::string markdown;
};

// machines: one probe per thread count (probe_machine), in the order of o.threads.
bool run_speed(const BenchModel& m, const std::vector<Machine>& machines, const SpeedOptions& o, SpeedOutput* out,
               std::string* error);

}  // namespace bench
