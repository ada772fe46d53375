// whittle-bench's command line: the options, the reader and the method cross product (apart
// from main so that fuzz/fuzz_tool_args.cpp runs the same code).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.h"

#ifndef WHITTLE_BENCH_PLOT_SCRIPT
#define WHITTLE_BENCH_PLOT_SCRIPT "plot.py"
#endif

namespace bench {

// The most runs per prompt the method lists may make (methods x keeps x parameter values).
constexpr double kMaxMethodSpecs = 4096;

struct Args {
  std::string model, suite, json, jsonl, csv, plot_dir, resume, plot_script = WHITTLE_BENCH_PLOT_SCRIPT;
  std::string backend = "cpu";
  wt_backend_kind backend_kind = WT_BACKEND_CPU;
  wt_model_params load = wt_model_default_params();  // its rope fields (--rope-scaling ...)
  std::vector<int32_t> p, n = {16, 128}, threads = {2};
  bool p_given = false, n_given = false, seed_given = false;
  bool summarize = false;  // --summarize: with --resume, run nothing new
  int reps = 5;
  uint64_t seed = 1;
  std::vector<std::string> methods, keeps;
  Variants variants;  // --kv-type f32,f16,q8_0, --matmul fast,f32, --batch-rows 0,512: every method in each (with_variants)
  std::vector<std::pair<std::string, std::vector<std::string>>> params;  // key -> values
  std::vector<TaskSpec> tasks;  // --task: the suite's tasks instead of its preset's
  bool tasks_given = false;
  // --fidelity: which real-text prompts the suite adds (agreement, KL) instead of its preset's.
  bool fidelity_given = false, fidelity_agree = true, fidelity_kl = true;
  double kv_device = 0.25;
  int32_t kv_block = 64;
  enum class Mode { speed, suite, prune, asl, asl_calibrate, pager, state } mode = Mode::speed;
  std::string command;
};

// Prints "error: <what>" and the usage to stderr; returns 2 (the exit code).
int usage_error(const std::string& what);

// Reads argv into *a: 0 to run, -1 after printing the help or the method list (exit 0), else
// the exit code after printing the error.
int parse(int argc, char** argv, Args* a);

// Methods x keep values x every --prune-param's values: one MethodSpec per point (at most
// kMaxMethodSpecs, which parse() checks).
std::vector<MethodSpec> cross_product(const Args& a);

}  // namespace bench
