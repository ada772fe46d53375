// Fault injection for the robustness tests (tests/unit/test_alloc_failure.cpp): the k-th
// allocation, or the k-th backend launch, from the moment a test arms it fails as if the
// memory or the device were not there, so a test can walk every failure path of a call one
// after another. Internal: not in whittle.h. Disarmed (the only state outside those tests)
// a site pays one relaxed atomic load.
//
// Who asks: every allocation site the library owns — each backend's alloc (CPU, Vulkan,
// CUDA), through which the context arena, the KV pager's pools and a device model's
// weights are allocated — and, in the test binary, the replaced global operator new
// (tests/support/alloc_counter.cpp), which covers every std::vector, std::string and
// make_unique of the library. The CPU backend's launch asks for Site::launch (a device
// error in the middle of a forward pass).
#pragma once

#include <cstdint>

namespace wt::fault {

enum class Site : int { alloc = 0, launch = 1 };

// Test control, one armed plan per site. arm(site, k): events are counted from 0; the k-th
// one fails (k = 0: none fails, events are only counted). sticky: the k-th and every later
// one fail (sustained memory pressure) instead of only the k-th.
void arm(Site site, uint64_t k, bool sticky = false);
// Stops counting and failing.
void disarm(Site site);
// Events since arm().
uint64_t seen(Site site);
// Whether an armed failure has happened since arm().
bool fired(Site site);

// For the sites: true means this event must fail (and is counted as seen either way).
bool should_fail(Site site);

// Open while the library calls a device driver to create its instance, device, queues,
// pipelines or libraries: allocations meanwhile (on any thread) are neither counted nor
// failed. A driver is C around C++ (Mesa's LLVM, the CUDA runtime): an exception thrown by
// an operator new inside it unwinds through C frames holding the driver's locks, and the
// next driver call hangs. What a driver allocates is the driver's to fail.
class ForeignCode {
 public:
  ForeignCode();
  ~ForeignCode();
  ForeignCode(const ForeignCode&) = delete;
  ForeignCode& operator=(const ForeignCode&) = delete;
};

// Live allocations of the library's own allocation sites (operator new is counted by the
// test binary): each site notes a successful allocation and its release, so a test sees a
// leak as a count above its baseline. Counted armed or not.
void note_alloc();
void note_free();
int64_t live_allocs();

}  // namespace wt::fault
