// Issues a swap plan's copies through a backend: copy_async on the copy stream, then one
// event that the compute stream waits on before attention reads the layers of the plan.
// Kept apart from the Pager so the bookkeeping stays testable without a device.
#pragma once

#include <cstddef>

#include "../backends/backend.h"
#include "swap_plan.h"

namespace wt {

// The memory behind the pools: slot s of a tier is the slot_bytes at s * slot_bytes of its
// buffer. The engine allocates both (MemoryKind::device and MemoryKind::host_pinned).
struct PoolMemory {
  Buffer device;
  Buffer host;
  size_t slot_bytes = 0;
};

// after: when given, the copy stream first waits for it (the compute stream's last read of
// the slots the plan overwrites). out_done: recorded on the copy stream after the last copy.
// WT_ERR_INVALID_ARGUMENT: a slot or byte count outside its buffer (nothing issued then);
// a backend's status otherwise.
Status issue_copies(Backend& backend, const SwapPlan& plan, const PoolMemory& mem, const Event* after,
                    Event* out_done);

}  // namespace wt
