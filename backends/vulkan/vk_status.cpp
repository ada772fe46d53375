#include "vk_status.h"

#include <string>

namespace wt::vk {

const char* result_name(VkResult r) {
  switch (r) {
#define WT_VK_RESULT(x) \
  case x:               \
    return #x;
    WT_VK_RESULT(VK_SUCCESS)
    WT_VK_RESULT(VK_NOT_READY)
    WT_VK_RESULT(VK_TIMEOUT)
    WT_VK_RESULT(VK_EVENT_SET)
    WT_VK_RESULT(VK_EVENT_RESET)
    WT_VK_RESULT(VK_INCOMPLETE)
    WT_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    WT_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    WT_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    WT_VK_RESULT(VK_ERROR_DEVICE_LOST)
    WT_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    WT_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    WT_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    WT_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    WT_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    WT_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    WT_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    WT_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    WT_VK_RESULT(VK_ERROR_UNKNOWN)
    WT_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    WT_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    WT_VK_RESULT(VK_ERROR_FRAGMENTATION)
    WT_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
#undef WT_VK_RESULT
    default:
      return "VkResult (unknown value)";
  }
}

Status vk_check(VkResult r, const char* call) {
  if (r >= 0) return Status::ok();  // VK_SUCCESS, VK_TIMEOUT, VK_INCOMPLETE...: not errors
  const std::string what = std::string("vulkan: ") + call + ": " + result_name(r);
  switch (r) {
    case VK_ERROR_DEVICE_LOST:
      return error(WT_ERR_BACKEND, what + " (device lost: the device must be recreated)");
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
      return error(WT_ERR_OUT_OF_MEMORY, what);
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT:
      return error(WT_ERR_UNSUPPORTED, what);
    default:
      return error(WT_ERR_BACKEND, what);
  }
}

}  // namespace wt::vk
