#include "device.h"

#include <cstring>
#include <vector>

#include "memory_heaps.h"
#include "process_exit.h"
#include "vk_status.h"

namespace wt::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                     void* user) {
  auto* log = static_cast<ValidationLog*>(user);
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    if (log->n_errors++ == 0) log->first_error = data && data->pMessage ? data->pMessage : "(no text)";
  }
  return VK_FALSE;  // never abort the call: the backend reports the error as a Status
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool has_device_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> ext(n);
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data()) != VK_SUCCESS) return false;
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

// Why a device cannot run Whittle, or nullptr if it can.
const char* unusable(VkPhysicalDevice pd) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(pd, &p);
  if (p.apiVersion < VK_API_VERSION_1_2) return "Vulkan 1.2 is required (timeline semaphores)";
  auto f12 = vk_info<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto f = vk_info<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12);
  vkGetPhysicalDeviceFeatures2(pd, &f);
  if (!f12.timelineSemaphore) return "timeline semaphores are required";
  if (!has_device_extension(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) return "VK_KHR_push_descriptor is required";
  return nullptr;
}

void fill_caps(VkPhysicalDevice pd, Device* d) {
  VulkanCaps& c = d->caps;
  auto sub = vk_info<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto m4 = vk_info<VkPhysicalDeviceMaintenance4Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES, &sub);
  auto m3 = vk_info<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES, &m4);
  auto p = vk_info<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &m3);
  vkGetPhysicalDeviceProperties2(pd, &p);
  c.device_name = p.properties.deviceName;
  c.api_version = p.properties.apiVersion;
  c.type = p.properties.deviceType;
  c.subgroup_size = sub.subgroupSize;
  c.subgroup_ops = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sub.supportedOperations : 0;
  const VkPhysicalDeviceLimits& l = p.properties.limits;
  c.max_storage_buffer_range = l.maxStorageBufferRange;
  c.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
  c.max_texel_buffer_elements = l.maxTexelBufferElements;
  VkFormatProperties fp;
  vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R32G32B32A32_UINT, &fp);
  c.texel_views =
      (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0 && c.max_texel_buffer_elements >= 16;
  c.max_memory_allocation_bytes = m3.maxMemoryAllocationSize;
  // maintenance4 is core in 1.3; on 1.2 devices the struct stays zero: no separate limit.
  c.max_buffer_bytes = m4.maxBufferSize ? m4.maxBufferSize : m3.maxMemoryAllocationSize;
  c.max_push_constants_bytes = l.maxPushConstantsSize;
  for (int i = 0; i < 3; ++i) c.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
  c.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  c.max_shared_bytes = l.maxComputeSharedMemorySize;
  c.max_workgroup_size_x = l.maxComputeWorkGroupSize[0];
  c.timestamp_period_ns = l.timestampPeriod;

  auto f11 = vk_info<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto f12 = vk_info<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &f11);
  auto f = vk_info<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12);
  vkGetPhysicalDeviceFeatures2(pd, &f);
  c.storage_16bit = f11.storageBuffer16BitAccess;
  c.storage_8bit = f12.storageBuffer8BitAccess;
  c.float16_arith = f12.shaderFloat16;
  c.int8_arith = f12.shaderInt8;
  c.float64 = f.features.shaderFloat64;
  c.host_query_reset = f12.hostQueryReset;

  vkGetPhysicalDeviceMemoryProperties(pd, &d->memory);
  c.unified_memory = memory_is_unified(c.type, d->memory);
  // Physical-device functionality of a device extension: usable where offered, not enabled.
  c.memory_budget = has_device_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
}

}  // namespace

Device::~Device() {
  // At exit the driver may be gone already (process_exit.h): leave everything to the OS,
  // the validation log too (the messenger still points at it).
  if (process_exiting()) return;
  if (device) {
    vkDeviceWaitIdle(device);
    vkDestroyDevice(device, nullptr);
  }
  if (messenger) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance, messenger, nullptr);
  }
  if (instance) vkDestroyInstance(instance, nullptr);
  delete validation;
}

