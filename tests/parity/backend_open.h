// A backend for a test, or false after a visible skip where there is no usable device
// (parity::g_skipped; main() then exits with ctest's skip code); g_ran once one opens.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "backends/backend.h"
#include "harness.h"

namespace wt::parity {

// label names the backend in the skip message (a variant's options, say).
inline bool open_backend(const BackendMaker& m, const BackendOptions& o, const std::string& label,
                         std::unique_ptr<Backend>* out) {
  const Status st = m.create(o, out);
  if (st.code() == WT_ERR_UNSUPPORTED) {
    MESSAGE("SKIP " << label << ": " << st.message());
    g_skipped = true;
    return false;
  }
  REQUIRE_MESSAGE(st.is_ok(), label << ": " << st.message());
  g_ran = true;
  return true;
}

inline bool open_vulkan(const BackendOptions& o, std::unique_ptr<Backend>* out) {
  return open_backend(BackendMaker{"vulkan", &create_vulkan_backend}, o, "vulkan (no usable device)", out);
}

}  // namespace wt::parity
