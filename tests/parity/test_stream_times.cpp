// Every device backend's stream times (Backend::stream_times: the pager's copy and waited
// figures), checked against the host clock and against what the stream order allows: the
// copies start after a compute event and the next compute op waits for them. On a device
// that runs the copy stream on its compute queue (no copy queue: lavapipe) the batches run
// one after another, so the compute stream's wait encloses the copies. On a device with a
// copy engine beside compute (CUDA, a GPU's Vulkan transfer queue) the copies may start
// before the compute stream reaches its wait (an H100 measured waited 2.78 ms < copy
// 2.89 ms), so there the wait is bounded above only (comment at the checks).
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "backend_open.h"
#include "harness.h"

namespace {

using namespace wt;

TEST_CASE("stream times: copy and waited times fit the host clock and the stream order" * doctest::test_suite("parity")) {
  for (const parity::BackendMaker& mk : parity::compiled_backends()) {
    const std::string name = mk.name;
    CAPTURE(name);
    BackendOptions o;
    o.validation = name.rfind("vulkan", 0) == 0 && parity::validation_requested();
    std::unique_ptr<Backend> b;
    if (!parity::open_backend(mk, o, name, &b)) continue;
    StreamTimes t0;
    if (!b->stream_times(&t0)) {
      MESSAGE("SKIP " << name << " stream times: the backend does not time its streams on this device");
      continue;
    }
    CHECK(t0.copy_busy_ms == 0);
    CHECK(t0.compute_wait_ms == 0);

    const int64_t n = 8 << 20;  // 32 MiB of f32: copies that take visible time
    Buffer src, dst, a;
    REQUIRE(b->alloc(n * 4, MemoryKind::host_pinned, &src).is_ok());
    REQUIRE(b->alloc(n * 4, MemoryKind::device, &dst).is_ok());
    REQUIRE(b->alloc(4096 * 4, MemoryKind::device, &a).is_ok());
    std::memset(src.host, 1, n * 4);
    std::memset(a.host, 0, 4096 * 4);
    const Tensor t = make_tensor_2d(a.host, DType::f32, 4096, 1);
    const OpCall add = AddOp{.dst = t, .a = t, .b = t};

    // Compute alone: no copy time, no wait.
    REQUIRE(b->launch(add).is_ok());
    REQUIRE(b->synchronize(Stream::compute).is_ok());
    StreamTimes t1;
    REQUIRE(b->stream_times(&t1));
    CHECK(t1.copy_busy_ms == 0);
    CHECK(t1.compute_wait_ms == 0);

    // A compute op; three copies after it on the copy stream; a compute op that waits.
    const auto w0 = std::chrono::steady_clock::now();
    REQUIRE(b->launch(add).is_ok());
    Event before;
    REQUIRE(b->record_event(Stream::compute, &before).is_ok());
    REQUIRE(b->wait_event(Stream::copy, before).is_ok());
    for (int i = 0; i < 3; ++i) REQUIRE(b->copy_async(Stream::copy, dst, src, n * 4).is_ok());
    Event copied;
    REQUIRE(b->record_event(Stream::copy, &copied).is_ok());
    REQUIRE(b->wait_event(Stream::compute, copied).is_ok());
    REQUIRE(b->launch(add).is_ok());
    REQUIRE(b->synchronize(Stream::compute).is_ok());
    REQUIRE(b->synchronize(Stream::copy).is_ok());
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    StreamTimes t2;
    REQUIRE(b->stream_times(&t2));
    const double copy_ms = t2.copy_busy_ms - t1.copy_busy_ms;
    const double wait_ms = t2.compute_wait_ms - t1.compute_wait_ms;
    const bool copy_queue = b->caps().has_copy_queue;
    const std::string queues = copy_queue ? "copy queue" : "no copy queue";
    MESSAGE(name << " (" << b->caps().device_name << ", " << queues
                 << "): 96 MiB copied in " << copy_ms << " ms by the device's clock, " << wall_ms
                 << " ms on the host's; compute waited " << wait_ms << " ms");
    // What holds on every device: the copies and the wait both happen after w0 and finish
    // before the synchronizes return, so each is positive (the copies) or nonnegative (the
    // wait) and no longer than the host's wall clock.
    CHECK(copy_ms > 0);
    CHECK(copy_ms <= wall_ms);
    CHECK(wait_ms >= 0);
    CHECK(wait_ms <= wall_ms);
    // The wait ends when the copies end, and begins no earlier than the compute op before
    // the copies, which the copies also wait for; so it exceeds the copy time only by the
    // gap between that op's end and the first copy's start (an event's latency on CUDA, the
    // host's submit of the copy batch on Vulkan) and the end event's latency. Slack for
    // both: a quarter of the copy time plus 1 ms (lavapipe: 0.1-0.2 ms over 20-40 ms of
    // copies). A wait that also counted compute work or was counted twice fails here.
    CHECK(wait_ms <= 1.25 * copy_ms + 1.0);
    // No lower bound where copies overlap compute: the compute stream may reach its wait
    // after the copies began (CUDA: the wait's start event is enqueued after the copies,
    // on an idle stream), or even after they ended (a host preempted between the two), so
    // waited < copy is allowed there. Without a copy queue the copy batch runs on the
    // compute queue between the two compute batches, so the wait encloses it.
    if (!copy_queue) CHECK(wait_ms >= 0.99 * copy_ms - 0.01);  // timestamp resolution
    int wrong = 0;
    for (int64_t i = 0; i < n; i += 4099)
      wrong += std::memcmp(static_cast<char*>(dst.host) + 4 * i, static_cast<char*>(src.host) + 4 * i, 4) != 0;
    CHECK(wrong == 0);
    b->free(&src);
    b->free(&dst);
    b->free(&a);
  }
}

}  // namespace
