#include "stream.h"

#include "process_exit.h"
#include "vk_status.h"

namespace wt::vk {

VkStream::~VkStream() {
  if (!d_ || !d_->device || process_exiting()) return;  // at exit the driver may be gone (process_exit.h)
  if (semaphore_) {
    (void)wait(submitted_);  // nothing may still run on what we destroy
    vkDestroySemaphore(d_->device, semaphore_, nullptr);
  }
  if (pool_) vkDestroyCommandPool(d_->device, pool_, nullptr);
  if (pool_ts_) vkDestroyQueryPool(d_->device, pool_ts_, nullptr);
}

Status VkStream::init(Device* device, VkQueue queue, uint32_t family, uint32_t timestamp_bits) {
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
  WT_TRY(vk_check(vkCreateSemaphore(d_->device, &sci, nullptr, &semaphore_), "vkCreateSemaphore"));
  if (timestamp_bits == 0 || !d_->caps.host_query_reset || d_->caps.timestamp_period_ns <= 0) return Status::ok();
  auto qci = vk_info<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qci.queryCount = 2 * kRing;
  WT_TRY(vk_check(vkCreateQueryPool(d_->device, &qci, nullptr, &pool_ts_), "vkCreateQueryPool"));
  vkResetQueryPool(d_->device, pool_ts_, 0, 2 * kRing);
  ts_mask_ = timestamp_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << timestamp_bits) - 1;
  return Status::ok();
}

Status VkStream::begin(VkCommandBuffer* out) {
  if (!open_) {
    WT_TRY(wait(slot_value_[slot_]));  // the slot's previous batch must be done before reuse
    if (timed()) {
      WT_TRY(collect_upto(slot_value_[slot_]));  // its timestamps, before the queries are reused
      vkResetQueryPool(d_->device, pool_ts_, 2 * slot_, 2);
    }
    WT_TRY(vk_check(vkResetCommandBuffer(cmd_[slot_], 0), "vkResetCommandBuffer"));
    auto bi = vk_info<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    WT_TRY(vk_check(vkBeginCommandBuffer(cmd_[slot_], &bi), "vkBeginCommandBuffer"));
    if (timed()) vkCmdWriteTimestamp(cmd_[slot_], VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_ts_, 2 * slot_);
    open_ = true;
    n_ops_ = 0;
  }
  *out = cmd_[slot_];
  return Status::ok();
}

Status VkStream::recorded() {
  return ++n_ops_ < kMaxBatchOps ? Status::ok() : flush();
}

Status VkStream::add_wait(VkStream& other, uint64_t value) {
  for (int i = 0; i < n_waits_; ++i) {
    if (wait_stream_[i] == &other) {
      if (value > wait_value_[i]) wait_value_[i] = value;
      return Status::ok();
    }
  }
  if (n_waits_ == kMaxWaits) WT_TRY(flush());  // make room: the queued waits go out now
  wait_stream_[n_waits_] = &other;
  wait_sem_[n_waits_] = other.semaphore();
  wait_value_[n_waits_] = value;
  ++n_waits_;
  return Status::ok();
}

Status VkStream::flush(uint64_t* out_value) {
  if ((!open_ && n_waits_ == 0) || process_exiting()) {  // nothing to submit, or no driver to submit to
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
  if (timed()) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_ts_, 2 * slot_ + 1);
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
  if (value == 1) watch_process_exit();  // a driver may register its teardown at the first submit
  for (int i = 0; i < n_waits_; ++i) slot_wait_[slot_][i] = SlotWait{wait_stream_[i], wait_value_[i]};
  slot_n_waits_[slot_] = n_waits_;
  n_waits_ = 0;
  submitted_ = value;
  slot_value_[slot_] = value;
  slot_ = (slot_ + 1) % kRing;
  if (out_value) *out_value = value;
  return Status::ok();
}

Status VkStream::wait(uint64_t value) {
  if (value == 0 || process_exiting()) return Status::ok();  // at exit the work dies with the process
  auto wi = vk_info<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
  wi.semaphoreCount = 1;
  wi.pSemaphores = &semaphore_;
  wi.pValues = &value;
  WT_TRY(vk_check(vkWaitSemaphores(d_->device, &wi, UINT64_MAX), "vkWaitSemaphores"));
  if (!waited_) watch_process_exit();  // a driver may register its teardown at the first wait
  waited_ = true;
  return Status::ok();
}

Status VkStream::collect_times() {
  if (!timed()) return Status::ok();
  uint64_t done = 0;
  WT_TRY(vk_check(vkGetSemaphoreCounterValue(d_->device, semaphore_, &done), "vkGetSemaphoreCounterValue"));
  return collect_upto(done < submitted_ ? done : submitted_);
}

Status VkStream::collect_upto(uint64_t value) {
  const double period = d_->caps.timestamp_period_ns;
  while (collected_ < value) {
    const uint64_t v = ++collected_;
    const int slot = static_cast<int>((v - 1) % kRing);  // batch v was the (v-1)-th submit
    end_valid_[v % kHistory] = false;
    uint64_t ts[2];
    const VkResult r = vkGetQueryPoolResults(d_->device, pool_ts_, static_cast<uint32_t>(2 * slot), 2, sizeof ts, ts,
                                             sizeof ts[0], VK_QUERY_RESULT_64_BIT);
    if (r == VK_NOT_READY) continue;  // not for a completed batch; if a driver says so, it is not counted
    WT_TRY(vk_check(r, "vkGetQueryPoolResults"));
    const uint64_t start = ts[0] & ts_mask_, end = ts[1] & ts_mask_;
    if (end < start) continue;  // the counter wrapped
    busy_ns_ += static_cast<double>(end - start) * period;
    uint64_t prev = 0, until = 0;
    for (int i = 0; i < slot_n_waits_[slot]; ++i) {
      uint64_t e = 0;
      if (slot_wait_[slot][i].stream->end_ticks(slot_wait_[slot][i].value, &e) && e > until) until = e;
    }
    if (until > start) until = start;
    if (until > 0 && end_ticks(v - 1, &prev) && until > prev) waited_ns_ += static_cast<double>(until - prev) * period;
    end_[v % kHistory] = end;
    end_valid_[v % kHistory] = true;
  }
  return Status::ok();
}

bool VkStream::end_ticks(uint64_t value, uint64_t* out) {
  if (!timed() || value == 0) return false;
  if (value > collected_ && !collect_upto(value)) return false;  // complete: a batch that waited on it ran
  if (collected_ - value >= kHistory || !end_valid_[value % kHistory]) return false;
  *out = end_[value % kHistory];
  return true;
}

Status VkStream::synchronize() {
  WT_TRY(flush());
  return wait(submitted_);
}

}  // namespace wt::vk
