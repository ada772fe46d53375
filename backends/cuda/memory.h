// Allocations by MemoryKind (README.md, "Memory model"). Every allocation is
// host-addressable, so Buffer::host and Buffer::device are both set: the engine writes
// weights through Buffer::host and reads small results after synchronize.
//   device:      cudaMallocManaged, preferred location the GPU (discrete GPUs);
//                cudaHostAlloc(mapped) on integrated GPUs (Jetson: host DRAM is device memory)
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
  void free(Buffer* buffer);
  uint64_t allocated_bytes() const { return allocated_bytes_; }

 private:
  enum class Method : uint64_t { managed = 1, host_mapped = 2 };
  struct Allocation {
    size_t bytes;
    Method method;
  };
  static void release(void* base, Method m);

  const CudaCaps* caps_ = nullptr;
  std::map<void*, Allocation> live_;  // base pointer -> how it was made (freed by the same method)
  uint64_t allocated_bytes_ = 0;
};

}  // namespace wt::cuda
