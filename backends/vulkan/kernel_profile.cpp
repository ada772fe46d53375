#include "kernel_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace wt::vk {

KernelProfile::KernelProfile() {
  const char* v = std::getenv("WT_VK_PROFILE");
  on_ = v && *v && std::strcmp(v, "0") != 0;
}

void KernelProfile::add(Kernel k, std::chrono::steady_clock::duration d) {
  Entry& e = entries_[static_cast<size_t>(k)];
  e.ns += static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  e.calls += 1;
}

void KernelProfile::print() const {
  if (!on_) return;
  constexpr size_t n = static_cast<size_t>(Kernel::count);
  size_t order[n];
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    order[i] = i;
    total += entries_[i].ns;
  }
  if (total <= 0) return;
  std::sort(order, order + n, [&](size_t a, size_t b) { return entries_[a].ns > entries_[b].ns; });
  std::fprintf(stderr, "vulkan kernel profile (WT_VK_PROFILE; one dispatch per batch):\n");
  std::fprintf(stderr, "  %-26s %10s %7s %10s %12s\n", "kernel", "total ms", "share", "calls", "us per call");
  for (size_t i : order) {
    const Entry& e = entries_[i];
    if (e.calls == 0) continue;
    std::fprintf(stderr, "  %-26s %10.2f %6.1f%% %10llu %12.1f\n", kernel_name(static_cast<Kernel>(i)), e.ns / 1e6,
                 100.0 * e.ns / total, static_cast<unsigned long long>(e.calls), e.ns / 1e3 / e.calls);
  }
}

}  // namespace wt::vk
