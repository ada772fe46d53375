// Allocations by MemoryKind (memory_heaps.h chooses the type). Every allocation but one
// kind is host-visible, coherent and mapped for its whole life: device-local + host-visible
// where the device offers such a type (lavapipe, Jetson, a desktop card's BAR: all of its
// VRAM with resizable BAR, else a heap of about 256 MiB), else plain host-visible, and
// addressed by its mapped pointer (alloc_table.h). The exception is device_only memory on
// a discrete card (the weights, filled through copy_async: runtime/engine/model_device.h;
// the contexts' arenas' device parts and the pager's device pool, which only kernels and
// copies touch): never mapped, so it may live in VRAM the BAR does not reach. Its Buffer::host is null and
// Buffer::device an address range reserved for it (PROT_NONE: a stray host read faults
// instead of reading other memory), which the table resolves as it does mappings. On
// unified memory device_only is device. An allocation larger than the device's
// maxMemoryAllocationSize or maxBufferSize is refused with a Status naming both numbers;
// the planner must split such tensors (splitting here is a later step).
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>

#include "backends/backend.h"
#include "backends/weight_types.h"
#include "alloc_table.h"
#include "device.h"

namespace wt::vk {

class Memory {
 public:
  explicit Memory(Device* device) : d_(device) {}
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory();

  // From now on every allocation also gets a uniform texel buffer view (16-byte texels,
  // R32G32B32A32_UINT, from its start as far as maxTexelBufferElements reaches): the lane
  // matmul reads weights and x through it (kernels/vulkan/matmul.comp W_TEXEL).
  void enable_texel_views() { texel_views_ = true; }
  // From now on device_only memory is unmapped on unified memory too (as on a discrete
  // card), so tests run that path on lavapipe (BackendOptions::unmapped_device_only).
  void unmap_device_only() { unmap_device_only_ = true; }
  // Whether device_only memory is left unmapped: on a discrete card, or when told to.
  bool device_only_unmapped() const {
    return unmap_device_only_ || device_only_unmapped_of(WT_BACKEND_VULKAN, d_->caps.unified_memory);
  }
  Status alloc(size_t bytes, MemoryKind kind, Buffer* out);
  void free(Buffer* buffer);
  const AllocationTable& table() const { return table_; }
  // memory_info: the heap the contexts' device memory comes from (device_heap in
  // memory_heaps.h: VRAM on a discrete card), its size, and
  // what is free in it: the driver's budget less its usage where VK_EXT_memory_budget is
  // offered, else the heap less this backend's allocations in it (the host kinds' heap is
  // another on a discrete GPU, so pinned host buffers do not count). Safe without the
  // device's lock.
  Status device_memory(MemoryInfo* out) const;

 private:
  Device* d_;
  AllocationTable table_;
  // Both read by device_memory without the device's lock.
  std::atomic<uint64_t> heap_bytes_[VK_MAX_MEMORY_HEAPS] = {};
  std::atomic<uint32_t> device_type_bits_{~0u};  // of the last device or device_only buffer
  bool texel_views_ = false;
  bool unmap_device_only_ = false;
};

}  // namespace wt::vk
