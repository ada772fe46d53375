// A fixed-size slot allocator for KV blocks: one slot holds one block of one layer. Made
// once with the slot count the planner gives; taking and giving back slots afterwards never
// allocates, so the decode loop can page blocks without touching the heap. The pool only
// counts slots: the memory behind them is a Buffer the engine owns (slot s starts at
// s * slot_bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"

namespace wt {

class BlockPool {
 public:
  // name appears in error messages ("device", "host"). The only call that allocates.
  void init(const char* name, int32_t n_slots, size_t slot_bytes);

  const char* name() const { return name_; }
  int32_t n_slots() const { return static_cast<int32_t>(used_.size()); }
  int32_t n_used() const { return n_used_; }
  int32_t n_free() const { return n_slots() - n_used_; }
  size_t slot_bytes() const { return slot_bytes_; }
  bool is_used(int32_t slot) const { return used_[static_cast<size_t>(slot)] != 0; }

  // The lowest free slot >= from, or -1. Plans pick slots with it without changing the
  // pool, so a plan that fails leaves nothing to undo.
  int32_t next_free(int32_t from) const;

  // take: the slot must be free; give: it must be used (the pager checks before calling).
  void take(int32_t slot);
  void give(int32_t slot);
  void give_all();

  // The status when a request for `layer` needs `shortfall` more slots than are free.
  Status exhausted(int32_t layer, int32_t shortfall) const;

 private:
  const char* name_ = "";
  std::vector<uint8_t> used_;  // [n_slots] 1 = owned by some block
  int32_t n_used_ = 0;
  size_t slot_bytes_ = 0;
};

}  // namespace wt