Status create_device(const DeviceOptions& options, Device* d) {
  uint32_t loader_version = 0;
  if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS || loader_version < VK_API_VERSION_1_2)
    return error(WT_ERR_UNSUPPORTED, "vulkan: the Vulkan loader is older than 1.2");

  auto app = vk_info<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "whittle";
  app.apiVersion = VK_API_VERSION_1_2;
  std::vector<const char*> layers, extensions;
  if (options.validation) {
    if (!has_layer(kValidationLayer))
      return error(WT_ERR_UNSUPPORTED, "vulkan: validation asked for, but VK_LAYER_KHRONOS_validation is not "
                                       "installed (Debian: vulkan-validationlayers)");
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    d->validation = new ValidationLog;
  }
  auto mci = vk_info<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = &on_validation_message;
  mci.pUserData = d->validation;

  // Synchronization validation on top of the core checks: missing barriers between
  // dispatches or across the two streams are what this backend can get wrong.
  const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  auto features = vk_info<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, &mci);
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  auto ici = vk_info<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ici.pNext = options.validation ? &features : nullptr;  // the messenger also covers instance creation
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  const VkResult r = vkCreateInstance(&ici, nullptr, &d->instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return error(WT_ERR_UNSUPPORTED, "vulkan: no Vulkan driver is installed (vkCreateInstance: incompatible driver)");
  WT_TRY(vk_check(r, "vkCreateInstance"));
  if (options.validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(d->instance, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) return error(WT_ERR_UNSUPPORTED, "vulkan: VK_EXT_debug_utils is missing");
    WT_TRY(vk_check(create(d->instance, &mci, nullptr, &d->messenger), "vkCreateDebugUtilsMessengerEXT"));
  }

  uint32_t n = 0;
  WT_TRY(vk_check(vkEnumeratePhysicalDevices(d->instance, &n, nullptr), "vkEnumeratePhysicalDevices"));
  if (n == 0) return error(WT_ERR_UNSUPPORTED, "vulkan: no Vulkan device found");
  std::vector<VkPhysicalDevice> pds(n);
  WT_TRY(vk_check(vkEnumeratePhysicalDevices(d->instance, &n, pds.data()), "vkEnumeratePhysicalDevices"));
  if (options.device_index >= 0) {
    if (static_cast<uint32_t>(options.device_index) >= n)
      return error(WT_ERR_INVALID_ARGUMENT, "vulkan: device_index " + std::to_string(options.device_index) +
                                                " but only " + std::to_string(n) + " device(s)");
    if (const char* why = unusable(pds[options.device_index]))
      return error(WT_ERR_UNSUPPORTED, std::string("vulkan: device ") + std::to_string(options.device_index) + ": " + why);
    d->physical = pds[options.device_index];
  } else {
    int best = 99;
    const char* last_reason = "no device";
    for (VkPhysicalDevice pd : pds) {
      if (const char* why = unusable(pd)) {
        last_reason = why;
        continue;
      }
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(pd, &p);
      if (type_rank(p.deviceType) < best) {
        best = type_rank(p.deviceType);
        d->physical = pd;
      }
    }
    if (!d->physical) return error(WT_ERR_UNSUPPORTED, std::string("vulkan: no usable device: ") + last_reason);
  }
  fill_caps(d->physical, d);

  // Queues: compute on the first compute family; copies on a transfer-only family where
  // there is one (a DMA engine that overlaps compute), else on the compute queue.
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &nq, fams.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i) {
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      d->compute_family = i;
      found = true;
    }
  }
  if (!found) return error(WT_ERR_UNSUPPORTED, "vulkan: the device has no compute queue");
  d->copy_family = d->compute_family;
  for (uint32_t i = 0; i < nq; ++i) {
    const VkQueueFlags f = fams[i].queueFlags;
    if ((f & VK_QUEUE_TRANSFER_BIT) && !(f & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT))) {
      d->copy_family = i;
      break;
    }
  }
  d->caps.has_transfer_queue = d->copy_family != d->compute_family;
  d->compute_timestamp_bits = fams[d->compute_family].timestampValidBits;
  d->copy_timestamp_bits = fams[d->copy_family].timestampValidBits;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci[2];
  qci[0] = vk_info<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qci[0].queueFamilyIndex = d->compute_family;
  qci[0].queueCount = 1;
  qci[0].pQueuePriorities = &priority;
  qci[1] = qci[0];
  qci[1].queueFamilyIndex = d->copy_family;

  // Enable only what the device has; kernels needing a missing feature are refused by caps.
  auto f11 = vk_info<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  f11.storageBuffer16BitAccess = d->caps.storage_16bit;
  auto f12 = vk_info<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &f11);
  f12.timelineSemaphore = VK_TRUE;
  f12.storageBuffer8BitAccess = d->caps.storage_8bit;
  f12.shaderFloat16 = d->caps.float16_arith;
  f12.shaderInt8 = d->caps.int8_arith;
  f12.hostQueryReset = d->caps.host_query_reset;
  auto f = vk_info<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12);
  f.features.shaderFloat64 = d->caps.float64;
  f.features.shaderInt64 = VK_FALSE;
  const char* dev_ext[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  auto dci = vk_info<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f);
  dci.queueCreateInfoCount = d->caps.has_transfer_queue ? 2 : 1;
  dci.pQueueCreateInfos = qci;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = dev_ext;
  WT_TRY(vk_check(vkCreateDevice(d->physical, &dci, nullptr, &d->device), "vkCreateDevice"));
  vkGetDeviceQueue(d->device, d->compute_family, 0, &d->compute_queue);
  vkGetDeviceQueue(d->device, d->copy_family, 0, &d->copy_queue);
  d->cmd_push_descriptor_set =
      reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(vkGetDeviceProcAddr(d->device, "vkCmdPushDescriptorSetKHR"));
  if (!d->cmd_push_descriptor_set) return error(WT_ERR_UNSUPPORTED, "vulkan: vkCmdPushDescriptorSetKHR is missing");
  watch_process_exit();  // after the driver registered its teardown (process_exit.h)
  return Status::ok();
}

}  // namespace wt::vk
