// The memory a backend's allocations can use now: for a unified-memory device (Jetson, the
// CPU) the host's figure — the GPU's own free-memory call misses what the page cache could
// give back — and for a discrete device its memory_info. The planner's "detect" board and a
// context's budget check both start here.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.h"

namespace wt {

struct AvailableMemory {
  bool unified = true;
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
  std::string source;  // "detect (cpu, unified)", "detect (cuda: NVIDIA H100 80GB HBM3)"
  std::string how;     // where in_use comes from
};

// Errors as read_host_memory (base/host_memory.h), or the backend's memory_info;
// WT_ERR_UNSUPPORTED when the device reports no usable figures.
Status available_memory(const Backend& backend, AvailableMemory* out);

}  // namespace wt
