// How the tools read their command lines: a Flags walks the arguments; for each flag the
// tool asks for its value as text, a number, a whole number in a range, KEY=VALUE, a
// backend, and every error is printed the one way ("error: -t expects ...") before the
// call returns false.
#pragma once

#include <string>
#include <utility>

#include "whittle.h"

namespace wt_tools {

// The most CPU worker threads the library takes: wt_context_create refuses n_threads above
// it (runtime/engine/context.cpp). whittle.h does not state it yet, so the tools keep it here
// and refuse a larger -t as a usage error before they start anything.
constexpr int kMaxThreads = 1024;

// A KV cache type by the name the tools take (f32, f16, q8_0); false for any other.
bool kv_type_from_name(const std::string& name, wt_kv_type* out);
// The name of a KV cache type ("f32", "f16", "q8_0"; "?" for a value that is none).
const char* kv_type_name(wt_kv_type type);

class Flags {
 public:
  Flags(int argc, char** argv) : argc_(argc), argv_(argv) {}

  // Moves to the next argument; false after the last.
  bool next() { return ++i_ < argc_; }
  const std::string flag() const { return argv_[i_]; }
  bool is(const char* name, const char* alias = nullptr) const {
    const std::string f = argv_[i_];
    return f == name || (alias && f == alias);
  }

  // The current flag's value (the next argument), consumed; false with "needs a value".
  bool text(const char** out);
  bool text(std::string* out);
  // A number strtod reads whole (any finite or infinite value; the caller checks range).
  bool number(double* out);
  // A whole number in [lo, hi].
  bool whole(long lo, long hi, int* out);
  // KEY=VALUE (a non-empty KEY).
  bool key_value(std::pair<std::string, std::string>* out);
  // cpu, vulkan or cuda.
  bool backend(wt_backend_kind* out);
  // f32, f16 or q8_0 (wt_kv_type).
  bool kv_type(wt_kv_type* out);
  // The value of a rope flag (is_rope_flag, rope_flags.h) applied to *mp.
  bool rope(wt_model_params* mp);

  // Prints "error: <message>" and returns false.
  static bool fail(const std::string& message);

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
};

}  // namespace wt_tools
