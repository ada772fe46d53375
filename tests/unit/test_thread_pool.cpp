// The CPU pool's width (backends/cpu/core_share.h): the policy on made-up windows, a pool
// whose workers share one core, the same pool used from a second thread, and a context's
// logits while its pool narrows.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

#include "backends/cpu/core_share.h"
#include "backends/cpu/thread_pool.h"
#include "support/gguf_writer.h"
#include "whittle.h"

using wt::cpu::WidthPolicy;

namespace {

constexpr int64_t kMs = 1'000'000;

// The calling thread, and the threads it starts from now on, on one CPU; restored at scope
// end. False where the OS has no affinity call. The CPU is picked by the process id, so two
// such tests that ctest runs at once are likely on different CPUs.
struct OneCpu {
#if defined(__linux__)
  cpu_set_t saved;
  bool ok = false;
  OneCpu() {
    if (sched_getaffinity(0, sizeof saved, &saved) != 0) return;
    const int n = CPU_COUNT(&saved);
    if (n == 0) return;
    int pick = static_cast<int>(getpid() % n), cpu = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; ++c)
      if (CPU_ISSET(c, &saved) && pick-- == 0) cpu = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok = cpu >= 0 && sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~OneCpu() {
    if (ok) sched_setaffinity(0, sizeof saved, &saved);
  }
#else
  bool ok = false;
#endif
};

// Whether this kernel counts threads' time in /proc/thread-self/schedstat (the pool keeps
// every worker where it does not): after some time on a CPU, the counter shows it.
bool schedstat_counts() {
  wt::cpu::RunDelay d;
  if (!d.open_self()) return false;
  const auto t0 = std::chrono::steady_clock::now();
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(30)) x = x + 1;
  return d.counts();
}

// Why a pool cannot be seen narrowing on one core here, or nullptr: without run-queue
// counters it keeps every worker, and without an affinity call nothing shares a core.
const char* cannot_narrow_here(const OneCpu& one) {
  if (!schedstat_counts()) return "no run-queue counters (/proc/thread-self/schedstat) here";
  if (!one.ok) return "no CPU affinity call here";
  return nullptr;
}

}  // namespace

TEST_CASE("cpu pool: the width policy narrows by the cores' worth its workers waited and probes one more later") {
  WidthPolicy p(4);
  int64_t t = 0;
  auto window = [&](double lack) {
    t += WidthPolicy::kWindowNs;
    return p.next(t, WidthPolicy::kWindowNs, static_cast<int64_t>(lack * WidthPolicy::kWindowNs));
  };
  CHECK(window(0.0) == 4);
  CHECK(window(0.49) == 4);  // under half a core: stays
  CHECK(window(0.7) == 3);   // one busy thread beside 4 workers: one fewer
  CHECK(window(2.6) == 1);   // three cores' worth: three fewer (not below 1)
  CHECK(window(3.0) == 1);
  // No probe before kProbeNs has passed since the last narrowing, then one more worker.
  auto probe_after = [&] {
    const int64_t narrowed = t;
    int w = 1;
    while (w == 1 && t - narrowed < 20 * WidthPolicy::kProbeNs) w = window(0.0);
    CHECK(w == 2);
    return t - narrowed;
  };
  const int64_t first = probe_after();
  CHECK(first >= WidthPolicy::kProbeNs);
  CHECK(first < WidthPolicy::kProbeNs + WidthPolicy::kWindowNs);
  // A probe that finds no free core narrows again and waits twice as long for the next.
  CHECK(window(0.7) == 1);
  const int64_t second = probe_after();
  CHECK(second >= 2 * WidthPolicy::kProbeNs);
  CHECK(second < 2 * WidthPolicy::kProbeNs + WidthPolicy::kWindowNs);
  // A probe that found a free core tries the next one in the next window, up to n_max.
  CHECK(window(0.1) == 3);
  CHECK(window(0.1) == 4);
  CHECK(window(0.1) == 4);
  // An empty window decides nothing.
  CHECK(p.next(t + kMs, 0, 0) == 4);
}

TEST_CASE("cpu pool: three workers on one core run on fewer and every launch still does all its work") {
  OneCpu one;
  if (const char* why = cannot_narrow_here(one)) {
    MESSAGE("skipped: " << why);
    return;
  }
  for (bool fixed : {false, true}) {
    CAPTURE(fixed);
    wt::cpu::ThreadPool pool(3, fixed);
    CHECK(pool.adapts() == !fixed);
    // Each launch sums 0..n-1 over its workers' split of the items, a little work per item.
    struct Arg {
      std::atomic<int64_t> sum{0};
      std::atomic<int> narrow{0};
      std::atomic<int> split_wrong{0};
      int64_t n = 20000;
    } arg;
    auto job = [](const wt::cpu::ThreadCtx& tc, const void* a) {
      Arg& g = *static_cast<Arg*>(const_cast<void*>(a));
      if (tc.nth < 3) g.narrow.fetch_add(1);
      if (tc.split_workers() != 3) g.split_wrong.fetch_add(1);
      int64_t b, e, s = 0;
      tc.split(g.n, &b, &e);
      for (int64_t i = b; i < e; ++i) s += i;
      tc.sync();
      g.sum.fetch_add(s);
    };
    const auto t0 = std::chrono::steady_clock::now();
    int launches = 0, wrong = 0;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(fixed ? 200 : 3000)) {
      arg.sum = 0;
      pool.run(job, &arg);
      ++launches;
      wrong += arg.sum.load() != arg.n * (arg.n - 1) / 2;
      if (!fixed && arg.narrow.load() > 100) break;
    }
    CAPTURE(launches);
    CHECK(wrong == 0);
    CHECK(arg.split_wrong.load() == 0);
    CHECK(pool.launches() == static_cast<uint64_t>(launches));
    if (fixed) {
      CHECK(arg.narrow.load() == 0);
      CHECK(pool.worker_launches() == 3 * pool.launches());
    } else {
      CHECK(arg.narrow.load() > 100);
      CHECK(pool.worker_launches() < 3 * pool.launches());
    }
  }
}

