#include "rope_flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace wt_tools {

const char* const kRopeFlagsUsage =
    "  --rope-scaling none|linear|yarn  replace the file's rope scaling: a model read past\n"
    "             the context it was trained at (Qwen2.5 and Qwen3: yarn --rope-scale 4\n"
    "             --yarn-orig-ctx 32768); --rope-scale F its factor, above 1 and at most\n"
    "             1024; --yarn-orig-ctx N the trained context (default: the file's\n"
    "             context_length, which is 40960 in Qwen3's files)\n";

bool is_rope_flag(const std::string& flag) {
  return flag == "--rope-scaling" || flag == "--rope-scale" || flag == "--yarn-orig-ctx";
}

bool apply_rope_flag(const std::string& flag, const std::string& value, wt_model_params* mp, std::string* error) {
  if (flag == "--rope-scaling") {
    if (value == "none") mp->rope_scaling = WT_ROPE_SCALING_NONE;
    else if (value == "linear") mp->rope_scaling = WT_ROPE_SCALING_LINEAR;
    else if (value == "yarn") mp->rope_scaling = WT_ROPE_SCALING_YARN;
    else return *error = "--rope-scaling expects none, linear or yarn, got '" + value + "'", false;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  if (flag == "--rope-scale") {
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(v) || v < 1.0 || v > 1024.0)
      return *error = "--rope-scale expects a factor in [1, 1024], got '" + value + "'", false;
    mp->rope_scaling_factor = static_cast<float>(v);
    return true;
  }
  if (flag == "--yarn-orig-ctx") {
    const long v = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno == ERANGE || v < 0 || v > 1L << 30)
      return *error = "--yarn-orig-ctx expects a token count in [0, 1073741824], got '" + value + "'", false;
    mp->rope_orig_ctx = static_cast<int32_t>(v);
    return true;
  }
  return *error = "not a rope flag: " + flag, false;
}

bool check_rope_flags(const wt_model_params& mp, std::string* error) {
  const bool factor = mp.rope_scaling == WT_ROPE_SCALING_LINEAR || mp.rope_scaling == WT_ROPE_SCALING_YARN;
  if (!factor && mp.rope_scaling_factor != 1.0f)
    return *error = "--rope-scale applies to --rope-scaling linear or yarn", false;
  if (factor && mp.rope_scaling_factor == 1.0f)  // a factor of 1 would change nothing
    return *error = "--rope-scaling linear and yarn need --rope-scale above 1", false;
  if (mp.rope_scaling != WT_ROPE_SCALING_YARN && mp.rope_orig_ctx != 0)
    return *error = "--yarn-orig-ctx applies to --rope-scaling yarn", false;
  return true;
}

}  // namespace wt_tools
