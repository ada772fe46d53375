// Instance, physical device choice, logical device and queues, and what the device can do
// as data (VulkanCaps). Kernels and the backend choose variants from these fields, never
// from the device name.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace wt::vk {

struct VulkanCaps {
  std::string device_name;
  uint32_t api_version = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t subgroup_size = 0;
  VkSubgroupFeatureFlags subgroup_ops = 0;  // basic, arithmetic, shuffle... in compute
  bool storage_16bit = false;   // f16 loads/stores in storage buffers
  bool storage_8bit = false;
  bool float16_arith = false;
  bool int8_arith = false;
  bool float64 = false;         // rope computes its angles in double where present
  uint64_t max_storage_buffer_range = 0;
  uint64_t min_storage_buffer_offset_alignment = 1;
  uint64_t max_texel_buffer_elements = 0;  // of a uniform texel buffer view (Memory's texel views)
  bool texel_views = false;  // R32G32B32A32_UINT works as a uniform texel buffer (mandatory in the spec)
  uint64_t max_memory_allocation_bytes = 0;
  uint64_t max_buffer_bytes = 0;
  uint32_t max_push_constants_bytes = 0;
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_size_x = 0;
  uint32_t max_shared_bytes = 0;  // a workgroup's shared memory
  bool unified_memory = false;  // device memory is host DRAM (memory_heaps.h: lavapipe, Jetson)
  bool memory_budget = false;   // VK_EXT_memory_budget: the driver's free-memory figures per heap
  bool has_transfer_queue = false;
  // Stream timing (VkStream): timestamps need a reset from the host (Vulkan 1.2
  // hostQueryReset), since a transfer-only queue cannot reset queries in a command buffer.
  bool host_query_reset = false;
  double timestamp_period_ns = 0;  // one timestamp tick
};

struct DeviceOptions {
  int device_index = -1;    // -1: the best device (discrete, integrated, virtual, cpu)
  bool validation = false;  // VK_LAYER_KHRONOS_validation + a messenger counting errors
};

// Errors the validation layer reported (the messenger's user data); checked by the
// backend at synchronize so a test fails on the first broken rule.
struct ValidationLog {
  uint32_t n_errors = 0;
  std::string first_error;
};

struct Device {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t compute_family = 0;
  uint32_t copy_family = 0;   // == compute_family when the device has no transfer-only family
  uint32_t compute_timestamp_bits = 0;  // valid bits of the families' timestamps (0: none)
  uint32_t copy_timestamp_bits = 0;
  VkQueue compute_queue = VK_NULL_HANDLE;
  VkQueue copy_queue = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  PFN_vkCmdPushDescriptorSetKHR cmd_push_descriptor_set = nullptr;
  VulkanCaps caps;
  ValidationLog* validation = nullptr;  // owned; null without validation

  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();
};

// WT_ERR_UNSUPPORTED (with the reason) when there is no loader, no device, or no device
// with Vulkan 1.2 timeline semaphores and push descriptors.
Status create_device(const DeviceOptions& options, Device* out);

}  // namespace wt::vk
