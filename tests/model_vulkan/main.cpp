// The device model tests' main (Vulkan and CUDA binaries): doctest's, except that a run
// which only skipped (no model file, a build without the backend, or no device) exits with
// 77, which ctest shows as "Skipped" rather than passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "model_vulkan.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  return rc == 0 && wt::test::g_vulkan_skipped && !wt::test::g_vulkan_ran ? 77 : rc;
}
