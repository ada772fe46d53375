// Skip bookkeeping of the Vulkan model tests: a run that only skipped exits with 77.
#pragma once

namespace wt::test {

inline bool g_vulkan_skipped = false;
inline bool g_vulkan_ran = false;

}  // namespace wt::test
