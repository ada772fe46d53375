#include "core_share.h"

#include <algorithm>
#include <cstdlib>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace wt::cpu {

int WidthPolicy::next(int64_t now_ns, int64_t window_ns, int64_t delay_ns) {
  if (window_ns <= 0) return width_;
  const double lack = static_cast<double>(delay_ns) / static_cast<double>(window_ns);
  if (lack >= kLack) {
    // As many fewer workers as CPUs' worth were missing (one at least): 2 workers beside
    // one busy thread on 2 cores miss about 2/3 of a CPU, 16 beside 4 on 16 cores about 3.
    // A lone worker that waits that long finds no free core either: the probe waits.
    const int fewer = std::max(1, static_cast<int>(lack + 0.5));
    if (probing_) probe_wait_ns_ = std::min(2 * probe_wait_ns_, kMaxProbeNs);
    width_ = std::max(1, width_ - fewer);
    probing_ = false;
    probe_at_ns_ = now_ns + probe_wait_ns_;
    return width_;
  }
  if (probing_) {  // the extra worker found a free core: try the next one in the next window
    probing_ = false;
    probe_wait_ns_ = kProbeNs;
    probe_at_ns_ = now_ns;
  }
  if (width_ < n_max_ && now_ns >= probe_at_ns_) {
    ++width_;
    probing_ = true;
  }
  return width_;
}

RunDelay::~RunDelay() {
#if defined(__linux__)
  if (fd_ >= 0) close(fd_);
#endif
}

bool RunDelay::open_self() {
#if defined(__linux__)
  if (fd_ >= 0) close(fd_);
  // /proc/thread-self names the calling thread when it is opened: the descriptor keeps
  // reading this thread's counters from any other thread.
  fd_ = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd_ >= 0 && read() < 0) {
    close(fd_);
    fd_ = -1;
  }
  tid_ = fd_ >= 0 ? static_cast<int64_t>(syscall(SYS_gettid)) : -1;
  return fd_ >= 0;
#else
  return false;
#endif
}

bool RunDelay::is_calling_thread() const {
#if defined(__linux__)
  return fd_ >= 0 && tid_ == static_cast<int64_t>(syscall(SYS_gettid));
#else
  return false;
#endif
}

bool RunDelay::counts() const {
  int64_t on_cpu = 0, waited = 0;
  return read_fields(&on_cpu, &waited) && on_cpu > 0;
}

int64_t RunDelay::read() const {
  int64_t on_cpu = 0, waited = 0;
  return read_fields(&on_cpu, &waited) ? waited : -1;
}

bool RunDelay::read_fields(int64_t* on_cpu_ns, int64_t* waited_ns) const {
#if defined(__linux__)
  if (fd_ < 0) return false;
  char buf[96];
  const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "<ns on a CPU> <ns waiting in the run queue> <time slices>\n"
  char* end = nullptr;
  const unsigned long long on_cpu = std::strtoull(buf, &end, 10);
  if (end == buf || *end != ' ') return false;
  const char* wait = end + 1;
  const unsigned long long waited = std::strtoull(wait, &end, 10);
  if (end == wait) return false;
  *on_cpu_ns = static_cast<int64_t>(on_cpu);
  *waited_ns = static_cast<int64_t>(waited);
  return true;
#else
  (void)on_cpu_ns;
  (void)waited_ns;
  return false;
#endif
}

}  // namespace wt::cpu
