#include "memory.h"

#include <sys/mman.h>

#include <new>
#include <string>

#include "base/fault_injection.h"
#include "memory_heaps.h"
#include "process_exit.h"
#include "vk_status.h"

namespace wt::vk {

namespace {

// Addresses for an allocation the host cannot map: reserved, never backed, never readable.
void* reserve_addresses(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

Memory::~Memory() {
  const bool driver_up = !process_exiting();  // else the driver may be gone (process_exit.h)
  table_.for_each([&](void* base, const Allocation& a) {
    if (driver_up) {
      if (a.view) vkDestroyBufferView(d_->device, reinterpret_cast<VkBufferView>(a.view), nullptr);
      vkDestroyBuffer(d_->device, reinterpret_cast<VkBuffer>(a.buffer), nullptr);
      vkFreeMemory(d_->device, reinterpret_cast<VkDeviceMemory>(a.memory), nullptr);  // unmaps too
    }
    if (a.unmapped) munmap(base, a.size_bytes);  // the host's, safe after the driver's end
    fault::note_free();
  });
}

Status Memory::alloc(size_t bytes, MemoryKind kind, Buffer* out) {
  const bool unified = d_->caps.unified_memory;
  const bool unmapped = kind == MemoryKind::device_only && device_only_unmapped();
  if (kind == MemoryKind::device_only && !unmapped) kind = MemoryKind::device;  // mapped, as backend.h says
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
  const int type = pick_memory_type(d_->memory, req.memoryTypeBits, kind, unified);
  // The buffers' usage decides the types they may take: device_memory asks where the next
  // device_only buffer would go.
  if (kind == MemoryKind::device || kind == MemoryKind::device_only)
    device_type_bits_.store(req.memoryTypeBits, std::memory_order_relaxed);
  Status s = type >= 0 ? Status::ok()
                       : error(WT_ERR_UNSUPPORTED, unmapped ? "vulkan: the device has no memory type for storage buffers"
                                                            : "vulkan: the device has no host-visible coherent memory type for storage buffers");
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;  // or, unmapped, the addresses reserved for it
  if (s) {
    auto mai = vk_info<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = static_cast<uint32_t>(type);
    s = vk_check(vkAllocateMemory(d_->device, &mai, nullptr, &memory), "vkAllocateMemory");
  }
  if (s) s = vk_check(vkBindBufferMemory(d_->device, buffer, memory, 0), "vkBindBufferMemory");
  if (s && unmapped) {
    mapped = reserve_addresses(size);
    if (!mapped) s = error(WT_ERR_OUT_OF_MEMORY, "vulkan: cannot reserve " + std::to_string(size) + " bytes of addresses");
  } else if (s) {
    s = vk_check(vkMapMemory(d_->device, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  }
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
                     reinterpret_cast<uint64_t>(view), view ? view_bytes : 0,
                     type >= 0 ? d_->memory.memoryTypes[type].heapIndex : 0, req.size, unmapped};
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
    if (unmapped && mapped) munmap(mapped, size);
    return s;
  }
  heap_bytes_[a.heap] += a.heap_bytes;
  fault::note_alloc();
  *out = Buffer{unmapped ? nullptr : mapped, mapped, a.buffer, 0, bytes, kind};
  return Status::ok();
}

void Memory::free(Buffer* buffer) {
  void* const base = buffer && buffer->host ? buffer->host : buffer ? buffer->device : nullptr;
  if (!base) return;
  Allocation a;
  if (table_.erase(base, &a)) {
    heap_bytes_[a.heap] -= a.heap_bytes;
    if (!process_exiting()) {  // else the driver may be gone (process_exit.h)
      if (a.view) vkDestroyBufferView(d_->device, reinterpret_cast<VkBufferView>(a.view), nullptr);
      vkDestroyBuffer(d_->device, reinterpret_cast<VkBuffer>(a.buffer), nullptr);
      vkFreeMemory(d_->device, reinterpret_cast<VkDeviceMemory>(a.memory), nullptr);
    }
    if (a.unmapped) munmap(base, a.size_bytes);
    fault::note_free();
  }
  *buffer = Buffer{};
}

Status Memory::device_memory(MemoryInfo* out) const {
  const int heap = device_heap(d_->memory, device_type_bits_.load(std::memory_order_relaxed), d_->caps.unified_memory);
  if (heap < 0) return error(WT_ERR_UNSUPPORTED, "vulkan: the device has no memory type for storage buffers");
  const uint64_t total = d_->memory.memoryHeaps[heap].size;
  uint64_t used = heap_bytes_[heap].load(std::memory_order_relaxed);
  uint64_t limit = total;
  if (d_->caps.memory_budget) {
    // The budget counts other processes and the driver's own use, the usage this process's
    // allocations as the driver sized them; a physical-device query, safe without the
    // device's lock.
    auto budget = vk_info<VkPhysicalDeviceMemoryBudgetPropertiesEXT>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT);
    auto props = vk_info<VkPhysicalDeviceMemoryProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, &budget);
    vkGetPhysicalDeviceMemoryProperties2(d_->physical, &props);
    if (budget.heapBudget[heap] > 0) {
      limit = budget.heapBudget[heap] < total ? budget.heapBudget[heap] : total;
      used = budget.heapUsage[heap];
    }
  }
  out->total_bytes = total;
  out->free_bytes = used < limit ? limit - used : 0;
  return Status::ok();
}

}  // namespace wt::vk