// A context may be used from one thread, then from another, and glibc often gives a new
// thread the std::thread::id of one that ended. The pool must measure the new caller: with
// the old caller's counter (gone with its thread) it would decide nothing again, and never
// try a wider launch. Here the second caller must still see the pool's probe of one more
// worker (nth 2 after narrowing to 1 on one core).
TEST_CASE("cpu pool: a pool used from a second thread goes on measuring that thread") {
  OneCpu one;
  if (const char* why = cannot_narrow_here(one)) {
    MESSAGE("skipped: " << why);
    return;
  }
  wt::cpu::ThreadPool pool(3);
  struct Arg {
    std::atomic<int> widest{0};
  };
  auto job = [](const wt::cpu::ThreadCtx& tc, const void* a) {
    Arg& g = *static_cast<Arg*>(const_cast<void*>(a));
    volatile int64_t s = 0;
    for (int i = 0; i < 20000; ++i) s = s + i;
    if (tc.ith == 0) g.widest.store(tc.nth);
  };
  // Launches from a thread until `done` says stop or `ms` pass; the widths seen.
  auto launches_from_a_thread = [&](auto done, int ms, std::thread::id* id) {
    std::vector<int> widths;
    std::thread t([&] {
      *id = std::this_thread::get_id();
      Arg arg;
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(ms)) {
        pool.run(job, &arg);
        widths.push_back(arg.widest.load());
        if (done(widths)) break;
      }
    });
    t.join();
    return widths;
  };
  std::thread::id first, second;
  const auto narrow = launches_from_a_thread([](const std::vector<int>& w) { return w.back() == 1; }, 3000, &first);
  REQUIRE(narrow.back() == 1);
  // The probe comes 250 ms after narrowing (nth 2), and on one core it narrows again.
  auto probed_and_narrowed = [](const std::vector<int>& w) {
    const auto probe = std::find(w.begin(), w.end(), 2);
    return probe != w.end() && std::find(probe, w.end(), 1) != w.end();
  };
  const auto later = launches_from_a_thread(probed_and_narrowed, 3000, &second);
  if (first == second) MESSAGE("the second thread has the first one's std::thread::id");
  CHECK(probed_and_narrowed(later));
  CHECK(std::count(later.begin(), later.end(), 3) == 0);
}

TEST_CASE("cpu pool: a context whose workers share one core narrows and keeps the bits of a fixed pool") {
  wt::test::TempPath file{"thread_pool_tiny.gguf"};
  wt::test::TinyModelOptions o;
  o.n_layer = 4;
  o.n_ctx_train = 1024;
  REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(o).build()));
  if (!schedstat_counts()) {
    MESSAGE("skipped: no run-queue counters (/proc/thread-self/schedstat) here");
    return;
  }
  wt_model* model = nullptr;
  REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &model) == WT_OK, std::string(wt_last_error()));
  OneCpu one;
  if (!one.ok) MESSAGE("no CPU affinity call here: the pool may not narrow");
  wt_model_info info{};
  REQUIRE(wt_model_get_info(model, &info) == WT_OK);
  // Prefill, then `steps` greedy decodes, every step's logits kept. (The fixed pool's three
  // workers on one core take about 5x as long per step as the adaptive pool's one.)
  auto run = [&](uint64_t flags, int steps, double* threads_per_op) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 1024;
    cp.n_threads = 3;
    cp.cpu_flags = flags;
    wt_context* ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(model, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
    std::vector<wt_token> prompt(64);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<wt_token>((i * 37 + 5) % info.n_vocab);
    REQUIRE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK);
    std::vector<float> logits;
    wt_context_stats st{};
    for (int i = 0; i < steps; ++i) {
      const float* l = nullptr;
      REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
      logits.insert(logits.end(), l, l + info.n_vocab);
      wt_token best = 0;
      for (int32_t t = 1; t < info.n_vocab; ++t) best = l[t] > l[best] ? t : best;
      REQUIRE(wt_context_decode(ctx, best) == WT_OK);
    }
    REQUIRE(wt_context_get_stats(ctx, &st) == WT_OK);
    *threads_per_op = st.threads_per_op;
    wt_context_free(ctx);
    return logits;
  };
  double adaptive_threads = 0, fixed_threads = 0;
  const std::vector<float> adaptive = run(0, 48, &adaptive_threads);
  const std::vector<float> fixed = run(WT_CPU_FIXED_THREADS, 48, &fixed_threads);
  CAPTURE(adaptive_threads);
  CHECK(fixed_threads == 3.0);
  if (one.ok) CHECK(adaptive_threads < 3.0);
  CHECK(adaptive.size() == fixed.size());
  CHECK(std::memcmp(adaptive.data(), fixed.data(), sizeof(float) * std::min(adaptive.size(), fixed.size())) == 0);
  wt_model_free(model);
}
