// The GPU kernel family of the Vulkan backend (subgroup matmul, workgroup attention, the
// decode split over the keys and its merge, with the split's workspace as the context
// plans it) at model level, on whatever device the machine has. A CPU device (lavapipe, CI)
// runs the lane kernels by default (VulkanKernels::automatic), so the other model cases
// never run what a GPU runs, and the public API has no switch for it (a knob for tests does
// not belong in whittle.h). This case builds the model through the loader's own seam
// (runtime/api/handles.h make_model) on a backend made with VulkanKernels::subgroup. On a
// GPU that family is the default, which every other case checks: this one skips, saying so.
//
// Size: 260 prompt tokens, so that full KV's decode steps attend to more than 256 keys and
// the split (backends/vulkan/decode_split.h) cuts them in two (SnapKV's pruned cache, about
// 80 keys, does not split: it checks the pruned prefill and a key subset); lavapipe prefills
// with these kernels at a few tokens per second: label slow (out of the default run, ctest
// -L slow -R forced; six minutes on the AVX2 host of 2026-11-29, where the whole CI ran past
// 90 minutes). The parity suite checks the same kernels per op on every family
// (vulkan-subgroup) in the default run; on a GPU the other model cases run them. Prompts long enough for the
// spilled matmul grid (~680 tokens) would take minutes: its own unit test covers that.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "device_cases.h"
#include "support/real_model.h"

#if !defined(WHITTLE_VULKAN)
TEST_CASE("vulkan model: the GPU kernels forced on any device give the CPU's greedy tokens past the decode split" *
          doctest::test_suite("slow")) {
  MESSAGE("SKIPPED: this build has no Vulkan backend (configure with -DWHITTLE_VULKAN=ON)");
  wt::test::g_vulkan_skipped = true;
}
#else
#include "backends/backend.h"
#include "backends/vulkan/decode_split.h"
#include "backends/vulkan/vulkan_backend.h"

using namespace wt::test::device_cases;

namespace {

constexpr size_t kPrompt = 260;
constexpr int kTokens = 6;

// The default model on a Vulkan backend of the GPU kernel family, or null after a SKIPPED
// message (no model, no device, or a device whose default is that family already).
std::unique_ptr<wt_model> gpu_kernel_model() {
  wt::BackendOptions bo;
  bo.vulkan_kernels = wt::BackendOptions::VulkanKernels::subgroup;
  std::unique_ptr<wt::Backend> device = vulkan_backend_for_model(bo);
  if (!device) return nullptr;
  const auto& vk = static_cast<const wt::vk::VulkanBackend&>(*device);
  if (!vk.automatic_picks_lane()) {
    MESSAGE("SKIPPED: this device runs the GPU kernels by default: the other vulkan model cases check them");
    wt::test::g_vulkan_skipped = true;
    return nullptr;
  }
  REQUIRE_MESSAGE(!vk.lane_kernels(), "VulkanKernels::subgroup still picked the lane kernels");
  return model_on(std::move(device));
}

}  // namespace

TEST_CASE("vulkan model: the GPU kernels forced on any device give the CPU's greedy tokens past the decode split" *
          doctest::test_suite("slow")) {
  static_assert(kPrompt + 1 >= 2 * wt::vk::kDecodeMinKeys, "the decode steps must attend to enough keys to split");
  REQUIRE(wt::vk::decode_split(kPrompt + 1).n_splits >= 2);
  std::unique_ptr<wt_model> dev = gpu_kernel_model();
  if (!dev) return;
  // Full KV decodes over all 261+ keys: the split and its merge. SnapKV keeps about 80 of
  // them: its pruned prefill and an unsplit decode over a key subset.
  for (wt_prune_method m : {WT_PRUNE_FULL, WT_PRUNE_SNAPKV}) check_greedy_on(dev.get(), m, kPrompt, kTokens);
}
#endif  // WHITTLE_VULKAN
