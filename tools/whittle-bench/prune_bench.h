// whittle-bench --prune: prefill time of each pruning method relative to full KV, measured
// in the same process (interleaved repetitions, medians), and greedy top-1 agreement with
// full KV over the first generated tokens; --asl-compare: the layer ASL selects on a
// key-value retrieval prompt vs a question about prose, at the same length.
#pragma once

#include <string>
#include <vector>

#include "whittle.h"

struct PruneBenchOptions {
  std::vector<int> lengths = {1024, 2048, 4096};
  std::vector<std::string> methods;  // empty: every method
  float keep = 0.1f;
  int reps = 3;
  int threads = 2;
  int n_agree = 32;
  std::string json_path;  // one JSON record per (length, method) when set
  std::vector<std::pair<std::string, std::string>> params;
};

int run_prune_bench(wt_model* model, const PruneBenchOptions& o);
int run_asl_compare(wt_model* model, const PruneBenchOptions& o);
