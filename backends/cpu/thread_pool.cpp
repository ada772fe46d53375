#include "thread_pool.h"

namespace wt::cpu {

namespace {

// Spin iterations before a worker sleeps: long enough to bridge the gaps between the ops
// of one forward pass, short enough that an idle context stops using the cores quickly.
constexpr int kSpinIterations = 1 << 14;

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  barrier_.reset(n_threads_);
  try {
    threads_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker_main(i); });
  } catch (...) {
    // A thread that cannot be started (its state allocation or the system's thread limit):
    // the destructor does not run for a constructor that throws, and a joinable std::thread
    // destroyed unjoined terminates the process, so the started workers are stopped here.
    stop_workers();
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::run(Job job, const void* arg) {
  if (n_threads_ == 1) {
    ThreadCtx tc{0, 1, nullptr};
    job(tc, arg);
    return;
  }
  job_ = job;
  arg_ = arg;
  n_done_.store(0, std::memory_order_relaxed);
  // seq_cst on both sides (here and in worker_main) so a worker that is about to sleep
  // either sees the new generation or is seen as sleeping and woken.
  generation_.fetch_add(1);
  if (n_sleeping_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }

  ThreadCtx tc{0, n_threads_, &barrier_};
  job(tc, arg);
  int spins = 0;
  while (n_done_.load(std::memory_order_acquire) != n_threads_ - 1) SpinBarrier::backoff(&spins);
}

void ThreadPool::worker_main(int ith) {
  // Generation 0 is the one before the first run(): a thread that starts late must still
  // see the first launch as new.
  uint32_t seen = 0;
  for (;;) {
    uint32_t now = seen;
    for (int spin = 0; spin < kSpinIterations;) {
      now = generation_.load(std::memory_order_acquire);
      if (now != seen) break;
      SpinBarrier::backoff(&spin);
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      n_sleeping_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      n_sleeping_.fetch_sub(1);
      now = generation_.load();
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    ThreadCtx tc{ith, n_threads_, &barrier_};
    job_(tc, arg_);
    n_done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

}  // namespace wt::cpu
