// The process's resident set (Linux /proc), for tests that measure a context's memory
// against its plan: the current and peak resident set, a reset of the peak, and handing
// memory the allocator keeps back to the system first; and the resident set per mapping,
// to say what grew when a measurement is over its plan.
#pragma once

#include <malloc.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

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
// mimalloc returns freed pages only after a delay (decommit_delay; purge_delay from 2.1.2
// on, which keeps only reset_delay as an old name), and mi_collect does not shorten it: a
// 12 MiB pager pool freed by one case stayed resident and the next case's pool reused it
// (measured 67% of its plan in a GCC 11 build, 2026-12-06). With no delay every free
// returns its pages at once (for the rest of the test process).
inline void release_free_memory() {
#if defined(WT_TEST_MIMALLOC)
#if MI_MALLOC_VERSION >= 212
  mi_option_set(mi_option_purge_delay, 0);
#else
  mi_option_set(mi_option_decommit_delay, 0);
#endif
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

// Resident KiB per mapping of /proc/self/smaps: files by path, anonymous ones by address.
inline std::map<std::string, uint64_t> rss_by_mapping() {
  std::map<std::string, uint64_t> out;
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return out;
  char line[512];
  std::string cur;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "Rss:", 4) == 0) {
      out[cur] += std::strtoull(line + 4, nullptr, 10);
    } else if (std::isxdigit(static_cast<unsigned char>(line[0])) && std::strchr(line, '-')) {
      // "start-end perms offset dev inode [path]": the path is the sixth field.
      char range[64] = {}, path[400] = {};
      const int n = std::sscanf(line, "%63s %*s %*s %*s %*s %399[^\n]", range, path);
      cur = n == 2 ? path : std::string("anon ") + range;
    }
  }
  std::fclose(f);
  return out;
}

// "+N KiB where" for each mapping that grew by at least min_kib from `before` to `after`.
inline std::string rss_growth(const std::map<std::string, uint64_t>& before,
                              const std::map<std::string, uint64_t>& after, uint64_t min_kib) {
  std::string s;
  for (const auto& [name, kib] : after) {
    const auto it = before.find(name);
    const uint64_t was = it == before.end() ? 0 : it->second;
    if (kib >= was + min_kib) s += "  +" + std::to_string(kib - was) + " KiB " + name + "\n";
  }
  return s;
}

}  // namespace wt::test
