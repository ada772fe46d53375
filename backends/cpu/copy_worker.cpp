#include "copy_worker.h"

#include <cstring>

#include "steady_ns.h"

namespace wt::cpu {

CopyWorker::CopyWorker(size_t capacity) : ring_(capacity == 0 ? 1 : capacity) {
  thread_ = std::thread([this] { loop(); });
}

CopyWorker::~CopyWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

uint64_t CopyWorker::submit(void* dst, const void* src, size_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return submitted_ - finished_ < ring_.size(); });
  ring_[submitted_ % ring_.size()] = Job{dst, src, bytes};
  const uint64_t seq = ++submitted_;
  lock.unlock();
  work_cv_.notify_one();
  return seq;
}

uint64_t CopyWorker::last() const {
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

uint64_t CopyWorker::wait(uint64_t seq) {
  std::unique_lock<std::mutex> lock(mu_);
  if (finished_ >= seq) return 0;
  const int64_t t0 = steady_ns();
  while (finished_ < seq) {
    if (!running_) {
      run_next(lock);
    } else {
      done_cv_.wait(lock);
    }
  }
  return static_cast<uint64_t>(steady_ns() - t0);
}

uint64_t CopyWorker::busy_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_ns_;
}

void CopyWorker::run_next(std::unique_lock<std::mutex>& lock) {
  running_ = true;
  const Job job = ring_[finished_ % ring_.size()];
  lock.unlock();
  const int64_t t0 = steady_ns();
  if (job.src) {
    std::memcpy(job.dst, job.src, job.bytes);
  } else {
    std::memset(job.dst, 0, job.bytes);
  }
  const int64_t t1 = steady_ns();
  lock.lock();
  busy_ns_ += static_cast<uint64_t>(t1 - t0);
  ++finished_;
  running_ = false;
  done_cv_.notify_all();
  // A waiter may have taken over and left jobs queued behind its own: the worker goes on.
  if (finished_ < submitted_) work_cv_.notify_one();
}

void CopyWorker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return !running_ && (stop_ || finished_ < submitted_); });
    if (finished_ == submitted_) return;  // stop_ and nothing left
    run_next(lock);
  }
}

}  // namespace wt::cpu
