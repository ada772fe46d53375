#include "host_memory.h"

#include <cerrno>
#include <cstdio>

namespace wt {

Status read_host_memory(HostMemory* out) {
  // stdio and fixed buffers, not iostreams: a stream absorbs a failed allocation into its
  // state bits, which would turn "out of memory" into "no figures" and a context's check
  // against the memory available would be skipped without a word.
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) {
    if (errno == ENOMEM) return error(WT_ERR_OUT_OF_MEMORY, "detect: no memory to open /proc/meminfo");
    return error(WT_ERR_UNSUPPORTED, "detect: /proc/meminfo is not readable on this system");
  }
  unsigned long long total_kib = 0, avail_kib = 0;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "MemTotal: %llu", &kib) == 1) total_kib = kib;
    if (std::sscanf(line, "MemAvailable: %llu", &kib) == 1) avail_kib = kib;
  }
  std::fclose(f);
  if (total_kib == 0 || avail_kib == 0 || avail_kib > total_kib)
    return error(WT_ERR_UNSUPPORTED, "detect: /proc/meminfo has no usable MemTotal / MemAvailable");
  out->total_bytes = static_cast<uint64_t>(total_kib) * 1024;
  out->available_bytes = static_cast<uint64_t>(avail_kib) * 1024;
  return Status::ok();
}

}  // namespace wt
