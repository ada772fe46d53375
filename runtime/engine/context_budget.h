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

// What a context's arena and pools may take. The caller's budget bounds all of it. The
// memory found free bounds what lives in that memory: on unified memory (the CPU, Jetson)
// all of it; on a discrete device the device's free memory bounds the device parts (the
// arena's device part and the pager's device pool) and the host's the pinned host parts
// (logits, index arrays, the policies' scores, the pager's host pool, which holds every
// block), as the planner counts a discrete board.
struct MemoryLimit {
  uint64_t budget_bytes = 0;          // memory_budget_bytes (0: none)
  uint64_t available_bytes = 0;       // the memory found free (0: not read)
  bool device_only = false;           // available_bytes is a discrete device's
  uint64_t host_available_bytes = 0;  // with device_only: the host's (0: not read)
  std::string source;                 // where available_bytes comes from

  bool none() const { return budget_bytes == 0 && available_bytes == 0 && host_available_bytes == 0; }
  bool fits(const ArenaBytes& a) const;
  // What a bound counts: every byte, the device parts or the pinned host parts.
  enum class Part { all, device, host };
  // The bound `a` exceeds most (or, when it fits, the tightest): the part and bytes it
  // counts, the bound, and its name for a message.
  struct Bound {
    Part part = Part::all;
    uint64_t counted = 0;
    uint64_t limit = 0;
    std::string source;
  };
  Bound bound(const ArenaBytes& a) const;
};

// The device parts of an arena: all but its pinned host part, plus the pager's device pool;
// the pinned host parts: the arena's host part and the pager's host pool.
uint64_t device_bytes(const ArenaBytes& a);
uint64_t pinned_host_bytes(const ArenaBytes& a);

// memory_budget_bytes and what the backend's memory has free now (left 0 where the machine
// reports no figures). WT_ERR_OUT_OF_MEMORY when it has no memory left to read them; *out is
// then as it was.
Status memory_limit(uint64_t budget_bytes, const Backend& backend, MemoryLimit* out);

// For a context that asked for the default n_batch_rows (0) and whose arena at the default
// does not fit `limit`: the largest multiple of kBatchRowsStep below the default whose arena
// fits, so that a long prompt runs in shorter passes or slices instead of not at all (the
// CPU's logits are the same bits for any n_batch_rows; a GPU reads its weights once more per
// pass or slice). 0 when nothing is to be lowered or no step fits.
int32_t fit_batch_rows(const ArenaInputs& in, const MemoryLimit& limit);

// For the default n_batch_rows where not even kBatchRowsStep rows fit `limit`: those rows,
// the plan whose figures the refusal gives (check_arena_budget) and wt_context_plan reports.
// 0 where the rows are set, n_ctx has no fewer, or that many fit.
int32_t refused_batch_rows(const ArenaInputs& in, const MemoryLimit& limit);

// WT_ERR_BUDGET when `asked` (lay_out_arena of `in`) does not fit `limit`; the message gives
// every part's MiB, the bound and where it comes from, the shortfall, the largest n_ctx that
// fits (with the default n_batch_rows, all of these at the fewest rows the context would have
// lowered it to), and, for rows the caller set, the most rows in steps of kBatchRowsStep that
// fit.
Status check_arena_budget(const ArenaInputs& in, const ArenaBytes& asked, const MemoryLimit& limit);

}  // namespace wt
