// One in-order stream on a queue: a ring of command buffers, a timeline semaphore whose
// value counts submitted batches. Work is recorded into the open command buffer and
// submitted by flush(); every submit signals the next timeline value, so an event is just
// (stream, value) and waiting on it is a semaphore wait on the other queue's next submit.
//
// Timing, where the queue family has timestamps and the device resets queries from the
// host: every batch writes a timestamp when it starts (after its semaphore waits) and one
// when it ends. A slot's pair is read back before the slot is reused, or by collect_times().
// busy_ns() sums end - start; waited_ns() sums, over batches that waited on another stream,
// the time from this queue's previous batch end to the end of the batch waited for (capped
// by this batch's start): an upper bound on the stall, since a host that submitted late
// looks the same. It compares timestamps of two queues, which assumes one device clock
// (what drivers do; the spec promises it only with calibrated timestamps).
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

  // timestamp_bits: the family's valid timestamp bits (0: the stream is not timed).
  Status init(Device* device, VkQueue queue, uint32_t family, uint32_t timestamp_bits);

  // The open command buffer, begun if none is open; waits for the ring slot's previous
  // use to finish first (never allocates).
  Status begin(VkCommandBuffer* out);
  bool is_open() const { return open_; }
  // Submits the open command buffer (if any), signalling a new timeline value, after
  // the waits queued by add_wait. *out_value (optional) = the value that marks this point.
  Status flush(uint64_t* out_value = nullptr);
  // The next submit of this stream waits for `value` on another stream's semaphore.
  Status add_wait(VkStream& other, uint64_t value);
  // Blocks the host until the stream reached `value`.
  Status wait(uint64_t value);
  // flush + wait for everything submitted.
  Status synchronize();

  // Counts an op recorded into the open command buffer; at kMaxBatchOps the batch is
  // submitted. The driver keeps each recorded command until its buffer is reset (lavapipe:
  // on the heap, ~1 KiB per dispatch), so an unbounded batch - a whole prefill - would
  // hold driver memory that grows with the prompt; capped, a stream holds at most
  // kRing * kMaxBatchOps ops' worth. Larger batches gain nothing on a GPU: 64 dispatches
  // outlast a submit many times over.
  Status recorded();
  static constexpr int kRing = 8;
  static constexpr uint32_t kMaxBatchOps = 64;

  VkSemaphore semaphore() const { return semaphore_; }
  uint64_t submitted() const { return submitted_; }

  bool timed() const { return pool_ts_ != VK_NULL_HANDLE; }
  // Reads the timestamps of the batches completed since the last read.
  Status collect_times();
  double busy_ns() const { return busy_ns_; }
  double waited_ns() const { return waited_ns_; }

 private:
  static constexpr int kMaxWaits = 4;
  static constexpr int kHistory = 256;  // end timestamps kept for the other stream's waits

  // Reads batches collected_ + 1 .. value (all complete).
  Status collect_upto(uint64_t value);
  // The end timestamp of completed batch `value`; false if it left the history or was not timed.
  bool end_ticks(uint64_t value, uint64_t* out);

  Device* d_ = nullptr;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_[kRing] = {};
  uint64_t slot_value_[kRing] = {};  // the timeline value each slot's last submit signals
  int slot_ = 0;
  bool open_ = false;
  uint32_t n_ops_ = 0;  // recorded into the open command buffer
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  uint64_t submitted_ = 0;
  bool waited_ = false;  // a wait returned (process_exit.h: the exit handler is registered again)
  VkSemaphore wait_sem_[kMaxWaits] = {};
  uint64_t wait_value_[kMaxWaits] = {};
  VkStream* wait_stream_[kMaxWaits] = {};
  int n_waits_ = 0;

  VkQueryPool pool_ts_ = VK_NULL_HANDLE;  // a start and an end query per ring slot
  uint64_t ts_mask_ = 0;
  struct SlotWait {
    VkStream* stream = nullptr;
    uint64_t value = 0;
  };
  SlotWait slot_wait_[kRing][kMaxWaits] = {};  // the waits each slot's batch was submitted with
  int slot_n_waits_[kRing] = {};
  uint64_t collected_ = 0;                     // batches whose timestamps were read
  uint64_t end_[kHistory] = {};                // end tick of batch v at v % kHistory
  bool end_valid_[kHistory] = {};
  double busy_ns_ = 0;
  double waited_ns_ = 0;
};

}  // namespace wt::vk
