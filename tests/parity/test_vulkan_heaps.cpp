// Which memory a Vulkan device's allocations come from and whether it is unified
// (backends/vulkan/memory_heaps.h), on the memory layouts of GPUs this machine does not
// have, and the free memory memory_info reports on the device it has.
#include <doctest/doctest.h>

#include <memory>

#include "backends/vulkan/memory_heaps.h"
#include "harness.h"
#include "backend_open.h"

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

// A discrete card in the shape its driver describes (fewer types than NVIDIA lists; the
// choices do not depend on their order): VRAM, system memory, and the BAR as a third, small
// device-local heap (NVIDIA without resizable BAR) or inside the VRAM heap (as RADV reports
// resizable BAR).
Layout discrete_card(bool resizable_bar) {
  Layout l;
  const uint32_t vram = l.heap(16 * kGiB, true), sys = l.heap(64 * kGiB, false);
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
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::device, false) == 4);
      // The weights (never mapped) go to VRAM: without resizable BAR not the 256 MiB BAR,
      // with it the type the host cannot see.
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::device_only, false) == 1);
      CHECK(vk::pick_memory_type(l.m, 0b10000, MemoryKind::device_only, false) == 4);  // the BAR if nothing else
      CHECK(vk::pick_memory_type(l.m, 0b01100, MemoryKind::device_only, false) == 2);  // as device without a local type
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::host_pinned, false) == 3);
      CHECK(vk::pick_memory_type(l.m, ~0u, MemoryKind::host, false) == 3);
      // memory_info counts VRAM, where the contexts' memory goes (device_only), not the BAR.
      CHECK(vk::device_heap(l.m, ~0u, false) == 0);
      // The pager's host tier is in another heap than the one memory_info counts.
      CHECK(l.m.memoryTypes[3].heapIndex != static_cast<uint32_t>(vk::device_heap(l.m, ~0u, false)));
      // A buffer that may not live in the BAR falls back to mapped system memory, and
      // memory_info follows the buffers' types.
      CHECK(vk::pick_memory_type(l.m, 0b01100, MemoryKind::device, false) == 2);
      CHECK(vk::device_heap(l.m, 0b01100, false) == 1);
      CHECK(vk::pick_memory_type(l.m, 0b00011, MemoryKind::device, false) == -1);
      CHECK(vk::device_heap(l.m, 0b00011, false) == 0);  // device_only is never mapped: VRAM will do
    }
  }

  TEST_CASE("vulkan: integrated GPUs and CPU devices are unified and take their largest heap") {
    Layout jetson;  // one heap of the board's DRAM
    const uint32_t dram = jetson.heap(8 * kGiB, true);
    jetson.type(kLocal, dram);
    jetson.type(kLocal | kCached, dram);
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, jetson.m));
    CHECK(vk::pick_memory_type(jetson.m, ~0u, MemoryKind::device, true) == 1);
    CHECK(vk::device_heap(jetson.m, ~0u, true) == 0);

    Layout apu;  // a device-local carve-out beside system memory
    const uint32_t carve = apu.heap(512u << 20, true), sys = apu.heap(16 * kGiB, false);
    apu.type(kLocal, carve);
    apu.type(kCached, sys);
    apu.type(kLocal | kMapped, carve);
    apu.type(kMapped, sys);
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, apu.m));
    // The memory check counts the host's memory, so the buffers go where it is: not the
    // 512 MiB carve-out, which would refuse what the check let through.
    CHECK(vk::device_heap(apu.m, ~0u, true) == 1);
    CHECK(vk::pick_memory_type(apu.m, ~0u, MemoryKind::device, true) == 1);  // the first of the largest heap
    CHECK(vk::pick_memory_type(apu.m, 0b0100, MemoryKind::device, true) == 2);  // the carve-out if nothing else
    CHECK(vk::pick_memory_type(apu.m, ~0u, MemoryKind::device_only, true) == 1);  // unified: as device
    CHECK(vk::pick_memory_type(apu.m, ~0u, MemoryKind::host, true) == 1);
    CHECK_FALSE(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, apu.m));

    Layout lavapipe;
    lavapipe.type(kLocal | kCached, lavapipe.heap(2 * kGiB, true));
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_CPU, lavapipe.m));
    CHECK(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, lavapipe.m));  // every heap device-local
    CHECK(vk::device_heap(lavapipe.m, ~0u, true) == 0);
    CHECK_FALSE(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VkPhysicalDeviceMemoryProperties{}));
  }

  TEST_CASE("vulkan: a card whose VRAM the host cannot map at all is discrete and keeps the contexts' memory in VRAM") {
    Layout old_card;
    const uint32_t vram = old_card.heap(8 * kGiB, true), host = old_card.heap(32 * kGiB, false);
    old_card.type(kLocal, vram);
    old_card.type(kMapped, host);
    // What the engine keeps on the device is never mapped there (device_only), so it goes to
    // VRAM and the memory check counts VRAM; mapped device buffers (the backend's own) fall
    // back to host memory. (It was called unified once, when every buffer was mapped.)
    CHECK_FALSE(vk::memory_is_unified(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, old_card.m));
    CHECK(vk::pick_memory_type(old_card.m, ~0u, MemoryKind::device_only, false) == 0);
    CHECK(vk::pick_memory_type(old_card.m, ~0u, MemoryKind::device, false) == 1);
    CHECK(vk::device_heap(old_card.m, ~0u, false) == 0);
  }

  TEST_CASE("vulkan: memory_info's free memory falls by what the backend allocates and rises when it frees") {
    BackendOptions o;
    o.validation = parity::validation_requested();  // the budget query is checked by the layer too
    std::unique_ptr<Backend> b;
    if (!parity::open_vulkan(o, &b)) return;
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
    REQUIRE(b->synchronize(Stream::compute).is_ok());  // reports what the validation layer found
    // Where the driver reports its budget, other processes move the figures too: a GPU
    // shared with others, checked loosely; else they are this backend's own counts.
    if (before.free_bytes >= kBytes) {
      CHECK(held.free_bytes <= before.free_bytes - kBytes / 2);
      CHECK(after.free_bytes >= held.free_bytes + kBytes / 2);
    }
  }
}
