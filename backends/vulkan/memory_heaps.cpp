#include "memory_heaps.h"

namespace wt::vk {

bool memory_is_unified(VkPhysicalDeviceType type, const VkPhysicalDeviceMemoryProperties& m) {
  if (type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || type == VK_PHYSICAL_DEVICE_TYPE_CPU) return true;
  if (m.memoryHeapCount == 0) return false;
  for (uint32_t i = 0; i < m.memoryHeapCount; ++i)
    if (!(m.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) return false;
  return true;
}

int pick_memory_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, MemoryKind kind) {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const bool on_device = kind == MemoryKind::device || kind == MemoryKind::device_only;
  const VkMemoryPropertyFlags want[2] = {
      host | (on_device ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : VK_MEMORY_PROPERTY_HOST_CACHED_BIT), host};
  for (const VkMemoryPropertyFlags w : want)
    for (uint32_t i = 0; i < m.memoryTypeCount && i < 32; ++i)
      if ((type_bits & (1u << i)) && (m.memoryTypes[i].propertyFlags & w) == w) return static_cast<int>(i);
  return -1;
}

int device_heap(const VkPhysicalDeviceMemoryProperties& m) {
  const int type = pick_memory_type(m, ~0u, MemoryKind::device);
  return type < 0 ? -1 : static_cast<int>(m.memoryTypes[type].heapIndex);
}

}  // namespace wt::vk
