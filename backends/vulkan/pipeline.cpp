#include "pipeline.h"

#include <cstring>
#include <iterator>
#include <string>

#include "kernels/vulkan/spirv_blobs.h"
#include "process_exit.h"
#include "vk_status.h"

namespace wt::vk {

const char* kernel_name(Kernel k) {
  static const char* const names[] = {
#define WT_VK_NAME(name) #name,
      WT_VK_KERNELS(WT_VK_NAME)
#undef WT_VK_NAME
  };
  return k < Kernel::count ? names[static_cast<size_t>(k)] : "unknown";
}

PipelineCache::~PipelineCache() {
  if (!d_ || !d_->device || process_exiting()) return;  // at exit the driver may be gone (process_exit.h)
  for (auto& row : pipelines_)
    for (auto& e : row)
      if (e.pipeline) vkDestroyPipeline(d_->device, e.pipeline, nullptr);
  for (VkShaderModule m : modules_)
    if (m) vkDestroyShaderModule(d_->device, m, nullptr);
  for (int i = 0; i < 2; ++i) {
    if (layout_[i]) vkDestroyPipelineLayout(d_->device, layout_[i], nullptr);
    if (set_layout_[i]) vkDestroyDescriptorSetLayout(d_->device, set_layout_[i], nullptr);
  }
}

Status PipelineCache::init(Device* device) {
  d_ = device;
  for (size_t k = 0; k < static_cast<size_t>(Kernel::count); ++k) {
    const char* name = kernel_name(static_cast<Kernel>(k));
    for (size_t b = 0; b < spirv::kBlobCount; ++b) {
      if (std::strcmp(spirv::kBlobs[b].name, name) == 0) {
        code_[k] = reinterpret_cast<const uint32_t*>(spirv::kBlobs[b].data);
        code_bytes_[k] = spirv::kBlobs[b].size_bytes;
      }
    }
    if (!code_[k]) return error(WT_ERR_INTERNAL, std::string("vulkan: no SPIR-V embedded for kernel ") + name);
  }
  for (int li = 0; li < 2; ++li) {
    const uint32_t texels = li == 0 ? 0u : texel_bindings(Kernel::matmul_lt_q8_0);
    VkDescriptorSetLayoutBinding bindings[kBindings];
    for (uint32_t i = 0; i < kBindings; ++i) {
      bindings[i] = VkDescriptorSetLayoutBinding{};
      bindings[i].binding = i;
      bindings[i].descriptorType =
          (texels >> i) & 1u ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    auto dci = vk_info<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    dci.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    dci.bindingCount = kBindings;
    dci.pBindings = bindings;
    WT_TRY(vk_check(vkCreateDescriptorSetLayout(d_->device, &dci, nullptr, &set_layout_[li]),
                    "vkCreateDescriptorSetLayout"));
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push)};
    auto lci = vk_info<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    lci.setLayoutCount = 1;
    lci.pSetLayouts = &set_layout_[li];
    lci.pushConstantRangeCount = 1;
    lci.pPushConstantRanges = &range;
    WT_TRY(vk_check(vkCreatePipelineLayout(d_->device, &lci, nullptr, &layout_[li]), "vkCreatePipelineLayout"));
  }
  return Status::ok();
}

Status PipelineCache::get(Kernel k, const Spec& spec, VkPipeline* out) {
  const size_t ki = static_cast<size_t>(k);
  Entry* free_slot = nullptr;
  for (Entry& e : pipelines_[ki]) {
    if (e.pipeline && e.spec == spec) {
      *out = e.pipeline;
      return Status::ok();
    }
    if (!e.pipeline && !free_slot) free_slot = &e;
  }
  if (!free_slot) return error(WT_ERR_INTERNAL, std::string("vulkan: too many specializations of ") + kernel_name(k));
  if (!modules_[ki]) {
    auto sci = vk_info<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    sci.codeSize = code_bytes_[ki];
    sci.pCode = code_[ki];
    WT_TRY(vk_check(vkCreateShaderModule(d_->device, &sci, nullptr, &modules_[ki]), "vkCreateShaderModule"));
  }
  const uint32_t values[] = {spec.wg_size, spec.w_align, spec.tile_rows, spec.head_dim, spec.group, spec.fuse};
  constexpr uint32_t kN = std::size(values);
  VkSpecializationMapEntry entries[kN];
  for (uint32_t i = 0; i < kN; ++i) entries[i] = {i, i * static_cast<uint32_t>(sizeof(uint32_t)), sizeof(uint32_t)};
  VkSpecializationInfo info{kN, entries, sizeof values, values};
  auto pci = vk_info<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  pci.stage = vk_info<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = modules_[ki];
  pci.stage.pName = "main";
  pci.stage.pSpecializationInfo = &info;
  pci.layout = layout(k);
  WT_TRY(vk_check(vkCreateComputePipelines(d_->device, VK_NULL_HANDLE, 1, &pci, nullptr, &free_slot->pipeline),
                  "vkCreateComputePipelines"));
  free_slot->spec = spec;
  *out = free_slot->pipeline;
  return Status::ok();
}

}  // namespace wt::vk
