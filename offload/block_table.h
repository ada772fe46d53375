// The KV of one layer in blocks of B tokens: block b holds rows [b*B, min((b+1)*B, n_tokens)),
// so only the last block may be ragged. Each block may have a copy in a device-pool slot, a
// host-pool slot, or both; the valid flags say which copies hold the block's current rows.
// A slot holds its block's rows token-major from offset 0, so the valid bytes of a ragged
// block are one contiguous prefix of its slot and move in one copy.
//
// The table is plain data: the Pager makes every state change and keeps it consistent with
// the pools (see Pager::check_invariants for the rules).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wt {

struct BlockEntry {
  int32_t device_slot = -1;   // slot in the device pool, -1 = none (the block is not active)
  int32_t host_slot = -1;     // slot in the pinned-host pool, -1 = none
  bool device_valid = false;  // the device slot holds the block's current rows
  bool host_valid = false;    // the host slot does (false once rows are appended on device)
};

class BlockTable {
 public:
  // The only call that allocates: room for every block of max_tokens rows.
  void init(int32_t max_tokens, int32_t block_tokens);
  void clear();  // no tokens, no blocks (slots are the pager's to give back first)

  int32_t block_tokens() const { return block_tokens_; }
  int32_t n_tokens() const { return n_tokens_; }
  int32_t n_blocks() const { return n_blocks_for(n_tokens_); }
  int32_t max_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t n_blocks_for(int32_t n_tokens) const { return (n_tokens + block_tokens_ - 1) / block_tokens_; }

  int32_t row_begin(int32_t block) const { return block * block_tokens_; }
  // Rows block holds now: B, or fewer for the ragged last block.
  int32_t n_rows(int32_t block) const;

  const BlockEntry& at(int32_t block) const { return blocks_[static_cast<size_t>(block)]; }
  BlockEntry& at(int32_t block) { return blocks_[static_cast<size_t>(block)]; }

  // Grows the layer to n_tokens (<= max_blocks() * block_tokens()); the Pager gives new
  // blocks their slots.
  void set_n_tokens(int32_t n_tokens) { n_tokens_ = n_tokens; }

 private:
  std::vector<BlockEntry> blocks_;  // [max_blocks]; entries >= n_blocks() stay empty
  int32_t block_tokens_ = 64;
  int32_t n_tokens_ = 0;
};

}  // namespace wt
