// What a device's memory types and heaps mean for the backend, as pure functions of
// VkPhysicalDeviceMemoryProperties: lavapipe offers one layout only, so the tests give them
// the layouts of discrete and integrated GPUs (tests/parity/test_vulkan_heaps.cpp).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

#include "backends/backend.h"

namespace wt::vk {

// Device memory is the host's DRAM: an integrated GPU (Jetson, APUs), a CPU device
// (lavapipe), or a device whose every heap is device-local. A discrete card with a
// resizable BAR also offers a DEVICE_LOCAL | HOST_VISIBLE type, but its VRAM is not the
// host's memory, so that flag alone does not make a device unified.
bool memory_is_unified(VkPhysicalDeviceType type, const VkPhysicalDeviceMemoryProperties& m);

// The memory type for an allocation of `kind` among type_bits, best first; -1 when none
// fits. Every allocation is mapped for its life (memory.h), so each choice is host-visible
// and coherent: device kinds prefer device-local (the BAR on discrete cards), the host kind
// host-cached (the host reads it back).
int pick_memory_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, MemoryKind kind);

// The heap device allocations come from (the heap of the type pick_memory_type gives the
// device kind over all types); -1 when no type fits.
int device_heap(const VkPhysicalDeviceMemoryProperties& m);

}  // namespace wt::vk
