// Allocations by MemoryKind (README.md, "Memory model"). Every allocation but device_only
// memory is host-addressable, so Buffer::host and Buffer::device are both
// set (and equal): the engine writes through Buffer::host and reads small results after
// synchronize.
//   device:      cudaMallocManaged, preferred location the GPU (discrete GPUs);
//                cudaHostAlloc(mapped) on integrated GPUs (Jetson: host DRAM is device memory)
//   device_only: cudaMalloc, Buffer::host == nullptr (the weights, filled through
//                copy_async from pinned staging; the contexts' arenas' device parts and the
//                pager's device pool), on integrated GPUs too (memory.cpp says why)
//   host_pinned: cudaHostAlloc(mapped)
//   host:        cudaHostAlloc(mapped) too, so ops may read it as well
// Nothing is allocated after the engine's arenas are made.
#pragma once

#include <cstdint>
#include <map>

#include "backends/backend.h"
#include "device.h"

namespace wt::cuda {

class Memory {
 public:
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory();

  void set_device(const CudaCaps* caps) { caps_ = caps; }
  Status alloc(size_t bytes, MemoryKind kind, Buffer* out);
  // Frees the allocation whose base address the buffer holds: Buffer::host where there is
  // one, else Buffer::device (device_only memory). An address this object did not allocate
  // (another backend's memory) is left alone.
  void free(Buffer* buffer);
  uint64_t allocated_bytes() const { return allocated_bytes_; }

 private:
  enum class Method : uint64_t { managed = 1, host_mapped = 2, device = 3 };
  struct Allocation {
    size_t bytes;
    Method method;
  };
  static void release(void* base, Method m);

  const CudaCaps* caps_ = nullptr;
  // base address -> how it was made (freed by the same method). The base is the one
  // address of the allocation: host == device for managed and mapped memory (unified
  // virtual addressing), the device address for cudaMalloc'd memory.
  std::map<void*, Allocation> live_;
  uint64_t allocated_bytes_ = 0;
};

}  // namespace wt::cuda
