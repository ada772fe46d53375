// The one converter from VkResult to Status. Every Vulkan call that can fail goes through
// vk_check with the call's name, so a failure reads "vulkan: vkQueueSubmit: device lost".
#pragma once

#include <vulkan/vulkan.h>

#include "base/status.h"

namespace wt::vk {

// Name of a VkResult ("VK_ERROR_DEVICE_LOST"), or "VkResult <n>" for a value we do not know.
const char* result_name(VkResult r);

// OK for VK_SUCCESS (and the non-error positive codes); otherwise a Status naming the call.
// Device lost and out-of-memory get their own codes so callers can tell them apart.
Status vk_check(VkResult r, const char* call);

// A zeroed Vulkan info struct with its sType (and pNext) set: `T x{sType}` would leave the
// other fields value-initialized too, but -Wextra warns about every one of them.
template <typename T>
T vk_info(VkStructureType type, void* next = nullptr) {
  T t{};
  t.sType = type;
  t.pNext = next;
  return t;
}

}  // namespace wt::vk
