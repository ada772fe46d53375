// create_vulkan_backend in builds without Vulkan: always declared, so callers need no #if.
#include "backend.h"

#if !defined(WHITTLE_VULKAN)
namespace wt {

Status create_vulkan_backend(const BackendOptions&, std::unique_ptr<Backend>*) {
  return error(WT_ERR_UNSUPPORTED, "vulkan: this build has no Vulkan backend (configure with -DWHITTLE_VULKAN=ON)");
}

}  // namespace wt
#endif
