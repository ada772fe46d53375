// A fixed set of worker threads that run one kernel at a time, the launch's workers
// together. The caller is worker 0. Workers spin briefly between launches (an op launch
// costs well under a microsecond when they are hot), then sleep, so an idle context burns
// no CPU. A launch uses all n_threads workers unless they wait for cores other threads
// hold; then it uses fewer (core_share.h) and the others sleep until they are wanted again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/cpu/core_share.h"
#include "kernels/cpu/thread_ctx.h"

namespace wt::cpu {

class ThreadPool {
 public:
  using Job = void (*)(const ThreadCtx& tc, const void* arg);

  // fixed_width: every launch on all n_threads workers, whatever the cores' load.
  explicit ThreadPool(int n_threads, bool fixed_width = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The most workers a launch uses (kernels size per-worker scratch by it).
  int n_threads() const { return n_threads_; }
  // Runs job(tc, arg) on the launch's workers (tc.nth of them, 1..n_threads) and returns
  // when all have finished.
  void run(Job job, const void* arg);

  // Launches since the pool was made, and the workers they used in all.
  uint64_t launches() const { return launches_.load(std::memory_order_relaxed); }
  uint64_t worker_launches() const { return worker_launches_.load(std::memory_order_relaxed); }
  // Whether the pool measures its workers' waits (Linux with schedstat; not fixed_width).
  bool adapts() const { return adapt_; }

 private:
  void worker_main(int ith);
  void stop_workers();  // wakes and joins every started worker
  int choose_width();   // the next launch's worker count
  void start_window(int64_t now_ns);
  int64_t window_delay() const;  // run-queue ns of the window's workers since its start

  // The launch word: the launch's number above kWidthBits, its worker count below.
  static constexpr int kWidthBits = 16;
  static uint64_t gen_of(uint64_t word) { return word >> kWidthBits; }
  static int width_of(uint64_t word) { return static_cast<int>(word & ((uint64_t{1} << kWidthBits) - 1)); }

  int n_threads_;
  bool adapt_;
  std::vector<std::thread> threads_;
  SpinBarrier barrier_;
  int barrier_width_ = 0;
  Job job_ = nullptr;
  const void* arg_ = nullptr;
  std::atomic<uint64_t> word_{0};
  std::atomic<int> n_done_{0};
  std::atomic<int> n_sleeping_{0};  // idle workers asleep, woken by any launch
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> launches_{0};
  std::atomic<uint64_t> worker_launches_{0};

  // The width's measurements (the caller's thread only).
  WidthPolicy policy_;
  std::unique_ptr<RunDelay[]> delays_;  // [n_threads_]: 1.. opened by each worker, 0 by the caller
  std::unique_ptr<int64_t[]> base_;     // [n_threads_]: each counter at the window's start
  std::atomic<int> n_opened_{0};        // workers whose counter is open
  std::thread::id caller_id_;  // whose counter delays_[0] reads
  int64_t window_start_ns_ = -1;
  int64_t last_launch_ns_ = 0;
};

}  // namespace wt::cpu
