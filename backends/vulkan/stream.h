// One in-order stream on a queue: a ring of command buffers, a timeline semaphore whose
// value counts submitted batches. Work is recorded into the open command buffer and
// submitted by flush(); every submit signals the next timeline value, so an event is just
// (stream, value) and waiting on it is a semaphore wait on the other queue's next submit.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

#include "device.h"

namespace wt::vk {

class VkStream {
 public:
  VkStream() = default;
  VkStream(const VkStream&) = delete;
  VkStream& operator=(const VkStream&) = delete;
  ~VkStream();

  Status init(Device* device, VkQueue queue, uint32_t family);

  // The open command buffer, begun if none is open; waits for the ring slot's previous
  // use to finish first (never allocates).
  Status begin(VkCommandBuffer* out);
  bool is_open() const { return open_; }
  // Submits the open command buffer (if any), signalling a new timeline value, after
  // the waits queued by add_wait. *out_value (optional) = the value that marks this point.
  Status flush(uint64_t* out_value = nullptr);
  // The next submit of this stream waits for `value` on another stream's semaphore.
  Status add_wait(VkSemaphore semaphore, uint64_t value);
  // Blocks the host until the stream reached `value`.
  Status wait(uint64_t value);
  // flush + wait for everything submitted.
  Status synchronize();

  VkSemaphore semaphore() const { return semaphore_; }
  uint64_t submitted() const { return submitted_; }
  // Dispatches recorded into the open command buffer since it was begun (the batch size).
  uint32_t n_recorded = 0;

 private:
  static constexpr int kRing = 8;
  static constexpr int kMaxWaits = 4;

  Device* d_ = nullptr;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_[kRing] = {};
  uint64_t slot_value_[kRing] = {};  // the timeline value each slot's last submit signals
  int slot_ = 0;
  bool open_ = false;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  uint64_t submitted_ = 0;
  VkSemaphore wait_sem_[kMaxWaits] = {};
  uint64_t wait_value_[kMaxWaits] = {};
  int n_waits_ = 0;
};

}  // namespace wt::vk
