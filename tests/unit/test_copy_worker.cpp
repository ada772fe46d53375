// The CPU backend's copy stream (backends/cpu/copy_worker.h): copies complete in submission
// order whether the worker or a waiter runs them, so a copy that reads what an earlier one
// wrote sees it, and event v means copies 1..v are done. Suite "concurrency": the TSan stage
// runs it (two threads take turns on one ring). And the CPU backend's zero_async, whose
// copy-stream zeros are jobs of the same worker.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/copy_worker.h"
#include "tests/support/zero_async_check.h"

namespace {

constexpr size_t kBytes = 4096;

// A chain: copy i moves buffer i into buffer i + 1, so buffer n holds buffer 0 only when
// every copy ran after the one before it.
struct Chain {
  std::vector<std::vector<uint8_t>> buf;
  explicit Chain(int n) : buf(static_cast<size_t>(n) + 1, std::vector<uint8_t>(kBytes, 0)) {
    for (size_t i = 0; i < kBytes; ++i) buf[0][i] = static_cast<uint8_t>(i * 7 + 3);
  }
  bool holds_source(size_t i) const { return std::memcmp(buf[i].data(), buf[0].data(), kBytes) == 0; }
};

}  // namespace

TEST_CASE("copy worker: dependent copies complete in order whoever runs them and event v means copies 1 to v are done" *
          doctest::test_suite("concurrency")) {
  std::mt19937 rng(7);
  for (size_t capacity : {size_t{1}, size_t{4}, size_t{1024}}) {
    CAPTURE(capacity);
    wt::cpu::CopyWorker w(capacity);
    const int n = 400;
    Chain c(n);
    for (int i = 0; i < n; ++i) {
      const uint64_t seq = w.submit(c.buf[static_cast<size_t>(i) + 1].data(), c.buf[static_cast<size_t>(i)].data(), kBytes);
      REQUIRE(seq == w.last());
      // Wait now and then, for this copy or an earlier one: the waiter often finds the
      // worker idle and runs copies itself.
      if (rng() % 3 == 0) {
        const uint64_t upto = 1 + rng() % seq;
        (void)w.wait(upto);
        CHECK(c.holds_source(static_cast<size_t>(upto)));
      }
    }
    (void)w.wait(w.last());
    for (int i = 1; i <= n; ++i) CHECK(c.holds_source(static_cast<size_t>(i)));
    CHECK(w.busy_ns() > 0);
    CHECK(w.wait(w.last()) == 0);  // nothing left: no time blocked
  }
}

// The CPU backend's zero_async (backend.h): memset on the compute stream, a job of the copy
// worker on the copy stream (in order with the copies queued before it).
TEST_CASE("cpu backend: zero_async zeroes whole words of a view in stream order and refuses the rest" *
          doctest::test_suite("concurrency")) {
  std::unique_ptr<wt::Backend> b;
  wt::BackendOptions o;
  o.n_threads = 2;
  REQUIRE(wt::create_cpu_backend(o, &b).is_ok());
  wt::test::check_zero_async(*b);
}
