// The budget check of context creation: the arena a context is about to allocate against
// the memory it may use — the caller's memory_budget_bytes and what the backend's memory
// has free (backends/available_memory.h) — before anything is allocated.
#pragma once

#include <cstdint>

#include "backends/backend.h"
#include "base/status.h"
#include "context_layout.h"

namespace wt {

// WT_ERR_BUDGET when `need` (lay_out_arena of `in`) exceeds the smaller of budget_bytes
// (0: none) and the memory the backend has available; the message gives every part's MiB,
// the limit and where it comes from, the shortfall, and the largest n_ctx that fits.
Status check_arena_budget(const ArenaInputs& in, const ArenaBytes& need, uint64_t budget_bytes, const Backend& backend);

}  // namespace wt
