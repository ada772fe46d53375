// The KV pager's state: per layer a BlockTable, one device pool and one pinned-host pool
// shared by all layers (the planner sizes both). It makes every state change, so the tables
// and pools agree (check_invariants says what agreeing means), and every change either
// succeeds whole or changes nothing.
//
// How the engine is meant to drive it (not wired yet):
//   prefill/decode write rows:  append_rows(l, n), then write the rows into paged_view slots
//   at a group's decision:      active_blocks -> decide_swap -> swap(group, decision, &plan)
//                               -> issue_copies(plan) on the copy stream -> attention waits
//   decode attention of l:      paged_view(l): device slots in logical order + their rows
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "block_pool.h"
#include "block_table.h"
#include "swap_plan.h"

namespace wt {

struct PagerParams {
  int32_t n_layer = 0;
  int32_t max_tokens = 0;     // per layer (the context length)
  int32_t block_tokens = 64;  // B
  size_t row_bytes = 0;       // one token's K and V in one layer; a slot is B rows
  int32_t n_device_slots = 0;
  int32_t n_host_slots = 0;
};

// One active block as decode attention reads it: rows [row_begin, row_begin + n_rows) of the
// layer live at the start of device slot `slot`.
struct PagedBlock {
  int32_t block = 0;
  int32_t slot = 0;
  int32_t row_begin = 0;
  int32_t n_rows = 0;
};

class Pager {
 public:
  // Allocates everything the pager will ever use. WT_ERR_INVALID_ARGUMENT: a count <= 0
  // (slot counts may be 0).
  Status init(const PagerParams& p);
  // Empties every layer and gives every slot back; the totals restart too.
  void reset();

  const PagerParams& params() const { return p_; }
  size_t slot_bytes() const { return static_cast<size_t>(p_.block_tokens) * p_.row_bytes; }
  const BlockTable& table(int32_t layer) const { return tables_[static_cast<size_t>(layer)]; }
  const BlockPool& device_pool() const { return device_; }
  const BlockPool& host_pool() const { return host_; }

  // Adds n_rows rows to a layer, written on the device: new blocks take the lowest free
  // device slots; a partly filled last block grows in place and its host copy goes stale.
  // WT_ERR_CONTEXT_FULL: beyond max_tokens. WT_ERR_OUT_OF_MEMORY: too few device slots.
  // WT_ERR_INVALID_ARGUMENT: the partly filled last block is not on the device (the caller
  // pins the newest block). Nothing changes on failure.
  Status append_rows(int32_t layer, int32_t n_rows);

  // Keeps a layer's first n_tokens rows (at most its rows now): the blocks past them give
  // their slots back; a block left ragged keeps its copies, valid for the rows it keeps.
  // WT_ERR_INVALID_ARGUMENT: no such layer, or n_tokens outside [0, its rows]; nothing changes.
  Status truncate_rows(int32_t layer, int32_t n_tokens);
  // Write-through: the engine copies a block's newly written rows to the host tier as well,
  // so the block may leave the device later without a copy. Gives the block a host slot if
  // it has none (*out_host_slot: where the copy goes) and marks its host copy valid; the
  // caller issues the copy on the copy stream before anything reads that slot.
  // WT_ERR_OUT_OF_MEMORY: the host pool is full. WT_ERR_INVALID_ARGUMENT: no such block.
  Status write_through(int32_t layer, int32_t block, int32_t* out_host_slot);
  // The layer's device-resident blocks, ascending: the current set for decide_swap.
  void active_blocks(int32_t layer, std::vector<int32_t>* out) const;
  // The same blocks with their slots and rows: the index list of paged decode attention.
  void paged_view(int32_t layer, std::vector<PagedBlock>* out) const;

  // Plans the decision for layers [layer_begin, layer_end) (plan_swap) and applies it to the
  // tables and pools; *out receives the copies to issue. On failure nothing changes.
  Status swap(int32_t layer_begin, int32_t layer_end, const SwapDecision& d, SwapPlan* out);

  // The sum of every swap's account since init/reset.
  const SwapAccount& totals() const { return totals_; }

  // WT_ERR_INTERNAL naming the first broken rule: a block has a device slot exactly when its
  // device copy is valid; a valid host copy has a host slot; every block of a layer has a
  // valid copy somewhere; no slot is owned twice; each pool's used count equals the slots
  // the tables own; blocks past a layer's end own nothing.
  Status check_invariants() const;

 private:
  void apply(const SwapPlan& plan);

  PagerParams p_;
  std::vector<BlockTable> tables_;  // [n_layer]
  BlockPool device_, host_;
  SwapAccount totals_;
};

}  // namespace wt
