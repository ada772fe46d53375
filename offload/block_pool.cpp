#include "block_pool.h"

#include <algorithm>
#include <string>

namespace wt {

void BlockPool::init(const char* name, int32_t n_slots, size_t slot_bytes) {
  name_ = name;
  used_.assign(static_cast<size_t>(std::max(n_slots, 0)), 0);
  n_used_ = 0;
  slot_bytes_ = slot_bytes;
}

int32_t BlockPool::next_free(int32_t from) const {
  for (int32_t s = std::max(from, 0); s < n_slots(); ++s)
    if (!used_[static_cast<size_t>(s)]) return s;
  return -1;
}

void BlockPool::take(int32_t slot) {
  used_[static_cast<size_t>(slot)] = 1;
  ++n_used_;
}

void BlockPool::give(int32_t slot) {
  used_[static_cast<size_t>(slot)] = 0;
  --n_used_;
}

void BlockPool::give_all() {
  std::fill(used_.begin(), used_.end(), uint8_t{0});
  n_used_ = 0;
}

Status BlockPool::exhausted(int32_t layer, int32_t shortfall) const {
  return error(WT_ERR_OUT_OF_MEMORY, std::string("pager: the ") + name_ + " pool (" + std::to_string(n_slots()) +
                                         " slots of " + std::to_string(slot_bytes_) + " bytes) is out of slots at layer " +
                                         std::to_string(layer) + ": " + std::to_string(shortfall) +
                                         " more needed; nothing was changed");
}

}  // namespace wt
