#include "thread_pool.h"

#include <algorithm>

#include "steady_ns.h"

namespace wt::cpu {

namespace {

// How long an idle worker spins before it sleeps: long enough to bridge the gaps between
// the ops of one forward pass (microseconds), short enough that an idle context stops
// using the cores at once. It only pauses, never yields: yielding kept an idle context's
// workers in the run queue for milliseconds beside a context that was running (2 ms of
// yields after every burst of launches in whittle-bench's A/B of two contexts in turn).
constexpr int64_t kIdleSpinNs = 200'000;

}  // namespace

ThreadPool::ThreadPool(int n_threads, bool fixed_width)
    : n_threads_(std::clamp(n_threads, 1, (1 << kWidthBits) - 1)),
      adapt_(!fixed_width && n_threads_ > 1),
      policy_(n_threads_),
      delays_(new RunDelay[static_cast<size_t>(n_threads_)]),
      base_(new int64_t[static_cast<size_t>(n_threads_)]()) {
  barrier_.reset(n_threads_);
  barrier_width_ = n_threads_;
  word_.store(static_cast<uint64_t>(n_threads_));  // launch 0 (none yet), every worker
  const bool measure = adapt_;
  try {
    threads_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i)
      threads_.emplace_back([this, i, measure] {
        // Each worker opens its own counter: /proc/thread-self is the thread that opens it.
        if (measure) delays_[static_cast<size_t>(i)].open_self();
        n_opened_.fetch_add(1, std::memory_order_release);
        worker_main(i);
      });
  } catch (...) {
    // A thread that cannot be started (its state allocation or the system's thread limit):
    // the destructor does not run for a constructor that throws, and a joinable std::thread
    // destroyed unjoined terminates the process, so the started workers are stopped here.
    stop_workers();
    throw;
  }
  if (adapt_) {
    int spins = 0;
    while (n_opened_.load(std::memory_order_acquire) != n_threads_ - 1) SpinBarrier::backoff(&spins);
    for (int i = 1; i < n_threads_; ++i)
      if (!delays_[static_cast<size_t>(i)].is_open()) adapt_ = false;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  stop_.store(true, std::memory_order_release);
  const uint64_t old = word_.load();
  word_.store(((gen_of(old) + 1) << kWidthBits) | static_cast<uint64_t>(n_threads_));
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::start_window(int64_t now_ns) {
  window_start_ns_ = now_ns;
  for (int i = 0; i < policy_.width(); ++i) base_[static_cast<size_t>(i)] = delays_[static_cast<size_t>(i)].read();
}

int64_t ThreadPool::window_delay() const {
  int64_t sum = 0;
  for (int i = 0; i < policy_.width(); ++i) {
    const int64_t now = delays_[static_cast<size_t>(i)].read();
    const int64_t base = base_[static_cast<size_t>(i)];
    if (now < 0 || base < 0) return -1;
    sum += now - base;
  }
  return sum;
}

int ThreadPool::choose_width() {
  if (!adapt_) return n_threads_;
  const int64_t now = steady_ns();
  const std::thread::id caller = std::this_thread::get_id();
  if (caller != caller_id_) {  // the first launch, or a context used from another thread now
    caller_id_ = caller;
    if (!delays_[0].open_self()) {
      adapt_ = false;
      return n_threads_;
    }
    start_window(now);
  } else if (now - last_launch_ns_ > WidthPolicy::kWindowNs) {
    start_window(now);  // idle since the last launch: such a window would measure nothing
  } else if (now - window_start_ns_ >= WidthPolicy::kWindowNs) {
    const int64_t delay = window_delay();
    if (!delays_[0].is_calling_thread()) {  // another thread under a reused std::thread::id
      if (!delays_[0].open_self()) {
        adapt_ = false;
        return n_threads_;
      }
    } else if (!delays_[0].counts()) {  // 25 ms of launches and no time on a CPU: no statistics
      adapt_ = false;
      return n_threads_;
    } else if (delay >= 0) {
      policy_.next(now, now - window_start_ns_, delay);
    }
    start_window(now);
  }
  last_launch_ns_ = now;
  return policy_.width();
}

void ThreadPool::run(Job job, const void* arg) {
  if (n_threads_ == 1) {
    launches_.fetch_add(1, std::memory_order_relaxed);
    worker_launches_.fetch_add(1, std::memory_order_relaxed);
    ThreadCtx tc{0, 1, nullptr};
    job(tc, arg);
    return;
  }
  const int width = choose_width();
  launches_.fetch_add(1, std::memory_order_relaxed);
  worker_launches_.fetch_add(static_cast<uint64_t>(width), std::memory_order_relaxed);
  if (width != barrier_width_) {  // no worker is inside a launch here
    barrier_.reset(width);
    barrier_width_ = width;
  }
  job_ = job;
  arg_ = arg;
  n_done_.store(0, std::memory_order_relaxed);
  // Published even for width 1: a worker still spinning from the launches before sees it is
  // not wanted and sleeps instead of spinning on a core another thread needs.
  const uint64_t old = word_.load(std::memory_order_relaxed);
  // seq_cst on both sides (here and in worker_main) so a worker that is about to sleep
  // either sees the new word or is seen as sleeping and woken.
  word_.store(((gen_of(old) + 1) << kWidthBits) | static_cast<uint64_t>(width));
  if (width > width_of(old) || n_sleeping_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }

  ThreadCtx tc{0, width, width > 1 ? &barrier_ : nullptr, n_threads_};
  job(tc, arg);
  int spins = 0;
  while (n_done_.load(std::memory_order_acquire) != width - 1) SpinBarrier::backoff(&spins);
}

void ThreadPool::worker_main(int ith) {
  // Launch 0 is the one before the first run(): a thread that starts late must still see
  // the first launch as new.
  uint64_t seen = 0;
  for (;;) {
    uint64_t word = word_.load(std::memory_order_acquire);
    if (gen_of(word) == seen) {
      const int64_t t0 = steady_ns();
      for (uint32_t spin = 1; gen_of(word) == seen; ++spin) {
        SpinBarrier::pause();
        word = word_.load(std::memory_order_acquire);
        if (spin % 64 == 0 && steady_ns() - t0 > kIdleSpinNs) break;
      }
    }
    if (gen_of(word) == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      n_sleeping_.fetch_add(1);
      wake_.wait(lock, [&] { return gen_of(word_.load()) != seen; });
      n_sleeping_.fetch_sub(1);
      word = word_.load();
    }
    seen = gen_of(word);
    if (stop_.load(std::memory_order_acquire)) return;
    if (ith >= width_of(word)) {
      // Not in this launch: sleep until a launch wants this worker. That launch cannot end
      // without it, so the word seen on waking is that launch's.
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      wake_.wait(lock, [&] { return stop_.load() || width_of(word_.load()) > ith; });
      continue;
    }
    ThreadCtx tc{ith, width_of(word), &barrier_, n_threads_};
    job_(tc, arg_);
    n_done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

}  // namespace wt::cpu
