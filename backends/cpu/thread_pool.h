// A fixed set of worker threads that run one kernel at a time, all workers together.
// The caller is worker 0. Workers spin briefly between launches (an op launch costs well
// under a microsecond when they are hot), then sleep, so an idle context burns no CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <thread>
#include <vector>

#include "kernels/cpu/thread_ctx.h"

namespace wt::cpu {

class ThreadPool {
 public:
  using Job = void (*)(const ThreadCtx& tc, const void* arg);

  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }
  // Runs job(tc, arg) on every worker and returns when all have finished.
  void run(Job job, const void* arg);

 private:
  void worker_main(int ith);
  void stop_workers();  // wakes and joins every started worker

  int n_threads_;
  std::vector<std::thread> threads_;
  SpinBarrier barrier_;
  Job job_ = nullptr;
  const void* arg_ = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> n_done_{0};
  std::atomic<int> n_sleeping_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace wt::cpu
