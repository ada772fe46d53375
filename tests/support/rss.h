// The process's resident set (Linux /proc), for tests that measure a context's memory
// against its plan: the current and peak resident set, a reset of the peak, and handing
// memory the allocator keeps back to the system first.
#pragma once

#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(WT_TEST_MIMALLOC)
#include <mimalloc.h>
#endif

namespace wt::test {

// A field of /proc/self/status in KiB ("VmRSS:" now, "VmHWM:" the peak since the last reset).
inline uint64_t proc_status_kib(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t v = 0;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0) v = std::strtoull(line + n, nullptr, 10);
  std::fclose(f);
  return v;
}

// Earlier cases in this process freed memory the allocator keeps mapped; a context reusing
// it would not grow the resident set, so it goes back to the system before a measurement.
inline void release_free_memory() {
#if defined(WT_TEST_MIMALLOC)
  mi_collect(true);
#endif
  malloc_trim(0);
}

// VmHWM starts again from the current resident set.
inline bool reset_rss_peak() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace wt::test
