#include "stream.h"

#include "vk_status.h"

namespace wt::vk {

VkStream::~VkStream() {
  if (!d_ || !d_->device) return;
  if (semaphore_) {
    (void)wait(submitted_);  // nothing may still run on what we destroy
    vkDestroySemaphore(d_->device, semaphore_, nullptr);
  }
  if (pool_) vkDestroyCommandPool(d_->device, pool_, nullptr);
}

Status VkStream::init(Device* device, VkQueue queue, uint32_t family) {
  d_ = device;
  queue_ = queue;
  auto pci = vk_info<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = family;
  WT_TRY(vk_check(vkCreateCommandPool(d_->device, &pci, nullptr, &pool_), "vkCreateCommandPool"));
  auto cai = vk_info<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  cai.commandPool = pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = kRing;
  WT_TRY(vk_check(vkAllocateCommandBuffers(d_->device, &cai, cmd_), "vkAllocateCommandBuffers"));
  auto tci = vk_info<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  tci.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  tci.initialValue = 0;
  auto sci = vk_info<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &tci);
  return vk_check(vkCreateSemaphore(d_->device, &sci, nullptr, &semaphore_), "vkCreateSemaphore");
}

Status VkStream::begin(VkCommandBuffer* out) {
  if (!open_) {
    WT_TRY(wait(slot_value_[slot_]));  // the slot's previous batch must be done before reuse
    WT_TRY(vk_check(vkResetCommandBuffer(cmd_[slot_], 0), "vkResetCommandBuffer"));
    auto bi = vk_info<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    WT_TRY(vk_check(vkBeginCommandBuffer(cmd_[slot_], &bi), "vkBeginCommandBuffer"));
    open_ = true;
    n_recorded = 0;
  }
  *out = cmd_[slot_];
  return Status::ok();
}

Status VkStream::add_wait(VkSemaphore semaphore, uint64_t value) {
  for (int i = 0; i < n_waits_; ++i) {
    if (wait_sem_[i] == semaphore) {
      if (value > wait_value_[i]) wait_value_[i] = value;
      return Status::ok();
    }
  }
  if (n_waits_ == kMaxWaits) WT_TRY(flush());  // make room: the queued waits go out now
  wait_sem_[n_waits_] = semaphore;
  wait_value_[n_waits_] = value;
  ++n_waits_;
  return Status::ok();
}

Status VkStream::flush(uint64_t* out_value) {
  if (!open_ && n_waits_ == 0) {
    if (out_value) *out_value = submitted_;
    return Status::ok();
  }
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  if (!open_) WT_TRY(begin(&cmd));  // waits alone still need a submit to order later work
  cmd = cmd_[slot_];
  // Make the batch's writes visible to the host (results read through mapped pointers)
  // and to the next batch, whichever queue it runs on.
  auto mb = vk_info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                       nullptr);
  open_ = false;
  WT_TRY(vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer"));
  const uint64_t value = submitted_ + 1;
  VkPipelineStageFlags stages[kMaxWaits];
  for (int i = 0; i < n_waits_; ++i) stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  auto tsi = vk_info<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
  tsi.waitSemaphoreValueCount = static_cast<uint32_t>(n_waits_);
  tsi.pWaitSemaphoreValues = wait_value_;
  tsi.signalSemaphoreValueCount = 1;
  tsi.pSignalSemaphoreValues = &value;
  auto si = vk_info<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO, &tsi);
  si.waitSemaphoreCount = static_cast<uint32_t>(n_waits_);
  si.pWaitSemaphores = wait_sem_;
  si.pWaitDstStageMask = stages;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &semaphore_;
  WT_TRY(vk_check(vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit"));
  n_waits_ = 0;
  submitted_ = value;
  slot_value_[slot_] = value;
  slot_ = (slot_ + 1) % kRing;
  if (out_value) *out_value = value;
  return Status::ok();
}

Status VkStream::wait(uint64_t value) {
  if (value == 0) return Status::ok();
  auto wi = vk_info<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
  wi.semaphoreCount = 1;
  wi.pSemaphores = &semaphore_;
  wi.pValues = &value;
  return vk_check(vkWaitSemaphores(d_->device, &wi, UINT64_MAX), "vkWaitSemaphores");
}

Status VkStream::synchronize() {
  WT_TRY(flush());
  return wait(submitted_);
}

}  // namespace wt::vk
