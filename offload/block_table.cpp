#include "block_table.h"

#include <algorithm>

namespace wt {

void BlockTable::init(int32_t max_tokens, int32_t block_tokens) {
  block_tokens_ = std::max(block_tokens, 1);
  n_tokens_ = 0;
  blocks_.assign(static_cast<size_t>(n_blocks_for(std::max(max_tokens, 0))), BlockEntry{});
}

void BlockTable::clear() {
  std::fill(blocks_.begin(), blocks_.end(), BlockEntry{});
  n_tokens_ = 0;
}

int32_t BlockTable::n_rows(int32_t block) const {
  return std::clamp(n_tokens_ - row_begin(block), 0, block_tokens_);
}

}  // namespace wt
