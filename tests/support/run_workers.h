// Runs a CPU kernel on n threads that share a barrier, the way the CPU backend's pool
// does, so kernel tests can check results for several worker counts.
#pragma once

#include <thread>
#include <vector>

#include "kernels/cpu/thread_ctx.h"

namespace wt::test {

template <typename Fn>
void run_workers(int n, Fn fn) {
  cpu::SpinBarrier barrier;
  barrier.reset(n);
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back([&, i] { fn(cpu::ThreadCtx{i, n, &barrier}); });
  fn(cpu::ThreadCtx{0, n, &barrier});
  for (auto& t : threads) t.join();
}

}  // namespace wt::test
