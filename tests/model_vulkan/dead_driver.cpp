// The wrappers of dead_driver.h: every Vulkan call backends/vulkan makes while it waits,
// frees or destroys (stream.cpp, memory.cpp, pipeline.cpp, device.cpp). A call added there
// later needs a wrapper here to be checked.
#include "dead_driver.h"

#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace wt::test {
namespace {

std::atomic<bool> g_dead{false};
std::atomic<uint64_t> g_submits{0};
std::atomic<uint64_t> g_memory_frees{0};

// The loader's function `name`, unless the driver is dead: then the process ends here.
template <class Fn>
Fn driver(const char* name) {
  if (g_dead.load()) {
    std::fprintf(stderr, "FAIL: %s called after the driver's teardown (a crash on NVIDIA's driver)\n", name);
    std::fflush(stderr);
    std::_Exit(1);
  }
  void* fn = dlsym(RTLD_NEXT, name);
  if (!fn) {
    std::fprintf(stderr, "FAIL: the Vulkan loader has no %s\n", name);
    std::_Exit(1);
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

void kill_driver() { g_dead.store(true); }
uint64_t driver_submits() { return g_submits.load(); }
uint64_t driver_memory_frees() { return g_memory_frees.load(); }

}  // namespace wt::test

using wt::test::driver;

extern "C" {

VKAPI_ATTR VkResult VKAPI_CALL vkQueueSubmit(VkQueue q, uint32_t n, const VkSubmitInfo* s, VkFence f) {
  ++wt::test::g_submits;
  return driver<PFN_vkQueueSubmit>("vkQueueSubmit")(q, n, s, f);
}
VKAPI_ATTR VkResult VKAPI_CALL vkWaitSemaphores(VkDevice d, const VkSemaphoreWaitInfo* w, uint64_t timeout) {
  return driver<PFN_vkWaitSemaphores>("vkWaitSemaphores")(d, w, timeout);
}
VKAPI_ATTR VkResult VKAPI_CALL vkGetSemaphoreCounterValue(VkDevice d, VkSemaphore s, uint64_t* v) {
  return driver<PFN_vkGetSemaphoreCounterValue>("vkGetSemaphoreCounterValue")(d, s, v);
}
VKAPI_ATTR VkResult VKAPI_CALL vkBeginCommandBuffer(VkCommandBuffer c, const VkCommandBufferBeginInfo* b) {
  return driver<PFN_vkBeginCommandBuffer>("vkBeginCommandBuffer")(c, b);
}
VKAPI_ATTR VkResult VKAPI_CALL vkEndCommandBuffer(VkCommandBuffer c) {
  return driver<PFN_vkEndCommandBuffer>("vkEndCommandBuffer")(c);
}
VKAPI_ATTR VkResult VKAPI_CALL vkResetCommandBuffer(VkCommandBuffer c, VkCommandBufferResetFlags f) {
  return driver<PFN_vkResetCommandBuffer>("vkResetCommandBuffer")(c, f);
}
VKAPI_ATTR void VKAPI_CALL vkResetQueryPool(VkDevice d, VkQueryPool p, uint32_t first, uint32_t n) {
  driver<PFN_vkResetQueryPool>("vkResetQueryPool")(d, p, first, n);
}
VKAPI_ATTR VkResult VKAPI_CALL vkGetQueryPoolResults(VkDevice d, VkQueryPool p, uint32_t first, uint32_t n,
                                                     size_t bytes, void* data, VkDeviceSize stride,
                                                     VkQueryResultFlags f) {
  return driver<PFN_vkGetQueryPoolResults>("vkGetQueryPoolResults")(d, p, first, n, bytes, data, stride, f);
}
VKAPI_ATTR VkResult VKAPI_CALL vkDeviceWaitIdle(VkDevice d) {
  return driver<PFN_vkDeviceWaitIdle>("vkDeviceWaitIdle")(d);
}
VKAPI_ATTR void VKAPI_CALL vkFreeMemory(VkDevice d, VkDeviceMemory m, const VkAllocationCallbacks* a) {
  ++wt::test::g_memory_frees;
  driver<PFN_vkFreeMemory>("vkFreeMemory")(d, m, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyBuffer(VkDevice d, VkBuffer b, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyBuffer>("vkDestroyBuffer")(d, b, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroySemaphore(VkDevice d, VkSemaphore s, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroySemaphore>("vkDestroySemaphore")(d, s, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyCommandPool(VkDevice d, VkCommandPool p, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyCommandPool>("vkDestroyCommandPool")(d, p, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyQueryPool(VkDevice d, VkQueryPool p, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyQueryPool>("vkDestroyQueryPool")(d, p, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyPipeline(VkDevice d, VkPipeline p, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyPipeline>("vkDestroyPipeline")(d, p, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyShaderModule(VkDevice d, VkShaderModule m, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyShaderModule>("vkDestroyShaderModule")(d, m, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyPipelineLayout(VkDevice d, VkPipelineLayout l, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyPipelineLayout>("vkDestroyPipelineLayout")(d, l, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyDescriptorSetLayout(VkDevice d, VkDescriptorSetLayout l,
                                                        const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyDescriptorSetLayout>("vkDestroyDescriptorSetLayout")(d, l, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyDevice(VkDevice d, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyDevice>("vkDestroyDevice")(d, a);
}
VKAPI_ATTR void VKAPI_CALL vkDestroyInstance(VkInstance i, const VkAllocationCallbacks* a) {
  driver<PFN_vkDestroyInstance>("vkDestroyInstance")(i, a);
}

}  // extern "C"
