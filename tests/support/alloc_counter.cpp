// Two ways to see allocations: under AddressSanitizer, which owns operator new and malloc,
// its malloc hook (every operator new goes through it); otherwise this binary replaces the
// global operator new/delete, which then also counts live allocations (leaks) and asks the
// fault-injection hook (runtime/fault_injection.h) whether to fail.
#include "alloc_counter.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "base/fault_injection.h"

#if defined(__SANITIZE_ADDRESS__)
#define WT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WT_ASAN 1
#endif
#endif

#if defined(WT_ASAN)
// From the sanitizer runtime (sanitizer/allocator_interface.h, not always installed).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                          void (*free_hook)(const volatile void*));
#endif

namespace {
std::atomic<bool> g_armed{false};
std::atomic<uint64_t> g_count{0};
std::atomic<int64_t> g_live{0};

void count() {
  if (g_armed.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
}

#if defined(WT_ASAN)
void malloc_hook(const volatile void*, size_t) { count(); }
void free_hook(const volatile void*) {}
const bool g_hooked = __sanitizer_install_malloc_and_free_hooks(malloc_hook, free_hook) != 0;
#else
std::atomic<bool> g_nothrow_failed{false};

// nullptr: the injected failure, or no memory.
void* try_alloc(std::size_t n, std::size_t align, bool nothrow = false) noexcept {
  count();
  if (wt::fault::should_fail(wt::fault::Site::alloc)) {
    if (nothrow) g_nothrow_failed.store(true);
    return nullptr;
  }
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                               : std::malloc(n);
  if (p) g_live.fetch_add(1, std::memory_order_relaxed);
  return p;
}
void* counted_alloc(std::size_t n, std::size_t align) {
  void* p = try_alloc(n, align);
  if (!p) throw std::bad_alloc();
  return p;
}
void counted_free(void* p) noexcept {
  if (!p) return;
  g_live.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}
#endif
}  // namespace

namespace wt::test {
void alloc_counter_arm(bool on) {
  if (on) g_count.store(0);
  g_armed.store(on);
}
uint64_t alloc_counter_count() { return g_count.load(); }
bool alloc_counter_sees_operator_new() {
#if defined(WT_ASAN)
  return false;
#else
  return true;
#endif
}
int64_t alloc_counter_live() { return g_live.load(); }
bool alloc_counter_take_nothrow_failure() {
#if defined(WT_ASAN)
  return false;
#else
  return g_nothrow_failed.exchange(false);
#endif
}
}  // namespace wt::test

#if !defined(WT_ASAN)
void* operator new(std::size_t n) { return counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return try_alloc(n, 0, true); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return try_alloc(n, 0, true); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_alloc(n, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_alloc(n, static_cast<std::size_t>(a), true);
}
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
#endif
