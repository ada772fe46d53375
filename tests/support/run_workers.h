// Runs a CPU kernel on n threads that share a barrier, the way the CPU backend's pool
// does, so kernel tests can check results for several worker counts; and the workspace a
// kernel gets.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "kernels/cpu/thread_ctx.h"

namespace wt::test {

// n_max: the workers the kernel's scratch and splits are for (ThreadCtx::n_max), of which
// n run, as a pool running on fewer workers than it has does; 0: n.
template <typename Fn>
void run_workers(int n, Fn fn, int n_max = 0) {
  cpu::SpinBarrier barrier;
  barrier.reset(n);
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back([&, i] { fn(cpu::ThreadCtx{i, n, &barrier, n_max}); });
  fn(cpu::ThreadCtx{0, n, &barrier, n_max});
  for (auto& t : threads) t.join();
}

// Workspace as the backend gives it: 64-byte aligned, filled with junk so a kernel that
// reads scratch before writing it shows up.
struct Workspace {
  std::vector<char> buf;
  void* p;
  explicit Workspace(size_t bytes) : buf(bytes + 64, 0x7f) {
    p = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
  }
};

}  // namespace wt::test
