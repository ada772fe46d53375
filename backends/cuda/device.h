// Device choice and what the device can do, as data (CudaCaps). The backend and kernels
// choose from these fields, never from the device name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace wt::cuda {

struct CudaCaps {
  int index = 0;                       // the CUDA device ordinal in use
  std::string device_name;             // "Orin", "NVIDIA GeForce RTX 4090"
  int cc_major = 0, cc_minor = 0;      // compute capability (8.7 = Orin)
  int sm_count = 0;                    // multiprocessors
  bool integrated = false;             // cudaDevAttrIntegrated: device memory is host DRAM (Jetson)
  bool concurrent_managed_access = false;  // host and device may touch managed memory at once
  bool can_map_host_memory = false;    // cudaHostAllocMapped works (required)
  int max_threads_per_block = 0;
  size_t max_shared_per_block = 0;     // bytes, without opt-in
  size_t total_memory_bytes = 0;       // cudaDeviceProp::totalGlobalMem
};

// Picks device `index` (-1: device 0) and makes it current on this thread. Without a
// driver, a device or the features the backend needs (mapped host memory, compute
// capability 6.0+ for managed memory on discrete GPUs) WT_ERR_UNSUPPORTED with the reason.
Status open_device(int index, CudaCaps* out);

}  // namespace wt::cuda
