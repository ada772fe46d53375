// Issues a swap plan's copies through a backend: copy_async on the copy stream, then one
// event that the compute stream waits on before attention reads the layers of the plan.
// Kept apart from the Pager so the bookkeeping stays testable without a device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.h"
#include "swap_plan.h"

namespace wt {

// The memory behind the pools. Each tier is n_planes buffers (the engine's K and V planes,
// so each plane is an ordinary [rows, heads, head_dim] tensor the kernels read): slot s of a
// plane is the slot_bytes at s * slot_bytes of that plane's buffer, and a command's bytes
// split evenly over the planes (a token's row is the same size in each).
struct PoolMemory {
  static constexpr int kMaxPlanes = 2;
  Buffer device[kMaxPlanes];
  Buffer host[kMaxPlanes];
  int n_planes = 1;
  size_t slot_bytes = 0;  // per plane
};

// after: when given, the copy stream first waits for it (the compute stream's last read of
// the slots the plan overwrites). out_done: recorded on the copy stream after the last copy.
// Commands that continue each other slot by slot go as one copy_async per plane;
// *n_transfers (optional) grows by the copy_async calls made. WT_ERR_INVALID_ARGUMENT: a
// slot or byte count outside its buffer (nothing issued then); a backend's status otherwise.
Status issue_copies(Backend& backend, const SwapPlan& plan, const PoolMemory& mem, const Event* after,
                    Event* out_done, int64_t* n_transfers = nullptr);

}  // namespace wt
