#include "step_profile.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace wt::vk {
namespace {

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

}  // namespace

StepProfile::StepProfile() {
  const char* v = std::getenv("WT_VK_HOST_PROFILE");
  on_ = v && std::strcmp(v, "1") == 0;
}

void StepProfile::step_start(uint64_t submitted) {
  if (!on_) return;
  in_step_ = true;
  waiting_ = false;
  submitted0_ = submitted;
  cpu0_ns_ = thread_cpu_ns();
  t0_ = Clock::now();
}

void StepProfile::step_issued() {
  if (!in_step_) return;
  issue_ns_ += static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count());
  issue_cpu_ns_ += thread_cpu_ns() - cpu0_ns_;
  in_step_ = false;
  waiting_ = true;
}

void StepProfile::step_waited(std::chrono::steady_clock::duration d, uint64_t submitted) {
  if (!waiting_) return;
  wait_ns_ += static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  submits_ += submitted - submitted0_;
  ++steps_;
  waiting_ = false;
}

void StepProfile::print() const {
  if (!on_ || steps_ == 0) return;
  const double n = static_cast<double>(steps_);
  std::fprintf(stderr,
               "vulkan profile: %llu decode steps: host per step %.1f us issuing (%.1f us of the thread's CPU; "
               "%.1f launches, %.1f submits), %.1f us waiting in the step's synchronize\n",
               static_cast<unsigned long long>(steps_), issue_ns_ / n / 1e3, issue_cpu_ns_ / n / 1e3,
               static_cast<double>(ops_) / n, static_cast<double>(submits_) / n, wait_ns_ / n / 1e3);
}

}  // namespace wt::vk
