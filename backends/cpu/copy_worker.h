// The CPU backend's copy stream: one thread that runs copies in submission order while the
// compute stream (the caller's thread and the worker pool) runs kernels, so the pager's
// prefetch really overlaps compute on the CPU as it does on a device. Jobs go through a
// fixed ring made at construction; a full ring makes the submitter wait, it never grows.
// Events are sequence numbers: event v is complete once v copies have finished. One thread
// at a time runs jobs, in order: the worker, or a waiter that finds the worker idle — a
// copy the caller is about to wait for (an on-demand fetch) then costs the copy, not two
// thread wake-ups on top of it. Copy time is timed whoever runs it, and so is the time
// waiters were blocked (the copy time the compute stream really waited for).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace wt::cpu {

class CopyWorker {
 public:
  explicit CopyWorker(size_t capacity = 1024);
  ~CopyWorker();
  CopyWorker(const CopyWorker&) = delete;
  CopyWorker& operator=(const CopyWorker&) = delete;

  // Queues memcpy(dst, src, bytes), or memset(dst, 0, bytes) where src is null; returns its
  // sequence number (its completion event).
  uint64_t submit(void* dst, const void* src, size_t bytes);
  // The sequence number of the last submitted copy (0: none yet).
  uint64_t last() const;
  // Blocks until copies 1..seq have finished, running them itself while the worker is not
  // running one; returns the nanoseconds it was blocked.
  uint64_t wait(uint64_t seq);
  // Nanoseconds the worker has spent copying since construction.
  uint64_t busy_ns() const;

 private:
  struct Job {
    void* dst;
    const void* src;
    size_t bytes;
  };
  void loop();
  // With mu_ held, running_ clear and a job queued: runs the next job (unlocking meanwhile).
  void run_next(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the worker waits for jobs
  std::condition_variable done_cv_;  // submitters wait for room, waiters for completion
  std::vector<Job> ring_;            // [capacity]
  uint64_t submitted_ = 0;           // jobs ever queued
  uint64_t finished_ = 0;            // jobs ever completed
  uint64_t busy_ns_ = 0;             // time inside memcpy, all jobs
  bool running_ = false;             // a thread is running job finished_ + 1
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace wt::cpu
