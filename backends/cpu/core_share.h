// How many of the CPU pool's workers a launch uses while other threads hold some of the
// cores. Every worker of a launch runs in lock step with the others (an op ends when its
// last worker finishes, and phases meet at barriers), so one worker that waits for a CPU
// stalls them all: on 2 cores beside one busy process, 2 workers decoded at 58-63 token/s
// and 1 worker at 112-118 (docs/results/cpu-threads.md). The pool measures, over windows of
// its launches, how long its running workers waited in the scheduler's run queue, and runs
// the next launches on fewer workers when they waited for about half a CPU or more, trying
// one more again later.
#pragma once

#include <cstdint>

namespace wt::cpu {

// The decision alone, fed the measured windows (tests drive it with made-up ones).
class WidthPolicy {
 public:
  // A window shorter than this is not judged (the scheduler's slices are milliseconds).
  static constexpr int64_t kWindowNs = 25'000'000;
  // Run-queue wait, in CPUs' worth (ns waited by all the window's workers / window ns),
  // at which the window's width had more workers than free cores.
  static constexpr double kLack = 0.5;
  // After narrowing, one more worker is tried after this long, then after twice as long
  // for every try that had to narrow again, up to kMaxProbeNs.
  static constexpr int64_t kProbeNs = 250'000'000;
  static constexpr int64_t kMaxProbeNs = 4'000'000'000;

  explicit WidthPolicy(int n_max) : n_max_(n_max < 1 ? 1 : n_max), width_(n_max_) {}

  int width() const { return width_; }
  int n_max() const { return n_max_; }
  // A window that ends at now_ns, window_ns long, in which width()'s workers waited
  // delay_ns in all for a CPU; returns the width for the next window.
  int next(int64_t now_ns, int64_t window_ns, int64_t delay_ns);

 private:
  int n_max_;
  int width_;
  bool probing_ = false;  // width_ was just raised by one to see if a core is free again
  int64_t probe_at_ns_ = 0;
  int64_t probe_wait_ns_ = kProbeNs;
};

// A thread's time in the run queue, runnable but waiting for a CPU: Linux's
// /proc/thread-self/schedstat (its second field, nanoseconds), read through a descriptor the
// thread itself opened. Where there is none (another OS, no procfs, a kernel without
// CONFIG_SCHED_INFO) open() fails and the pool keeps every worker.
class RunDelay {
 public:
  RunDelay() = default;
  ~RunDelay();
  RunDelay(const RunDelay&) = delete;
  RunDelay& operator=(const RunDelay&) = delete;

  // Opens the calling thread's counter (closing one held before). False, and nothing open,
  // where there is none.
  bool open_self();
  // Whether the counter counts: a kernel without scheduler statistics shows "0 0 0" for
  // every thread. Only meaningful once the thread has run a while: a thread that has not yet
  // been switched out or ticked shows 0 ns on a CPU too.
  bool counts() const;
  bool is_open() const { return fd_ >= 0; }
  // Whether the counter open is the calling thread's: a thread's std::thread::id may be
  // reused by a later thread (glibc reuses pthread_t), its kernel thread id is not while it runs.
  bool is_calling_thread() const;
  // Nanoseconds waited since the thread started; -1 if the read fails (the thread ended).
  int64_t read() const;

 private:
  bool read_fields(int64_t* on_cpu_ns, int64_t* waited_ns) const;
  int fd_ = -1;
  int64_t tid_ = -1;  // the kernel thread id of the thread that opened it
};

}  // namespace wt::cpu
