#include "copy_worker.h"

#include <cstring>

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

void CopyWorker::wait(uint64_t seq) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return finished_ >= seq; });
}

void CopyWorker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || finished_ < submitted_; });
    if (finished_ == submitted_) return;  // stop_ and nothing left
    const Job job = ring_[finished_ % ring_.size()];
    lock.unlock();
    std::memcpy(job.dst, job.src, job.bytes);
    lock.lock();
    ++finished_;
    done_cv_.notify_all();
  }
}

}  // namespace wt::cpu
