// whittle-bench --asl-calibrate: where ASL's variance test would select on this model
// (issue 26: tau per model). Each prompt (passkey, single needles at five depths, multi-key
// needles, key-value retrieval; --seed picks prompts other than the suite's) is prefilled once
// with ASL at asl_tau 1e-6, which does not fire, so the test runs at every layer from its
// first (max(asl_min_layer, asl_obs_layers - 1)) and wt_prune_stats.asl_ratios holds the
// whole curve of V_l / V_init. Printed: the curve per prompt, and for each tau on a grid the
// prompts it would fire on and at which layers.
// Records: one "asl_ratios" per prompt (the curve), one "asl_tau" per (length, tau).
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"

namespace bench {

struct AslCalibrateOptions {
  std::vector<int32_t> prompt_lengths = {2048};
  int threads = 2;
  uint64_t seed = 11;  // not the suite's default 1: calibrate on prompts it does not score
  std::string keep = "0.2";  // K_sel: the union of top sets the variance is taken over
  std::vector<std::pair<std::string, std::string>> params;  // more ASL parameters (asl_min_layer, ...)
};

bool run_asl_calibrate(const BenchModel& m, const Machine& mc, const AslCalibrateOptions& o, std::vector<Json>* records,
                       std::string* error);

}  // namespace bench
