// Allocations (memory.h). Managed memory (MemoryKind::device on a discrete GPU; the engine's
// contexts no longer ask for it) is advised to live on the GPU so kernels read it at device
// bandwidth; the host's touches migrate pages on demand. What the engine keeps on the device
// is device_only: plain cudaMalloc on any GPU, never touched by the host (the weights,
// uploaded through pinned staging by ModelDevice::place; the contexts' arenas' device parts
// and the pager's device pool, reached by kernels and copies alone).
#include "memory.h"

#include <new>
#include <string>

#include "base/fault_injection.h"
#include "cuda_status.h"

namespace wt::cuda {

Memory::~Memory() {
  for (auto& [base, a] : live_) {
    release(base, a.method);
    fault::note_free();
  }
}

void Memory::release(void* base, Method m) {
  // Errors here are ignored: free runs in destructors and after a lost device.
  if (m == Method::host_mapped) {
    (void)cudaFreeHost(base);
  } else {
    (void)cudaFree(base);  // managed and cudaMalloc'd memory alike
  }
}

Status Memory::alloc(size_t bytes, MemoryKind kind, Buffer* out) {
  if (!caps_) return error(WT_ERR_INTERNAL, "cuda: memory used before the device was opened");
  const size_t n = bytes == 0 ? 1 : bytes;
  // device_only is cudaMalloc on integrated GPUs too, although their device memory is host
  // DRAM: NVIDIA's Tegra app note lists device memory as cached on the iGPU and pinned host
  // memory as uncached there, and the kernels read the weights, the KV and the activations
  // again and again (tiles, GQA, every layer). The engine runs the same path as on a
  // discrete GPU: uploads and transfers through pinned staging (docs/jetson.md, "Memory on
  // the board").
  const Method m = kind == MemoryKind::device_only                      ? Method::device
                   : kind == MemoryKind::device && !caps_->integrated ? Method::managed
                                                                      : Method::host_mapped;
  if (fault::should_fail(fault::Site::alloc))
    return error(WT_ERR_OUT_OF_MEMORY, "cuda: cannot allocate " + std::to_string(bytes) + " bytes (injected fault)");
  void* p = nullptr;
  if (m == Method::device) {
    WT_TRY(cuda_status(cudaMalloc(&p, n), ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str()));
  } else if (m == Method::managed) {
    WT_TRY(cuda_status(cudaMallocManaged(&p, n, cudaMemAttachGlobal),
                       ("cudaMallocManaged of " + std::to_string(bytes) + " bytes").c_str()));
    cudaMemLocation loc{};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = caps_->index;
    // Advice only: a device without concurrent managed access may refuse it; that is no error.
    if (cudaMemAdvise(p, n, cudaMemAdviseSetPreferredLocation, loc) != cudaSuccess) (void)cudaGetLastError();
    // Populate the pages on the GPU now: a kernel's first touch of a managed page faults, and
    // the first prefill's KV writes spent 6.1 of 18.5 ms so (a 945-token prompt, H200, ncu).
    // Best effort, like the advice; the legacy stream, waited for here (allocation time).
#if CUDART_VERSION >= 13000
    const cudaError_t pe = cudaMemPrefetchAsync(p, n, loc, 0, nullptr);
#else
    const cudaError_t pe = cudaMemPrefetchAsync(p, n, caps_->index, nullptr);
#endif
    if (pe != cudaSuccess || cudaStreamSynchronize(nullptr) != cudaSuccess) (void)cudaGetLastError();
  } else {
    WT_TRY(cuda_status(cudaHostAlloc(&p, n, cudaHostAllocMapped | cudaHostAllocPortable),
                       ("cudaHostAlloc of " + std::to_string(bytes) + " bytes").c_str()));
  }
  void* dev = p;
  if (m == Method::host_mapped) {
    const cudaError_t e = cudaHostGetDevicePointer(&dev, p, 0);
    if (e != cudaSuccess) {
      (void)cudaFreeHost(p);
      return cuda_status(e, "cudaHostGetDevicePointer");
    }
  }
  if (dev != p) {
    // Tensor views are made by host-pointer arithmetic (Tensor::data) and handed to kernels
    // as they are, which needs one address for both sides (unified virtual addressing,
    // every 64-bit platform CUDA supports).
    release(p, m);
    return error(WT_ERR_UNSUPPORTED, "cuda: mapped memory has a device address other than its host address "
                                     "(no unified virtual addressing); the backend needs them equal");
  }
  try {
    live_.emplace(p, Allocation{n, m});  // p: the device address of cudaMalloc'd memory
  } catch (const std::bad_alloc&) {
    release(p, m);
    return error(WT_ERR_OUT_OF_MEMORY, "cuda: cannot record an allocation");
  }
  allocated_bytes_ += n;
  fault::note_alloc();
  Buffer b;
  b.host = m == Method::device ? nullptr : p;  // device-only: the host never addresses it
  b.device = dev;
  b.handle = static_cast<uint64_t>(m);
  b.offset = 0;
  b.size_bytes = bytes;
  b.kind = kind;
  *out = b;
  return Status::ok();
}

void Memory::free(Buffer* buffer) {
  if (!buffer) return;
  // The base address: host == device for managed and mapped memory, device for cudaMalloc.
  void* base = buffer->host ? buffer->host : buffer->device;
  if (!base) return;
  auto it = live_.find(base);
  if (it == live_.end()) return;  // a view, or memory of another backend: not ours to free
  allocated_bytes_ -= it->second.bytes;
  release(it->first, it->second.method);
  live_.erase(it);
  fault::note_free();
  *buffer = Buffer{};
}

}  // namespace wt::cuda
