#include "alloc_table.h"

namespace wt::vk {

bool AllocationTable::insert(const void* base, const Allocation& a) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  auto next = by_base_.lower_bound(b);
  if (next != by_base_.end() && next->first < b + a.size_bytes) return false;
  if (next != by_base_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size_bytes > b) return false;
  }
  by_base_.emplace(b, a);
  return true;
}

bool AllocationTable::erase(const void* base, Allocation* out) {
  auto it = by_base_.find(reinterpret_cast<uintptr_t>(base));
  if (it == by_base_.end()) return false;
  if (out) *out = it->second;
  by_base_.erase(it);
  return true;
}

bool AllocationTable::find(const void* p, size_t bytes, Resolved* out) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = by_base_.upper_bound(a);
  if (it == by_base_.begin()) return false;
  --it;
  const size_t offset = a - it->first;
  if (offset >= it->second.size_bytes && !(offset == 0 && bytes == 0)) return false;
  if (bytes > it->second.size_bytes - offset) return false;
  *out = Resolved{it->second.buffer, offset, it->second.size_bytes, it->second.view, it->second.view_bytes};
  return true;
}

}  // namespace wt::vk
