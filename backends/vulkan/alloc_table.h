// Pointer -> (VkBuffer, offset) resolution. The engine computes tensor views by pointer
// arithmetic, so a tensor's data pointer is the seam: the allocation whose range contains
// it gives the buffer, and the distance from the range's start gives the offset. The range
// is the allocation's mapping, or for memory the host cannot map (device_only on a
// discrete card) an address range reserved for it alone, never readable (memory.h). Kept
// free of Vulkan calls so it is unit-tested without a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace wt::vk {

struct Allocation {
  uint64_t buffer = 0;   // VkBuffer handle
  uint64_t memory = 0;   // VkDeviceMemory handle
  size_t size_bytes = 0; // the buffer's size (the mapped range)
  uint64_t view = 0;     // VkBufferView of its first view_bytes as 16-byte texels (0: none)
  size_t view_bytes = 0;
  uint32_t heap = 0;     // the memory heap it came from (Memory counts bytes per heap)
  uint64_t heap_bytes = 0;  // what that heap lost: the driver's size, aligned as it likes
  bool unmapped = false; // its range is reserved addresses, not a mapping (unreserved on free)
};

struct Resolved {
  uint64_t buffer = 0;
  size_t offset = 0;     // of the pointer from the buffer's start
  size_t size_bytes = 0; // of the whole buffer
  uint64_t view = 0;     // the allocation's texel view and its extent from the buffer's start
  size_t view_bytes = 0;
};

class AllocationTable {
 public:
  // False if [base, base + size) overlaps a registered range.
  bool insert(const void* base, const Allocation& a);
  // Removes the allocation starting exactly at base; false if there is none.
  bool erase(const void* base, Allocation* out);
  // The allocation holding [p, p + bytes); false if p is not inside any allocation or the
  // range runs past its end. No allocation: launch calls this for every tensor.
  bool find(const void* p, size_t bytes, Resolved* out) const;
  size_t size() const { return by_base_.size(); }
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [base, a] : by_base_) f(reinterpret_cast<void*>(base), a);
  }

 private:
  std::map<uintptr_t, Allocation> by_base_;
};

}  // namespace wt::vk
