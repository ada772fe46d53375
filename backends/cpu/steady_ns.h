// Nanoseconds of std::chrono::steady_clock, for intervals: the pool's measuring windows and
// the copy worker's busy and waited time.
#pragma once

#include <chrono>
#include <cstdint>

namespace wt::cpu {

inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace wt::cpu
