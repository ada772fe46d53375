// whittle-plan's command line: the options and the one function that reads them (apart from
// main so that fuzz/fuzz_tool_args.cpp runs the same reader).
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "whittle.h"

namespace wt_plan {

struct Options {
  std::string board;
  std::string board_file;
  std::string model;
  int n_ctx = 0;
  int n_new = 256;
  int n_threads = 0;
  std::string method = "full";
  float keep = -1.0f;
  std::vector<std::pair<std::string, std::string>> prune_params;
  wt_backend_kind backend = WT_BACKEND_CPU;
  bool backend_set = false;
  bool logits_all = false;
  int kv_device_blocks = 0;
  int kv_block_tokens = 64;
  int n_batch_rows = 0;  // wt_context_params.n_batch_rows (0: the default)
  bool kv_pager_copy = false;
  wt_kv_type kv_type = wt_context_default_params().kv_type;  // f16
  std::string json;
  bool list = false;
  bool beyond_train_ctx = false;
  wt_model_params load = wt_model_default_params();  // its rope fields (--rope-scaling ...)
};

// Prints the usage text to `out`.
void usage(FILE* out, const char* argv0);

// Reads argv into *o; *help: -h or --help was given (the other options then unchecked).
// False after printing "error: ..." for a bad or missing argument.
bool parse_args(int argc, char** argv, Options* o, bool* help);

}  // namespace wt_plan
