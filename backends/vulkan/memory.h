// Allocations by MemoryKind. For now every allocation is host-visible, coherent and mapped
// for its whole life (memory_heaps.h chooses the type): device-local + host-visible where
// the device offers such a type (lavapipe, Jetson, a desktop card's BAR: all of its VRAM
// with resizable BAR, else a heap of about 256 MiB), else plain host-visible. Tensors are then
// addressed by their mapped pointers (alloc_table.h). An allocation larger than the
// device's maxMemoryAllocationSize or maxBufferSize is refused with a Status naming both
// numbers; the planner must split such tensors (splitting here is a later step).
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>

#include "backends/backend.h"
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
  Status alloc(size_t bytes, MemoryKind kind, Buffer* out);
  void free(Buffer* buffer);
  const AllocationTable& table() const { return table_; }
  // memory_info: the heap device allocations come from (memory_heaps.h), its size, and
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
  std::atomic<uint32_t> device_type_bits_{~0u};  // of the last device buffer
  bool texel_views_ = false;
};

}  // namespace wt::vk
