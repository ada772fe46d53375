// Runs a Jinja template: the subset chat templates use (jinja_parse.h reads it), as
// transformers renders them (jinja2's ImmutableSandboxedEnvironment with trim_blocks,
// lstrip_blocks and the loop controls; its `tojson`; `raise_exception` and `strftime_now`
// given to the template). A GGUF's template is untrusted input: rendering is bounded in
// output, in steps and in call depth, and fails with a Status, never a crash.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

#include "base/status.h"
#include "jinja_parse.h"
#include "jinja_value.h"

namespace wt {

struct JinjaLimits {
  size_t max_output_bytes = size_t{8} << 20;
  uint64_t max_steps = 10'000'000;  // nodes run, expressions evaluated, 16 bytes copied
  int max_call_depth = 16;          // macros calling macros
};

struct JinjaRenderOptions {
  std::tm now{};  // what strftime_now formats
  JinjaLimits limits;
};

// Renders `program` with `globals` (the template's variables; function values named
// "raise_exception" and "strftime_now" call those). WT_ERR_INVALID_ARGUMENT where the
// template raises (raise_exception's message), WT_ERR_UNSUPPORTED where it fails otherwise
// (an undefined value's attribute, a type error, a limit), naming what failed.
Status jinja_render(const JinjaProgram& program, const JinjaDict& globals, const JinjaRenderOptions& options,
                    std::string* out);

}  // namespace wt
