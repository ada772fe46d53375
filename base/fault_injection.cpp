#include "fault_injection.h"

#include <atomic>

namespace wt::fault {

namespace {

// Plain atomics, no locks: should_fail() is called from operator new, which a mutex (or
// anything that may allocate) must not be.
struct Plan {
  std::atomic<bool> armed{false};
  std::atomic<bool> sticky{false};
  std::atomic<bool> fired{false};
  std::atomic<uint64_t> fail_at{0};
  std::atomic<uint64_t> seen{0};
};

Plan g_plans[2];
std::atomic<int64_t> g_live{0};
std::atomic<int> g_foreign{0};  // open ForeignCode scopes

Plan& plan(Site site) { return g_plans[static_cast<int>(site)]; }

}  // namespace

void arm(Site site, uint64_t k, bool sticky) {
  Plan& p = plan(site);
  p.armed.store(false);
  p.seen.store(0);
  p.fired.store(false);
  p.fail_at.store(k);
  p.sticky.store(sticky);
  p.armed.store(true);
}

void disarm(Site site) { plan(site).armed.store(false); }

uint64_t seen(Site site) { return plan(site).seen.load(); }

bool fired(Site site) { return plan(site).fired.load(); }

bool should_fail(Site site) {
  Plan& p = plan(site);
  if (!p.armed.load(std::memory_order_relaxed)) return false;
  if (site == Site::alloc && g_foreign.load() > 0) return false;
  const uint64_t n = p.seen.fetch_add(1) + 1;
  const uint64_t k = p.fail_at.load();
  if (k == 0 || n < k || (n > k && !p.sticky.load())) return false;
  p.fired.store(true);
  return true;
}

ForeignCode::ForeignCode() { g_foreign.fetch_add(1); }
ForeignCode::~ForeignCode() { g_foreign.fetch_sub(1); }

void note_alloc() { g_live.fetch_add(1, std::memory_order_relaxed); }
void note_free() { g_live.fetch_sub(1, std::memory_order_relaxed); }
int64_t live_allocs() { return g_live.load(); }

}  // namespace wt::fault
