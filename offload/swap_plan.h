// The swap decision (SlimInfer's overlap-gated KV swap, METHODS.md §8) and the copies it
// implies. Two steps, both pure over small host vectors:
//   decide_swap: block ids in, block ids out. The candidate set replaces the current one
//     only when overlap = |current ∩ candidate| / |candidate| < gamma, so small changes of
//     the top blocks cost no copies.
//   plan_swap: the decision against the layers' block tables and the pools' free slots:
//     which slots, which copies, how many bytes. It changes nothing; Pager::apply does, so a
//     plan that fails (pool exhausted) leaves the tables and pools as they were.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "block_pool.h"
#include "block_table.h"

namespace wt {

// All block id lists are ascending and without repeats.
struct SwapInput {
  std::span<const int32_t> current;    // the layer group's active (device-resident) blocks
  std::span<const int32_t> candidate;  // the blocks the policy wants now (SlimInfer's top blocks)
  std::span<const int32_t> pinned;     // blocks that never leave (first block, newest block):
                                       // the caller's rule; a pinned block not yet active enters
  double gamma = 0.9;                  // keep the current set when overlap >= gamma
  bool force = false;                  // move to the candidate regardless of overlap (the first
                                       // decision after prefill, when "current" is everything written)
};

struct SwapDecision {
  double overlap = 1.0;            // |current ∩ candidate| / |candidate|; 1 for an empty candidate
  bool keep = true;                // true: no moves
  std::vector<int32_t> leaving;    // current \ (candidate ∪ pinned)
  std::vector<int32_t> entering;   // (candidate ∪ pinned) \ current
};

// WT_ERR_INVALID_ARGUMENT: a list not ascending, a negative id, gamma outside [0, 1].
// out's vectors keep their capacity, so a decision reused every step stops allocating.
Status decide_swap(const SwapInput& in, SwapDecision* out);

enum class Tier : uint8_t { device, host };

// One copy a backend issues with copy_async on the copy stream: bytes from the start of
// src slot to the start of dst slot.
struct CopyCommand {
  int32_t layer = 0;
  int32_t block = 0;
  Tier src = Tier::device;
  int32_t src_slot = 0;
  Tier dst = Tier::host;
  int32_t dst_slot = 0;
  size_t bytes = 0;
};

// A block's slot changes, for Pager::apply.
struct BlockMove {
  int32_t layer = 0;
  int32_t block = 0;
  int32_t device_slot = 0;  // leaving: the slot given back; entering: the slot taken
  int32_t host_slot = 0;    // leaving: where the host copy is (taken now if it had none)
  bool take_host = false;   // leaving: host_slot is taken by this move
  bool write_back = false;  // leaving: the host copy was missing or stale and is written
};

// Counts per decision; Pager keeps the running sum.
struct SwapAccount {
  int64_t n_decisions = 0;
  int64_t n_kept = 0;         // decisions that moved nothing (overlap >= gamma)
  int64_t n_blocks_in = 0;    // block prefetches host -> device (summed over layers)
  int64_t n_blocks_out = 0;   // blocks that left the device, written back or not
  int64_t n_write_backs = 0;  // of those, the ones copied device -> host
  uint64_t bytes_to_device = 0;
  uint64_t bytes_to_host = 0;

  void add(const SwapAccount& o);
  bool operator==(const SwapAccount&) const = default;
};

struct SwapPlan {
  int32_t layer_begin = 0, layer_end = 0;  // the group [begin, end)
  std::vector<BlockMove> leaving;
  std::vector<BlockMove> entering;
  // Write-backs first, then prefetches: a prefetch may land in the slot a write-back reads,
  // and the copy stream runs in order.
  std::vector<CopyCommand> copies;
  SwapAccount account;

  void clear();  // keeps capacity
};

// What planning reads; it changes none of it.
struct PlanContext {
  std::span<const BlockTable> tables;  // [n_layer]
  const BlockPool* device = nullptr;
  const BlockPool* host = nullptr;
  size_t row_bytes = 0;                // one token's KV in one layer
};

// Applies the decision to every layer in [layer_begin, layer_end). Per layer only what
// differs moves: a leaving block not resident there, or an entering one already resident,
// is skipped. Device slots given back by leaving blocks are reused first, then the pool's
// lowest free slots. WT_ERR_OUT_OF_MEMORY (naming the pool, layer and slot count) when a
// pool has too few free slots; WT_ERR_INVALID_ARGUMENT when an entering block does not
// exist in a layer or has no valid copy to fetch. On failure out is cleared.
Status plan_swap(const PlanContext& ctx, int32_t layer_begin, int32_t layer_end, const SwapDecision& d,
                 SwapPlan* out);

}  // namespace wt
