// Where the host's time goes in decode steps on Vulkan (WT_VK_HOST_PROFILE=1), issue 28's
// question "is a token's time the GPU's or the host's?": from the engine's mark of a step's
// start (Backend::set_step_replay) to its end, the host issues the step (the engine's
// work, each launch's checks, encoding and recording, and the submits every
// VkStream::kMaxBatchOps launches); then it waits in the step's synchronize for what the
// GPU has left. A GPU that outruns the host waits little; a host that outruns the GPU
// waits for the rest. Issuing is also given in this thread's CPU time: on a CPU device
// (lavapipe) the driver's threads run the batches submitted so far on the same cores, and
// issuing's wall time counts their share too. Printed once, when the backend goes; no clock is read while it is off.
#pragma once

#include <chrono>
#include <cstdint>

namespace wt::vk {

class StepProfile {
 public:
  StepProfile();  // on when WT_VK_HOST_PROFILE is "1"
  bool on() const { return on_; }
  // The engine's marks: a decode step starts (submitted: the compute stream's batches so
  // far), its launches end.
  void step_start(uint64_t submitted);
  void step_issued();
  bool waiting() const { return waiting_; }
  // The step's synchronize took `d`, after which the stream had submitted `submitted` batches.
  void step_waited(std::chrono::steady_clock::duration d, uint64_t submitted);
  // A launch inside a step.
  void launched() { ops_ += in_step_ ? 1 : 0; }
  void print() const;  // one line to stderr; nothing when off or without steps

 private:
  using Clock = std::chrono::steady_clock;
  bool on_ = false;
  bool in_step_ = false;
  bool waiting_ = false;
  Clock::time_point t0_{};
  double cpu0_ns_ = 0;
  uint64_t submitted0_ = 0;
  uint64_t steps_ = 0, ops_ = 0, submits_ = 0;
  double issue_ns_ = 0, issue_cpu_ns_ = 0, wait_ns_ = 0;
};

}  // namespace wt::vk
