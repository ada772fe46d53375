// Which memory a Vulkan device's allocations come from and whether it is unified
// (backends/vulkan/memory_heaps.h), on the memory layouts of GPUs this machine does not
// have, and the free memory memory_info reports on the device it has.
#include <doctest/doctest.h>

#include <memory>

#include "backends/vulkan/memory_heaps.h"
#include "harness.h"

namespace {

using namespace wt;

constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
constexpr VkMemoryPropertyFlags kMapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kCached = kMapped | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
constexpr uint64_t kGiB = uint64_t{1} << 30;

struct Layout {
  VkPhysicalDeviceMemoryProperties m{};
  uint32_t heap(uint64_t size, bool device_local) {
    m.memoryHeaps[m.memoryHeapCount] = {size, device_local ? VkMemoryHeapFlags{VK_MEMORY_HEAP_DEVICE_LOCAL_BIT} : 0u};
    return m.memoryHeapCount++;
  }
  void type(VkMemoryPropertyFlags flags, uint32_t heap) { m.memoryTypes[m.memoryTypeCount++] = {flags, heap}; }
};

// A desktop NVIDIA card as its driver describes it: VRAM, system memory, and the BAR as a
// third, small device-local heap (without resizable BAR) or inside the VRAM heap (with it).
Layout discrete_card(bool resizable_bar) {
  Layout l;
  const uint32_t vram = l.heap(80 * kGiB, true), sys = l.heap(64 * kGiB, false);
  const uint32_t bar = resizable_bar ? vram : l.heap(256u << 20, true);
  l.type(0, sys);
  l.type(kLocal, vram);
  l.type(kMapped, sys);
  l.type(kCached, sys);
  l.type(kLocal | kMapped, bar);
  return l;
}

}  // namespace

TEST_SUITE("vulkan") {
  TEST_CASE("vulkan: a discrete card's BAR is device memory but not unified and host buffers come from system memory") {
    for (const bool rebar : {false, true}) {
      CAPTURE(rebar);
      const Layout l = discrete_card(rebar);
      // The old rule (any DEVICE_LOCAL | HOST_VISIBLE type) called both unified.
      CHECK_FALSE(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, l.m));
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::device) == 4);
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::device_only) == 4);
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::host_pinned) == 3);
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::host) == 3);
      CHECK(vk::device_heap(l.m) == (rebar ? 0 : 2));
      // The pager's host tier is in another heap than the one memory_info counts.
      CHECK(l.m.memoryTypes[3].heapIndex != static_cast<uint32_t>(vk::device_heap(l.m)));
      // A buffer that may not live in the BAR falls back to mapped system memory.
      CHECK(vk::pick_memory_type(l.m, 0b01100, MemoryKind::device) == 2);
      CHECK(vk::pick_memory_type(l.m, 0b00011, MemoryKind::device) == -1);
    }
  }

  TEST_CASE("vulkan: integrated GPUs and CPU devices are unified and a card without a BAR maps system memory") {
    Layout jetson;  // one heap of the board's DRAM
    const uint32_t dram = jetson.heap(8 * kGiB, true);
    jetson.type(kLocal, dram);
    jetson.type(kLocal | kCached, dram);
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, jetson.m));
    CHECK(vk::pick_memory_type(jetson.m, ~0u, MemoryKind::device) == 1);
    CHECK(vk::device_heap(jetson.m) == 0);

    Layout apu;  // a carve-out heap beside system memory: unified by its type
    const uint32_t carve = apu.heap(512u << 20, true), sys = apu.heap(16 * kGiB, false);
    apu.type(kLocal, carve);
    apu.type(kCached, sys);
    apu.type(kLocal | kMapped, carve);
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, apu.m));
    CHECK_FALSE(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, apu.m));

    Layout lavapipe;
    lavapipe.type(kLocal | kCached, lavapipe.heap(2 * kGiB, true));
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_CPU, lavapipe.m));
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, lavapipe.m));  // every heap device-local
    CHECK_FALSE(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VkPhysicalDeviceMemoryProperties{}));

    Layout old_card;  // no host-visible device-local type: device buffers map system memory
    const uint32_t vram = old_card.heap(8 * kGiB, true), host = old_card.heap(32 * kGiB, false);
    old_card.type(kLocal, vram);
    old_card.type(kMapped, host);
    CHECK_FALSE(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, old_card.m));
    CHECK(vk::pick_memory_type(old_card.m, ~0u, MemoryKind::device) == 1);
    CHECK(vk::device_heap(old_card.m) == 1);
  }

  TEST_CASE("vulkan: memory_info's free memory falls by what the backend allocates and rises when it frees") {
    std::unique_ptr<Backend> b;
    const Status st = create_vulkan_backend(BackendOptions{}, &b);
    if (st.code() == WT_ERR_UNSUPPORTED) {
      MESSAGE("SKIP vulkan: no usable device: " << st.message());
      parity::g_skipped = true;
      return;
    }
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    parity::g_ran = true;
    MemoryInfo before, held, after;
    REQUIRE(b->memory_info(&before).is_ok());
    REQUIRE(before.total_bytes > 0);
    REQUIRE(before.free_bytes <= before.total_bytes);
    constexpr size_t kBytes = size_t{64} << 20;
    Buffer buf;
    REQUIRE(b->alloc(kBytes, MemoryKind::device, &buf).is_ok());
    REQUIRE(b->memory_info(&held).is_ok());
    b->free(&buf);
    REQUIRE(b->memory_info(&after).is_ok());
    // Where the driver reports its budget, other processes move the figures too: a GPU
    // shared with others, checked loosely; else they are this backend's own counts.
    if (before.free_bytes >= kBytes) {
      CHECK(held.free_bytes <= before.free_bytes - kBytes / 2);
      CHECK(after.free_bytes >= held.free_bytes + kBytes / 2);
    }
  }
}
