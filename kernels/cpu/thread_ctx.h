// What a CPU kernel knows about the worker running it: its index, the worker count and a
// barrier shared by all workers of the launch. Every worker calls the kernel; each writes a
// disjoint part of the output, and sync() separates phases (e.g. quantize, then multiply).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace wt::cpu {

class SpinBarrier {
 public:
  void reset(int n) {
    n_ = n;
    arrived_.store(0, std::memory_order_relaxed);
  }
  void wait() {
    if (n_ <= 1) return;
    const uint32_t gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      arrived_.store(0, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    int spins = 0;
    while (gen_.load(std::memory_order_acquire) == gen) backoff(&spins);
  }

  // Spin a little, then give the core away: with more runnable threads than cores (two
  // test processes, a busy board) pure spinning would wait for whole scheduler slices.
  static void backoff(int* spins) {
    if (++*spins < 4096) pause();
    else std::this_thread::yield();
  }
  static void pause() {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

 private:
  int n_ = 1;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> gen_{0};
};

struct ThreadCtx {
  int ith = 0;
  int nth = 1;
  SpinBarrier* barrier = nullptr;
  // The workers the pool has; nth of them run this launch (fewer while other threads hold
  // the cores: backends/cpu/core_share.h). 0: nth. Per-worker scratch is laid out for this
  // many, and a kernel whose result depends on how it splits the work (decode attention's
  // key chunks, merged in order) splits it for this many, so its bits do not depend on nth.
  int n_max = 0;
  int split_workers() const { return n_max > 0 ? n_max : nth; }
  void sync() const {
    if (barrier) barrier->wait();
  }
  // [begin, end) of n items that this worker owns, in contiguous chunks.
  void split(int64_t n, int64_t* begin, int64_t* end) const {
    const int64_t per = (n + nth - 1) / nth;
    *begin = per * ith < n ? per * ith : n;
    *end = *begin + per < n ? *begin + per : n;
  }
};

}  // namespace wt::cpu
