// A stand-in for a Vulkan driver that exit() has already torn down (issue 28), for a test on
// lavapipe, whose teardown leaves its entry points working. dead_driver.cpp defines, in the
// test executable, the Vulkan functions the library calls when it waits, frees and destroys;
// with the library linked statically they take the library's calls and pass them on to the
// loader (dlsym RTLD_NEXT). After kill_driver() any of them fails the process at once (exit
// status 1, naming the call), as a call into NVIDIA's torn-down driver crashes it.
#pragma once

#include <cstdint>

namespace wt::test {

// From now on a Vulkan call of the library fails the process.
void kill_driver();

// Calls seen by the wrappers: submits (any wrapped call proves the wrappers are in effect)
// and vkFreeMemory (a free that really went to the driver).
uint64_t driver_submits();
uint64_t driver_memory_frees();

}  // namespace wt::test
