// Per-kernel wall time for finding where a device spends a token (WT_VK_PROFILE=1 in the
// environment). Vulkan has no ncu: with the variable set, every dispatch is submitted and
// waited for on its own, timed by its batch's timestamps (VkStream; on the host, submit and
// wait included, where the queue has none), and the totals per kernel variant are printed
// to stderr when the backend is destroyed. A lone dispatch misses the overlap it would have
// in a batch, so the figures compare kernels; they do not add up to a token's time.
#pragma once

#include <chrono>
#include <cstdint>

#include "pipeline.h"

namespace wt::vk {

class KernelProfile {
 public:
  KernelProfile();  // on when WT_VK_PROFILE is set to anything but "0"
  bool on() const { return on_; }
  void add(Kernel k, std::chrono::steady_clock::duration d);
  void print() const;  // a table sorted by total time, to stderr; nothing when off or empty

 private:
  struct Entry {
    double ns = 0;
    uint64_t calls = 0;
  };
  bool on_ = false;
  Entry entries_[static_cast<size_t>(Kernel::count)] = {};
};

}  // namespace wt::vk
