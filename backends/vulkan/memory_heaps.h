// What a device's memory types and heaps mean for the backend, as pure functions of
// VkPhysicalDeviceMemoryProperties: lavapipe offers one layout only, so the tests give them
// the layouts of discrete and integrated GPUs (tests/parity/test_vulkan_heaps.cpp).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

#include "backends/backend.h"

namespace wt::vk {

// The memory type for an allocation of `kind` among type_bits; -1 when none fits. Every
// allocation but device_only memory on a discrete card is mapped for its life (memory.h),
// so those choices are host-visible and coherent. The host kinds prefer host-cached (the
// host reads them back). device on a discrete card prefers device-local (its BAR: all of
// VRAM with resizable BAR, else about 256 MiB); device_only there (the weights, never
// mapped) takes the largest device-local heap, a type the host cannot see first, so
// without resizable BAR the weights are in VRAM and not bounded by the BAR. On unified
// memory both take the type in the largest heap, device-local first among equals: an
// APU's small device-local carve-out would otherwise bound what the device holds while the
// memory check counts all of the host's.
int pick_memory_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, MemoryKind kind, bool unified);

// The heap the device's memory for the contexts and the weights (device_only: memory.h) of
// type_bits comes from; -1 when no type fits. On a discrete card VRAM, not the BAR.
int device_heap(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, bool unified);

// Device memory is the host's DRAM: an integrated GPU (Jetson, APUs), a CPU device
// (lavapipe), or a device whose every heap is device-local. A discrete card with a BAR also
// offers a DEVICE_LOCAL | HOST_VISIBLE type, but its VRAM is not the host's memory, so that
// flag alone does not make a device unified; nor does a card whose VRAM the host cannot map
// at all, since what the engine keeps on the device is never mapped there (device_only).
bool memory_is_unified(VkPhysicalDeviceType type, const VkPhysicalDeviceMemoryProperties& m);

}  // namespace wt::vk
