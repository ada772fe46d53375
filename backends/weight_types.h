// The weight types each backend's embed and matmul decode (BackendCaps::weight_types), and
// whether its device_only memory is mapped, as data: the backends set their caps from here,
// and the planner refuses a model a backend cannot read, and lays out a context's arena,
// without making the backend (planning needs no device).
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "whittle.h"

namespace wt {

// The types the backend's kernels decode on a device with every feature they use.
uint64_t weight_types_of(wt_backend_kind kind);

// Vulkan reads F16 weights only where the device has 16-bit storage buffers; the backend
// clears the bit on devices without them. Nothing else depends on the device.
inline constexpr uint64_t kVulkanFeatureTypes = dtype_bit(DType::f16);

// The KV cache types (f32, f16, q8_0: kernels/dtype.h is_kv_type) the backend's attention,
// scoring and row-copy kernels read and write (BackendCaps::kv_types).
uint64_t kv_types_of(wt_backend_kind kind);

// BackendCaps::device_only_unmapped on a device whose memory is (unified_memory) or is not
// host DRAM: CUDA's device_only is cudaMalloc on every GPU (backends/cuda/memory.h), Vulkan's
// is mapped where device memory is host memory (backends/vulkan/memory.h), the CPU's is
// ordinary memory.
bool device_only_unmapped_of(wt_backend_kind kind, bool unified_memory);

// "F32, F16, Q8_0": the types of a bit set, in DType order, for messages.
std::string weight_type_names(uint64_t types);

}  // namespace wt
