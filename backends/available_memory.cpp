#include "available_memory.h"

#include "base/host_memory.h"

namespace wt {

Status available_memory(const Backend& backend, AvailableMemory* out) {
  AvailableMemory a;
  if (backend.caps().unified_memory) {
    HostMemory h;
    WT_TRY(read_host_memory(&h));
    a.unified = true;
    a.total_bytes = h.total_bytes;
    a.available_bytes = h.available_bytes;
    a.source = std::string("detect (") + backend.caps().name + ", unified)";
    a.how = "in use now: MemTotal - MemAvailable from /proc/meminfo";
  } else {
    MemoryInfo mi;
    WT_TRY(backend.memory_info(&mi));
    if (mi.total_bytes == 0 || mi.free_bytes > mi.total_bytes)
      return error(WT_ERR_UNSUPPORTED, std::string("detect: ") + backend.caps().name + " reports no usable memory figures");
    a.unified = false;
    a.total_bytes = mi.total_bytes;
    a.available_bytes = mi.free_bytes;
    a.source = std::string("detect (") + backend.caps().name + ": " + backend.caps().device_name + ")";
    a.how = "in use now: the device's total - free memory";
  }
  *out = std::move(a);
  return Status::ok();
}

}  // namespace wt
