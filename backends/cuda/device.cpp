// Device choice and capabilities. Every failure that means "no usable GPU here" becomes
// WT_ERR_UNSUPPORTED with the driver's words, so a machine without a GPU gets a clear
// refusal from create_cuda_backend, never an abort.
#include "device.h"

#include <string>

#include "cuda_status.h"

namespace wt::cuda {
namespace {

Status unsupported(const std::string& why) { return error(WT_ERR_UNSUPPORTED, "cuda: " + why); }

Status attribute(cudaDeviceAttr attr, int device, int* out, const char* what) {
  return cuda_status(cudaDeviceGetAttribute(out, attr, device), what);
}

}  // namespace

Status open_device(int index, CudaCaps* out) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (is_no_device(e)) return unsupported(std::string("no usable CUDA device or driver: ") + cudaGetErrorString(e));
    return cuda_status(e, "cudaGetDeviceCount");
  }
  if (n == 0) return unsupported("no CUDA device");
  const int dev = index < 0 ? 0 : index;
  if (dev >= n)
    return unsupported("device_index " + std::to_string(index) + " asked, the machine has " + std::to_string(n) +
                       " CUDA device(s)");
  const cudaError_t se = cudaSetDevice(dev);
  if (se != cudaSuccess) {
    if (is_no_device(se)) return unsupported(std::string("cannot use device ") + std::to_string(dev) + ": " +
                                             cudaGetErrorString(se));
    return cuda_status(se, "cudaSetDevice");
  }
  cudaDeviceProp prop{};
  WT_TRY(cuda_status(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties"));
  CudaCaps c;
  c.index = dev;
  c.device_name = prop.name;
  c.cc_major = prop.major;
  c.cc_minor = prop.minor;
  c.total_memory_bytes = prop.totalGlobalMem;
  int v = 0;
  WT_TRY(attribute(cudaDevAttrMultiProcessorCount, dev, &c.sm_count, "cudaDevAttrMultiProcessorCount"));
  WT_TRY(attribute(cudaDevAttrIntegrated, dev, &v, "cudaDevAttrIntegrated"));
  c.integrated = v != 0;
  WT_TRY(attribute(cudaDevAttrConcurrentManagedAccess, dev, &v, "cudaDevAttrConcurrentManagedAccess"));
  c.concurrent_managed_access = v != 0;
  WT_TRY(attribute(cudaDevAttrCanMapHostMemory, dev, &v, "cudaDevAttrCanMapHostMemory"));
  c.can_map_host_memory = v != 0;
  WT_TRY(attribute(cudaDevAttrMaxThreadsPerBlock, dev, &c.max_threads_per_block, "cudaDevAttrMaxThreadsPerBlock"));
  WT_TRY(attribute(cudaDevAttrMaxSharedMemoryPerBlock, dev, &v, "cudaDevAttrMaxSharedMemoryPerBlock"));
  c.max_shared_per_block = static_cast<size_t>(v);
  if (!c.can_map_host_memory)
    return unsupported(c.device_name + " cannot map host memory (cudaDevAttrCanMapHostMemory), which the backend needs");
  WT_TRY(attribute(cudaDevAttrManagedMemory, dev, &v, "cudaDevAttrManagedMemory"));
  if (!c.integrated && v == 0)
    return unsupported(c.device_name + " has no managed memory (cudaDevAttrManagedMemory), which the backend needs");
  *out = c;
  return Status::ok();
}

}  // namespace wt::cuda
