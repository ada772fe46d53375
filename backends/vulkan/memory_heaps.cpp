#include "memory_heaps.h"

namespace wt::vk {

int pick_memory_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, MemoryKind kind, bool unified) {
  const VkMemoryPropertyFlags mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const bool on_device = kind == MemoryKind::device || kind == MemoryKind::device_only;
  const uint32_t n = m.memoryTypeCount < 32 ? m.memoryTypeCount : 32;
  auto usable = [&](uint32_t i, VkMemoryPropertyFlags want) {
    return (type_bits & (1u << i)) && (m.memoryTypes[i].propertyFlags & want) == want;
  };
  if (on_device && unified) {
    int best = -1;
    for (uint32_t i = 0; i < n; ++i) {
      if (!usable(i, mapped)) continue;
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      const uint64_t size = m.memoryHeaps[m.memoryTypes[i].heapIndex].size;
      const uint64_t best_size = m.memoryHeaps[m.memoryTypes[best].heapIndex].size;
      const bool local = m.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
      const bool best_local = m.memoryTypes[best].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
      if (size > best_size || (size == best_size && local && !best_local)) best = static_cast<int>(i);
    }
    return best;
  }
  if (kind == MemoryKind::device_only) {
    int best = -1;
    for (uint32_t i = 0; i < n; ++i) {
      if (!usable(i, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      const uint64_t size = m.memoryHeaps[m.memoryTypes[i].heapIndex].size;
      const uint64_t best_size = m.memoryHeaps[m.memoryTypes[best].heapIndex].size;
      const bool seen = m.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      const bool best_seen = m.memoryTypes[best].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      if (size > best_size || (size == best_size && !seen && best_seen)) best = static_cast<int>(i);
    }
    if (best >= 0) return best;
    // No device-local type these buffers may take: where a device buffer would go.
  }
  const VkMemoryPropertyFlags want[2] = {
      mapped | (on_device ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : VK_MEMORY_PROPERTY_HOST_CACHED_BIT), mapped};
  for (const VkMemoryPropertyFlags w : want)
    for (uint32_t i = 0; i < n; ++i)
      if (usable(i, w)) return static_cast<int>(i);
  return -1;
}

int device_heap(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, bool unified) {
  const int type = pick_memory_type(m, type_bits, MemoryKind::device, unified);
  return type < 0 ? -1 : static_cast<int>(m.memoryTypes[type].heapIndex);
}

bool memory_is_unified(VkPhysicalDeviceType type, const VkPhysicalDeviceMemoryProperties& m) {
  if (type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || type == VK_PHYSICAL_DEVICE_TYPE_CPU) return true;
  if (m.memoryHeapCount == 0) return false;
  const int heap = device_heap(m, ~0u, false);
  if (heap >= 0 && !(m.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) return true;
  for (uint32_t i = 0; i < m.memoryHeapCount; ++i)
    if (!(m.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) return false;
  return true;
}

}  // namespace wt::vk
