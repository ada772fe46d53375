#include "process_exit.h"

#include <atomic>
#include <cstdlib>

namespace wt::vk {
namespace {

std::atomic<bool> g_exiting{false};

}  // namespace

void watch_process_exit() {
  // A failed registration (no memory for the exit list) leaves teardown as it was.
  (void)std::atexit(&mark_process_exiting);
}

bool process_exiting() { return g_exiting.load(std::memory_order_acquire); }

void mark_process_exiting() { g_exiting.store(true, std::memory_order_release); }

}  // namespace wt::vk
