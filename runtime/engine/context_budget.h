// The budget check of context creation: the arena a context is about to allocate against
// the memory it may use — the caller's memory_budget_bytes and what the backend's memory
// has free (backends/available_memory.h) — before anything is allocated.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "base/status.h"
#include "context_layout.h"

namespace wt {

// The most bytes a context's arena and pools may take: the smaller of budget_bytes (0: none)
// and what the backend has available now; 0 when neither is known. `source` names it.
// WT_ERR_OUT_OF_MEMORY when the machine has no memory left to read its figures.
Status arena_limit(uint64_t budget_bytes, const Backend& backend, uint64_t* limit, std::string* source);

// For a context that asked for the default n_batch_rows (0) and whose arena at the default
// exceeds `limit` (0: none): the largest multiple of kBatchRowsStep below the default
// whose arena fits, so that a long prompt runs in shorter passes or slices instead of not
// at all (the CPU's logits are the same bits for any n_batch_rows; a GPU reads its weights
// once more per pass or slice). 0 when nothing is to be lowered or no step fits.
int32_t fit_batch_rows(const ArenaInputs& in, uint64_t limit);

// WT_ERR_BUDGET when `asked` (lay_out_arena of `in`) exceeds `limit` (from arena_limit; 0:
// none); the message gives every part's MiB, the limit and where it comes from (`source`),
// the shortfall, the largest n_ctx that fits (with the default n_batch_rows, all of these at
// the fewest rows the context would have lowered it to), and, for rows the caller set, the
// most rows in steps of kBatchRowsStep that fit.
Status check_arena_budget(const ArenaInputs& in, const ArenaBytes& asked, uint64_t limit, const std::string& source);

}  // namespace wt
