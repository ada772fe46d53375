// The Vulkan backend for a test, or false after a visible skip where there is no usable
// device (parity::g_skipped; main() then exits with ctest's skip code).
#pragma once

#include <doctest/doctest.h>

#include <memory>

#include "backends/backend.h"
#include "harness.h"

namespace wt::parity {

inline bool open_vulkan(const BackendOptions& o, std::unique_ptr<Backend>* out) {
  const Status st = create_vulkan_backend(o, out);
  if (st.code() == WT_ERR_UNSUPPORTED) {
    MESSAGE("SKIP vulkan: no usable device: " << st.message());
    g_skipped = true;
    return false;
  }
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  g_ran = true;
  return true;
}

}  // namespace wt::parity
