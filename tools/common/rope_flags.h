// The rope scaling flags whittle-run and whittle-bench take (llama.cpp's spellings), into
// the wt_model_params a tool loads its model with:
//   --rope-scaling none|linear|yarn   replace the file's scaling (default: the file's)
//   --rope-scale F                    the factor of linear or yarn, in [1, 1024]
//   --yarn-orig-ctx N                 yarn: the context the model was trained at (0: the file's)
#pragma once

#include <string>

#include "whittle.h"

namespace wt_tools {

// Whether `flag` is one of the three.
bool is_rope_flag(const std::string& flag);

// Applies `flag` with its `value` to *mp; false with *error set on a bad value.
bool apply_rope_flag(const std::string& flag, const std::string& value, wt_model_params* mp, std::string* error);

// After every flag: false with *error set when --rope-scale or --yarn-orig-ctx came
// without a scaling they apply to.
bool check_rope_flags(const wt_model_params& mp, std::string* error);

// The usage lines of the three flags (each line starting with two spaces), for --help.
extern const char* const kRopeFlagsUsage;

}  // namespace wt_tools
