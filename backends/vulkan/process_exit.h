// Whether the process is exiting, so that teardown never calls into a driver that exit()
// has already torn down (issue 28).
//
// Why: exit() runs what was registered with atexit / __cxa_atexit (static destructors
// included) in the reverse order of registration. A static object that owns a model or a
// context (a test's holder, a user's global) is usually constructed before the first Vulkan
// call, so its destructor is registered before the driver, which the loader brings in at
// vkCreateInstance, registers its own teardown. At exit the driver is torn down first, and
// the destructor's vkWaitSemaphores / vkFreeMemory / vkDestroy* then run on freed driver
// state: SIGSEGV with NVIDIA's driver 580 (lavapipe happens not to mind).
//
// The fix: watch_process_exit() registers a handler after the driver has registered its
// teardown, so the handler runs before it and marks the process as exiting. From then on
// the backend's frees, waits and destructors make no Vulkan call and succeed: the process
// is ending and the OS reclaims the device and its memory. Objects freed before exit(), or
// by destructors registered after the handler (statics constructed after the model load),
// are freed normally, before the flag is set.
//
// Where: after every vkCreateDevice (the loader may have unloaded the driver when the last
// instance went, and a reloaded driver registers its teardown again), and after a stream's
// first submit and first wait (a driver may register lazily). Each call adds one entry (a
// few bytes) to the C library's exit list; a handler registered twice sets the flag twice.
#pragma once

namespace wt::vk {

void watch_process_exit();

// True once the exit handler ran (or mark_process_exiting was called): make no Vulkan call.
bool process_exiting();

// What the exit handler does; tests call it to check that a free makes no Vulkan call.
void mark_process_exiting();

}  // namespace wt::vk
