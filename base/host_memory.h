// The host's memory as the kernel reports it (/proc/meminfo): what the planner's "detect"
// and a context's budget check start from.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace wt {

struct HostMemory {
  uint64_t total_bytes = 0;      // MemTotal
  uint64_t available_bytes = 0;  // MemAvailable: what can be allocated without swapping
};

// WT_ERR_UNSUPPORTED where /proc/meminfo is missing or has no usable figures;
// WT_ERR_OUT_OF_MEMORY when there is no memory left to open it.
Status read_host_memory(HostMemory* out);

}  // namespace wt
