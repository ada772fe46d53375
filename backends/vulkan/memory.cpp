#include "memory.h"

#include <new>
#include <string>

#include "base/fault_injection.h"
#include "process_exit.h"
#include "vk_status.h"

namespace wt::vk {

Memory::~Memory() {
  const bool driver_up = !process_exiting();  // else the driver may be gone (process_exit.h)
  table_.for_each([&](void*, const Allocation& a) {
    if (driver_up) {
      if (a.view) vkDestroyBufferView(d_->device, reinterpret_cast<VkBufferView>(a.view), nullptr);
      vkDestroyBuffer(d_->device, reinterpret_cast<VkBuffer>(a.buffer), nullptr);
      vkFreeMemory(d_->device, reinterpret_cast<VkDeviceMemory>(a.memory), nullptr);  // unmaps too
    }
    fault::note_free();
  });
}

Status Memory::pick_type(uint32_t type_bits, MemoryKind kind, uint32_t* out) const {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  // Preferences best first; each must be host-visible and coherent, as the mapped-pointer
  // addressing and the absence of flushes rely on it.
  VkMemoryPropertyFlags want[3];
  int n = 0;
  if (kind == MemoryKind::device) {
    want[n++] = host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  } else {
    want[n++] = host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;  // the host reads it back
  }
  want[n++] = host;
  for (int w = 0; w < n; ++w) {
    for (uint32_t i = 0; i < d_->memory.memoryTypeCount; ++i) {
      if (!(type_bits & (1u << i))) continue;
      if ((d_->memory.memoryTypes[i].propertyFlags & want[w]) == want[w]) {
        *out = i;
        return Status::ok();
      }
    }
  }
  return error(WT_ERR_UNSUPPORTED, "vulkan: the device has no host-visible coherent memory type for storage buffers");
}

Status Memory::alloc(size_t bytes, MemoryKind kind, Buffer* out) {
  if (kind == MemoryKind::device_only) kind = MemoryKind::device;  // every allocation is mapped (backend.h)
  const size_t size = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  const VulkanCaps& c = d_->caps;
  if (size > c.max_memory_allocation_bytes || size > c.max_buffer_bytes)
    return error(WT_ERR_UNSUPPORTED, "vulkan: an allocation of " + std::to_string(bytes) +
                                          " bytes exceeds the device's limits (maxMemoryAllocationSize " +
                                          std::to_string(c.max_memory_allocation_bytes) + ", maxBufferSize " +
                                          std::to_string(c.max_buffer_bytes) + "); split the tensor");
  auto bci = vk_info<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (texel_views_) bci.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  // Concurrent when copies run on a family of their own, so no ownership transfers are needed.
  const uint32_t families[2] = {d_->compute_family, d_->copy_family};
  if (d_->caps.has_transfer_queue) {
    bci.sharingMode = VK_SHARING_MODE_CONCURRENT;
    bci.queueFamilyIndexCount = 2;
    bci.pQueueFamilyIndices = families;
  } else {
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  }
  if (fault::should_fail(fault::Site::alloc))
    return error(WT_ERR_OUT_OF_MEMORY, "vulkan: cannot allocate " + std::to_string(bytes) + " bytes (injected fault)");
  VkBuffer buffer = VK_NULL_HANDLE;
  WT_TRY(vk_check(vkCreateBuffer(d_->device, &bci, nullptr, &buffer), "vkCreateBuffer"));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d_->device, buffer, &req);
  uint32_t type = 0;
  Status s = pick_type(req.memoryTypeBits, kind, &type);
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  if (s) {
    auto mai = vk_info<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    s = vk_check(vkAllocateMemory(d_->device, &mai, nullptr, &memory), "vkAllocateMemory");
  }
  if (s) s = vk_check(vkBindBufferMemory(d_->device, buffer, memory, 0), "vkBindBufferMemory");
  if (s) s = vk_check(vkMapMemory(d_->device, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  VkBufferView view = VK_NULL_HANDLE;
  size_t view_bytes = 0;
  if (s && texel_views_) {
    // Past maxTexelBufferElements texels the view stops; bindings beyond it keep the storage kernels.
    const uint64_t max_texels = c.max_texel_buffer_elements;
    view_bytes = size / 16 <= max_texels ? size : static_cast<size_t>(max_texels) * 16;
    auto vci = vk_info<VkBufferViewCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO);
    vci.buffer = buffer;
    vci.format = VK_FORMAT_R32G32B32A32_UINT;
    vci.offset = 0;
    vci.range = view_bytes;
    s = vk_check(vkCreateBufferView(d_->device, &vci, nullptr, &view), "vkCreateBufferView");
  }
  const Allocation a{reinterpret_cast<uint64_t>(buffer), reinterpret_cast<uint64_t>(memory), size,
                     reinterpret_cast<uint64_t>(view), view ? view_bytes : 0};
  if (s) {
    // The table's node is the one host allocation here; without it the device memory is
    // given back, not leaked.
    bool inserted = false;
    try {
      inserted = table_.insert(mapped, a);
    } catch (const std::bad_alloc&) {
      s = error(WT_ERR_OUT_OF_MEMORY, "vulkan: cannot record an allocation");
    }
    if (s && !inserted) s = error(WT_ERR_INTERNAL, "vulkan: a new mapping overlaps an old one");
  }
  if (!s) {
    if (view) vkDestroyBufferView(d_->device, view, nullptr);
    vkDestroyBuffer(d_->device, buffer, nullptr);
    if (memory) vkFreeMemory(d_->device, memory, nullptr);
    return s;
  }
  allocated_bytes_ += size;
  fault::note_alloc();
  *out = Buffer{mapped, mapped, a.buffer, 0, bytes, kind};
  return Status::ok();
}

void Memory::free(Buffer* buffer) {
  if (!buffer || !buffer->host) return;
  Allocation a;
  if (table_.erase(buffer->host, &a)) {
    allocated_bytes_ -= a.size_bytes;
    if (!process_exiting()) {  // else the driver may be gone (process_exit.h)
      if (a.view) vkDestroyBufferView(d_->device, reinterpret_cast<VkBufferView>(a.view), nullptr);
      vkDestroyBuffer(d_->device, reinterpret_cast<VkBuffer>(a.buffer), nullptr);
      vkFreeMemory(d_->device, reinterpret_cast<VkDeviceMemory>(a.memory), nullptr);
    }
    fault::note_free();
  }
  *buffer = Buffer{};
}

uint64_t Memory::device_local_bytes() const {
  uint64_t total = 0;
  for (uint32_t i = 0; i < d_->memory.memoryHeapCount; ++i)
    if (d_->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) total += d_->memory.memoryHeaps[i].size;
  return total;
}

}  // namespace wt::vk
