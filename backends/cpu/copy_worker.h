// The CPU backend's copy stream: one thread that runs copies in submission order while the
// compute stream (the caller's thread and the worker pool) runs kernels, so the pager's
// prefetch really overlaps compute on the CPU as it does on a device. Jobs go through a
// fixed ring made at construction; a full ring makes the submitter wait, it never grows.
// Events are sequence numbers: event v is complete once v copies have finished.
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

  // Queues memcpy(dst, src, bytes); returns its sequence number (its completion event).
  uint64_t submit(void* dst, const void* src, size_t bytes);
  // The sequence number of the last submitted copy (0: none yet).
  uint64_t last() const;
  // Blocks until copies 1..seq have finished.
  void wait(uint64_t seq);

 private:
  struct Job {
    void* dst;
    const void* src;
    size_t bytes;
  };
  void loop();

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the worker waits for jobs
  std::condition_variable done_cv_;  // submitters wait for room, waiters for completion
  std::vector<Job> ring_;            // [capacity]
  uint64_t submitted_ = 0;           // jobs ever queued
  uint64_t finished_ = 0;            // jobs ever completed
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace wt::cpu
