#include "bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

namespace {

// Reads the buffer 64 bytes per step with four independent accumulators and a software
// prefetch 8 KiB ahead, the way the decode matmul streams its weights (this machine's
// hardware prefetchers alone leave about half the bandwidth unused, in both).
uint64_t sum_range(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __builtin_prefetch(p + i + 1024);
    a += p[i] ^ p[i + 4];
    b += p[i + 1] ^ p[i + 5];
    c += p[i + 2] ^ p[i + 6];
    d += p[i + 3] ^ p[i + 7];
  }
  for (; i < n; ++i) a += p[i];
  return a ^ b ^ c ^ d;
}

}  // namespace

double measure_read_bandwidth_gbs(int n_threads, size_t bytes, int repetitions) {
  const size_t n = bytes / sizeof(uint64_t);
  std::vector<uint64_t> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = i * 2654435761u;
  (void)sum_range(buf.data(), n);  // warm the pages and the TLB
  std::vector<double> runs;
  volatile uint64_t sink = 0;
  for (int r = 0; r < repetitions; ++r) {
    std::vector<uint64_t> partial(static_cast<size_t>(n_threads), 0);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    try {
      for (int t = 0; t < n_threads; ++t) {
        threads.emplace_back([&, t] {
          const size_t begin = n * static_cast<size_t>(t) / static_cast<size_t>(n_threads);
          const size_t end = n * static_cast<size_t>(t + 1) / static_cast<size_t>(n_threads);
          partial[static_cast<size_t>(t)] = sum_range(buf.data() + begin, end - begin);
        });
      }
    } catch (const std::system_error&) {
      for (auto& th : threads) th.join();  // a joinable thread destroyed would terminate
      throw;
    }
    for (auto& th : threads) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (uint64_t v : partial) sink = sink ^ v;
    runs.push_back(static_cast<double>(bytes) / s / 1e9);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}
