// The parity binary's main: doctest's, except that a run which only skipped (no device,
// no non-CPU backend compiled in, or an op no backend implements) exits with 77, which ctest shows as "Skipped".
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "harness.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  return rc == 0 && wt::parity::g_skipped && !wt::parity::g_ran ? 77 : rc;
}
