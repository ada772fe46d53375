// The Vulkan backend's pieces that need no kernel: pointer -> buffer resolution, the
// VkResult -> Status converter, allocation limits, addressing errors, and the stream /
// event model (a copy on the copy stream that compute waits for), memory the host cannot
// map, and the bound on the driver's memory for recorded work.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/vulkan/alloc_table.h"
#include "backends/vulkan/stream.h"
#include "backends/vulkan/vk_status.h"
#include "harness.h"
#include "backend_open.h"
#include "platform/planner.h"
#include "tests/support/rss.h"

namespace {

using namespace wt;

using parity::open_vulkan;

TEST_SUITE("vulkan") {
  TEST_CASE("vulkan: the allocation table resolves pointers inside mapped ranges only") {
    vk::AllocationTable t;
    alignas(64) static char a[256], b[128];
    CHECK(t.insert(a, vk::Allocation{11, 1, 256}));
    CHECK(t.insert(b, vk::Allocation{22, 2, 128}));
    CHECK_FALSE(t.insert(a + 8, vk::Allocation{33, 3, 16}));  // overlaps a
    vk::Resolved r;
    REQUIRE(t.find(a, 256, &r));
    CHECK(r.buffer == 11);
    CHECK(r.offset == 0);
    REQUIRE(t.find(a + 100, 156, &r));
    CHECK(r.offset == 100);
    CHECK(r.size_bytes == 256);
    CHECK_FALSE(t.find(a + 100, 157, &r));  // runs past the end
    CHECK_FALSE(t.find(a + 256, 1, &r));    // one past the end belongs to nobody
    REQUIRE(t.find(b + 127, 1, &r));
    CHECK(r.buffer == 22);
    CHECK(r.offset == 127);
    static char outside[8];
    CHECK_FALSE(t.find(outside, 1, &r));
    vk::Allocation gone;
    CHECK(t.erase(a, &gone));
    CHECK(gone.buffer == 11);
    CHECK_FALSE(t.find(a + 4, 4, &r));
    CHECK_FALSE(t.erase(a + 4, nullptr));  // only an allocation's start erases it
    CHECK(t.size() == 1);
  }

  TEST_CASE("vulkan: VkResult becomes a Status naming the call and device lost says so") {
    CHECK(vk::vk_check(VK_SUCCESS, "vkQueueSubmit").is_ok());
    CHECK(vk::vk_check(VK_TIMEOUT, "vkWaitSemaphores").is_ok());
    const Status lost = vk::vk_check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
    CHECK(lost.code() == WT_ERR_BACKEND);
    CHECK(lost.message().find("vkQueueSubmit") != std::string::npos);
    CHECK(lost.message().find("VK_ERROR_DEVICE_LOST") != std::string::npos);
    CHECK(lost.message().find("device lost") != std::string::npos);
    CHECK(vk::vk_check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory").code() == WT_ERR_OUT_OF_MEMORY);
    CHECK(vk::vk_check(VK_ERROR_INCOMPATIBLE_DRIVER, "vkCreateInstance").code() == WT_ERR_UNSUPPORTED);
    CHECK(std::string(vk::result_name(static_cast<VkResult>(-12345))).find("unknown") != std::string::npos);
  }

  TEST_CASE("vulkan: limits and foreign pointers fail clearly and the copy stream is ordered by an event") {
    BackendOptions o;
    o.validation = parity::validation_requested();
    std::unique_ptr<Backend> b;
    if (!open_vulkan(o, &b)) return;
    MESSAGE("vulkan device: " << b->caps().device_name << ", max binding " << b->caps().max_binding_bytes
                              << " B, max buffer " << b->caps().max_buffer_bytes << " B, copy queue "
                              << std::string(b->caps().has_copy_queue ? "yes" : "no (shares the compute queue)"));

    Buffer huge;
    const Status too_big = b->alloc(b->caps().max_buffer_bytes + 1, MemoryKind::device, &huge);
    CHECK(too_big.code() == WT_ERR_UNSUPPORTED);
    CHECK(too_big.message().find("maxMemoryAllocationSize") != std::string::npos);

    // A tensor wider than one binding may reach (maxStorageBufferRange) is refused by name.
    Buffer wide;
    const size_t wide_bytes = b->caps().max_binding_bytes + 4096;
    if (wide_bytes <= b->caps().max_buffer_bytes && b->alloc(wide_bytes, MemoryKind::device, &wide).is_ok()) {
      const Tensor t = make_tensor_2d(wide.host, DType::f32, static_cast<int64_t>(wide_bytes / 4), 1);
      const Status range = b->launch(AddOp{.dst = t, .a = t, .b = t});
      CHECK(range.code() == WT_ERR_UNSUPPORTED);
      CHECK(range.message().find("maxStorageBufferRange") != std::string::npos);
      b->free(&wide);
    }

    // A tensor in plain host memory cannot be bound: a clear error, not a crash.
    std::vector<float> host(64, 1.0f);
    const Tensor foreign_t = make_tensor_2d(host.data(), DType::f32, 64, 1);
    const Status foreign = b->launch(AddOp{.dst = foreign_t, .a = foreign_t, .b = foreign_t});
    CHECK(foreign.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK(foreign.message().find("not inside memory allocated by this backend") != std::string::npos);

    // src -> mid on the copy stream; compute waits for the event, then mid + src -> out.
    const int64_t n = 4096;
    Buffer src, mid, out;
    REQUIRE(b->alloc(n * 4, MemoryKind::host_pinned, &src).is_ok());
    REQUIRE(b->alloc(n * 4, MemoryKind::device, &mid).is_ok());
    REQUIRE(b->alloc(n * 4, MemoryKind::device, &out).is_ok());
    for (int64_t i = 0; i < n; ++i) static_cast<float*>(src.host)[i] = static_cast<float>(i);
    std::memset(mid.host, 0, n * 4);
    REQUIRE(b->copy_async(Stream::copy, mid, src, n * 4).is_ok());
    Event copied;
    REQUIRE(b->record_event(Stream::copy, &copied).is_ok());
    REQUIRE(b->wait_event(Stream::compute, copied).is_ok());
    const AddOp add{.dst = make_tensor_2d(out.host, DType::f32, n, 1), .a = make_tensor_2d(mid.host, DType::f32, n, 1),
                    .b = make_tensor_2d(src.host, DType::f32, n, 1)};
    REQUIRE(b->launch(add).is_ok());
    REQUIRE(b->synchronize(Stream::compute).is_ok());
    int wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += static_cast<float*>(out.host)[i] != 2.0f * static_cast<float>(i);
    CHECK(wrong == 0);
    Event never{copied.value + 5, Stream::copy};
    CHECK(b->wait_event(Stream::compute, never).code() == WT_ERR_INVALID_ARGUMENT);
    b->free(&src);
    b->free(&mid);
    b->free(&out);
    CHECK(src.host == nullptr);
  }

  // A discrete card's weights are device_only memory the host cannot map (memory.h): no
  // Buffer::host, an address range of their own that copies and kernels resolve. lavapipe
  // maps everything unless told not to (BackendOptions::unmapped_device_only).
  TEST_CASE("vulkan: unmapped device_only memory is filled by copies and read by kernels at its own addresses") {
    BackendOptions o;
    o.validation = parity::validation_requested();
    std::unique_ptr<Backend> mapped_b;
    if (!open_vulkan(o, &mapped_b)) return;
    const int64_t n = 4096;
    Buffer plain;
    REQUIRE(mapped_b->alloc(n * 4, MemoryKind::device_only, &plain).is_ok());
    if (mapped_b->caps().unified_memory) {  // lavapipe, an integrated GPU: device memory, mapped
      CHECK(plain.host != nullptr);
      CHECK(plain.kind == MemoryKind::device);
    } else {
      CHECK(plain.host == nullptr);
    }
    mapped_b->free(&plain);
    mapped_b.reset();

    o.unmapped_device_only = true;
    std::unique_ptr<Backend> b;
    if (!open_vulkan(o, &b)) return;
    Buffer w, src, out, back;
    REQUIRE(b->alloc(n * 4, MemoryKind::device_only, &w).is_ok());
    CHECK(w.host == nullptr);
    REQUIRE(w.device != nullptr);
    CHECK(w.kind == MemoryKind::device_only);
    REQUIRE(b->alloc(n * 4, MemoryKind::host_pinned, &src).is_ok());
    REQUIRE(b->alloc(n * 4, MemoryKind::device, &out).is_ok());
    REQUIRE(b->alloc(n * 4, MemoryKind::host_pinned, &back).is_ok());
    // Its addresses are its own: no other allocation's range holds them.
    for (const Buffer* other : {&src, &out, &back}) {
      const char* const lo = static_cast<const char*>(other->device);
      const char* const p = static_cast<const char*>(w.device);
      CHECK((p + n * 4 <= lo || p >= lo + n * 4));
    }
    for (int64_t i = 0; i < n; ++i) static_cast<float*>(src.host)[i] = static_cast<float>(i);
    REQUIRE(b->copy_async(Stream::copy, w, src, n * 4).is_ok());
    Event copied;
    REQUIRE(b->record_event(Stream::copy, &copied).is_ok());
    REQUIRE(b->wait_event(Stream::compute, copied).is_ok());
    const Tensor weights_t = make_tensor_2d(w.device, DType::f32, n, 1);
    REQUIRE(b->launch(AddOp{.dst = make_tensor_2d(out.host, DType::f32, n, 1), .a = weights_t, .b = weights_t}).is_ok());
    // Back out through a view 1 KiB in: the offset is the view's, on the reserved addresses.
    Buffer part = w;
    part.offset = 1024;
    part.size_bytes = n * 4 - 1024;
    std::memset(back.host, 0, n * 4);
    REQUIRE(b->copy_async(Stream::compute, back, part, 1024).is_ok());
    REQUIRE(b->synchronize(Stream::compute).is_ok());
    int wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += static_cast<float*>(out.host)[i] != 2.0f * static_cast<float>(i);
    CHECK(wrong == 0);
    int wrong_back = 0;
    for (int64_t i = 0; i < 256; ++i) wrong_back += static_cast<float*>(back.host)[i] != static_cast<float>(256 + i);
    CHECK(wrong_back == 0);
    CHECK(static_cast<float*>(back.host)[256] == 0.0f);  // 1024 bytes, no more
    b->free(&w);
    CHECK(w.device == nullptr);
    // Freed: its addresses resolve no more.
    const Status gone = b->copy_async(Stream::compute, back, part, 1024);
    CHECK(gone.code() == WT_ERR_INVALID_ARGUMENT);
    b->free(&src);
    b->free(&out);
    b->free(&back);
    REQUIRE(b->synchronize(Stream::compute).is_ok());  // reports what the validation layer found
  }

  // The driver keeps each recorded command until its command buffer is reset; the stream
  // submits every kMaxBatchOps ops and reuses kRing buffers, so however many ops are queued
  // between two synchronizations, the driver holds at most caps().queued_work_bytes, which
  // the planner's device overhead covers. Without the cap, the 8192 ops below held 12.8 MiB
  // on lavapipe, and a prefill's storage grew with the prompt.
  TEST_CASE("vulkan: the driver memory of queued work stays within the batch cap's bound") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    MESSAGE("SKIPPED: under a sanitizer the resident set holds shadow memory");
    return;
#endif
    if (parity::validation_requested()) {
      MESSAGE("SKIPPED: the validation layer keeps its own state per recorded command");
      return;
    }
    std::unique_ptr<Backend> b;
    if (!open_vulkan(BackendOptions{}, &b)) return;
    if (!b->caps().unified_memory) {
      // A discrete GPU's driver may keep command storage in device memory, not in the resident set.
      MESSAGE("SKIPPED: the resident set shows command storage on a unified-memory device only");
      return;
    }
    Buffer a;
    REQUIRE(b->alloc(1024 * 4, MemoryKind::device, &a).is_ok());
    std::memset(a.host, 0, 1024 * 4);
    const Tensor t = make_tensor_2d(a.host, DType::f32, 1024, 1);
    const OpCall add = AddOp{.dst = t, .a = t, .b = t};
    constexpr int kHeld = vk::VkStream::kRing * static_cast<int>(vk::VkStream::kMaxBatchOps);
    constexpr int kQueued = 8192;
    static_assert(kQueued >= 8 * kHeld, "queue far more than the ring holds");
    auto queue = [&](int n_ops) {
      for (int i = 0; i < n_ops; ++i) REQUIRE(b->launch(add).is_ok());
      REQUIRE(b->synchronize(Stream::compute).is_ok());
    };
    queue(kQueued / 4);  // the pipeline and the driver's pools exist before the measurement
    test::release_free_memory();
    REQUIRE(test::reset_rss_peak());
    const uint64_t before = test::proc_status_kib("VmRSS:") * 1024;
    queue(kQueued);
    const uint64_t grew = test::proc_status_kib("VmHWM:") * 1024 - before;
    MESSAGE(kQueued << " ops queued before one synchronize: the resident set grew " << grew / 1024.0
                       << " KiB; the bound is " << b->caps().queued_work_bytes / 1024.0 << " KiB (" << kHeld
                       << " ops held at most)");
    CHECK(b->caps().queued_work_bytes > 0);
    CHECK(b->caps().queued_work_bytes <= kDeviceRuntimeOverheadBytes);  // what the planner counts for it
    CHECK(grew <= b->caps().queued_work_bytes);
    b->free(&a);
  }

  // A matmul grid wider than maxComputeWorkGroupCount[0] spills into y, and the last row of
  // groups is only partly real: a group past the last row tile must write nothing. (The
  // subgroup and portable kernels wrote rows past dst there: with two products in one
  // dispatch, over whatever lay between them in their shared binding, so prompts past ~680
  // tokens of the default model came out as garbage on those kernels.) Every kernel; two
  // products whose dsts have a canary between them in one buffer; values against the host.
  TEST_CASE("vulkan: a matmul whose grid spills into y writes its rows and nothing past them") {
    using Kernels = BackendOptions::VulkanKernels;
    const int64_t k = 64, n_out = 1024, rows = 1028;  // subgroup: 2 x 128 column groups x 257 row tiles
    const size_t x_n = static_cast<size_t>(k * rows), w_n = static_cast<size_t>(k * n_out);
    const size_t dst_n = static_cast<size_t>(n_out * rows), canary_n = 16 * static_cast<size_t>(n_out);
    std::vector<float> xs(x_n), ws(2 * w_n);
    for (size_t i = 0; i < x_n; ++i) xs[i] = static_cast<float>((i * 37) % 17) / 16.0f - 0.5f;
    for (size_t i = 0; i < 2 * w_n; ++i) ws[i] = static_cast<float>((i * 11) % 13) / 12.0f - 0.5f;
    for (int variant = 0; variant < 3; ++variant) {
      BackendOptions o;
      o.validation = parity::validation_requested();
      o.portable_kernels = variant == 0;
      o.vulkan_kernels = variant == 1 ? Kernels::subgroup : Kernels::per_lane;
      const std::string name = variant == 0 ? "portable" : variant == 1 ? "subgroup" : "lane";
      CAPTURE(name);
      std::unique_ptr<Backend> b;
      if (!open_vulkan(o, &b)) return;
      Buffer buf;
      const size_t bytes = sizeof(float) * (x_n + 2 * w_n + 2 * dst_n + canary_n);
      REQUIRE(b->alloc(bytes, MemoryKind::device, &buf).is_ok());
      float* x = static_cast<float*>(buf.host);
      float* w = x + x_n;  // w, then w2
      float* dst = w + 2 * w_n;
      float* canary = dst + dst_n;
      float* dst2 = canary + canary_n;
      std::memcpy(x, xs.data(), sizeof(float) * x_n);
      std::memcpy(w, ws.data(), sizeof(float) * 2 * w_n);
      for (size_t i = 0; i < 2 * dst_n + canary_n; ++i) dst[i] = -7.0f;
      const MatmulOp mm{.dst = make_tensor_2d(dst, DType::f32, n_out, rows), .x = make_tensor_2d(x, DType::f32, k, rows),
                        .w = make_tensor_2d(w, DType::f32, k, n_out), .f32_activations = true,
                        .dst2 = make_tensor_2d(dst2, DType::f32, n_out, rows), .w2 = make_tensor_2d(w + w_n, DType::f32, k, n_out)};
      REQUIRE(b->launch(mm).is_ok());
      REQUIRE(b->synchronize(Stream::compute).is_ok());
      size_t canary_hit = 0, wrong = 0;
      for (size_t i = 0; i < canary_n; ++i) canary_hit += canary[i] != -7.0f;
      for (int p = 0; p < 2; ++p) {
        const float* out = p == 0 ? dst : dst2;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < n_out; ++c) {
            double sum = 0;
            for (int64_t i = 0; i < k; ++i)
              sum += double(xs[static_cast<size_t>(r * k + i)]) * ws[static_cast<size_t>(p * w_n) + static_cast<size_t>(c * k + i)];
            wrong += std::fabs(out[r * n_out + c] - sum) > 1e-3;
          }
        }
      }
      CHECK(canary_hit == 0);
      CHECK(wrong == 0);
      b->free(&buf);
    }
  }
}

}  // namespace
