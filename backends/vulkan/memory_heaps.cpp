#include "memory_heaps.h"

namespace wt::vk {

namespace {

// Among the types of type_bits that have every flag of `want`, the one in the largest heap;
// among those in equal heaps the first with `favored` set (favor_set) or clear (!favor_set).
// -1 when no type has `want`.
int in_largest_heap(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, VkMemoryPropertyFlags want,
                    VkMemoryPropertyFlags favored, bool favor_set) {
  const uint32_t n = m.memoryTypeCount < 32 ? m.memoryTypeCount : 32;
  int best = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (!(type_bits & (1u << i)) || (m.memoryTypes[i].propertyFlags & want) != want) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const uint64_t size = m.memoryHeaps[m.memoryTypes[i].heapIndex].size;
    const uint64_t best_size = m.memoryHeaps[m.memoryTypes[best].heapIndex].size;
    const bool fav = ((m.memoryTypes[i].propertyFlags & favored) != 0) == favor_set;
    const bool best_fav = ((m.memoryTypes[best].propertyFlags & favored) != 0) == favor_set;
    if (size > best_size || (size == best_size && fav && !best_fav)) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace

int pick_memory_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, MemoryKind kind, bool unified) {
  const VkMemoryPropertyFlags mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const bool on_device = kind == MemoryKind::device || kind == MemoryKind::device_only;
  if (on_device && unified) return in_largest_heap(m, type_bits, mapped, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, true);
  if (kind == MemoryKind::device_only) {  // never mapped: VRAM, a type the host cannot see first
    const int t = in_largest_heap(m, type_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, false);
    if (t >= 0) return t;
    // No device-local type these buffers may take: where a device buffer would go.
  }
  const uint32_t n = m.memoryTypeCount < 32 ? m.memoryTypeCount : 32;
  const VkMemoryPropertyFlags want[2] = {
      mapped | (on_device ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : VK_MEMORY_PROPERTY_HOST_CACHED_BIT), mapped};
  for (const VkMemoryPropertyFlags w : want)
    for (uint32_t i = 0; i < n; ++i)
      if ((type_bits & (1u << i)) && (m.memoryTypes[i].propertyFlags & w) == w) return static_cast<int>(i);
  return -1;
}

int device_heap(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, bool unified) {
  const int type = pick_memory_type(m, type_bits, MemoryKind::device_only, unified);
  return type < 0 ? -1 : static_cast<int>(m.memoryTypes[type].heapIndex);
}

bool memory_is_unified(VkPhysicalDeviceType type, const VkPhysicalDeviceMemoryProperties& m) {
  if (type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || type == VK_PHYSICAL_DEVICE_TYPE_CPU) return true;
  if (m.memoryHeapCount == 0) return false;
  for (uint32_t i = 0; i < m.memoryHeapCount; ++i)
    if (!(m.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) return false;
  return true;
}

}  // namespace wt::vk
