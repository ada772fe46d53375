// What a Jinja template may call on its values (jinja.h runs templates): Jinja's filters and
// tests, as jinja2 defines them (tojson as transformers replaces it), and the methods of
// Python's str and dict that chat templates call. Every failure is a Status, as Python's
// exception would be.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "jinja_value.h"

namespace wt {

struct JinjaArgs {
  std::vector<JinjaValue> pos;
  std::vector<std::pair<std::string, JinjaValue>> kw;
  // The renderer's step count and bound (jinja.h): a builtin charges the work of its loops
  // over items to it, beyond the cost of its arguments, which the renderer charges.
  uint64_t* steps = nullptr;
  uint64_t max_steps = 0;
  // The argument at position `index` or named `name`, or null when neither is given.
  const JinjaValue* get(size_t index, const char* name) const;
  Status charge(uint64_t n) const;
  JinjaArgs with_positional(std::vector<JinjaValue> p) const;  // these positions, the same budget
};

// Limits every value a template makes: a string's bytes, a list's items (a string
// iterates as characters only up to it), how deeply lists and dicts nest (JinjaValue::depth)
// and what walking one costs (JinjaValue::cost: 16 MiB of strings).
inline constexpr size_t kJinjaMaxBytes = size_t{8} << 20;
inline constexpr size_t kJinjaMaxItems = 100'000;
inline constexpr uint32_t kJinjaMaxNesting = 64;
inline constexpr uint64_t kJinjaMaxCost = 1'000'000;

Status jinja_filter(const std::string& name, const JinjaValue& x, const JinjaArgs& args, JinjaValue* out);
Status jinja_test(const std::string& name, const JinjaValue& x, const JinjaArgs& args, bool* out);

// Whether `self.name(...)` is a method this knows (str and dict methods).
bool jinja_has_method(const JinjaValue& self, const std::string& name);
Status jinja_method(const JinjaValue& self, const std::string& name, const JinjaArgs& args, JinjaValue* out);

// The failure a template's error is reported as (WT_ERR_UNSUPPORTED: the template cannot
// format this conversation).
Status jinja_error(const std::string& what);

}  // namespace wt
