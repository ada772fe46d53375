#include "pager.h"

#include <string>

namespace wt {

Status Pager::init(const PagerParams& p) {
  if (p.n_layer <= 0 || p.max_tokens <= 0 || p.block_tokens <= 0 || p.row_bytes == 0 || p.n_device_slots < 0 ||
      p.n_host_slots < 0)
    return error(WT_ERR_INVALID_ARGUMENT, "pager: n_layer, max_tokens, block_tokens and row_bytes must be positive, "
                                          "slot counts not negative");
  p_ = p;
  tables_.assign(static_cast<size_t>(p.n_layer), BlockTable{});
  for (BlockTable& t : tables_) t.init(p.max_tokens, p.block_tokens);
  device_.init("device", p.n_device_slots, slot_bytes());
  host_.init("host", p.n_host_slots, slot_bytes());
  totals_ = SwapAccount{};
  return Status::ok();
}

void Pager::reset() {
  for (BlockTable& t : tables_) t.clear();
  device_.give_all();
  host_.give_all();
  totals_ = SwapAccount{};
}

Status Pager::append_rows(int32_t layer, int32_t n_rows) {
  if (layer < 0 || layer >= p_.n_layer || n_rows < 0)
    return error(WT_ERR_INVALID_ARGUMENT, "pager: append_rows: layer " + std::to_string(layer) + " or row count " +
                                              std::to_string(n_rows) + " out of range");
  BlockTable& t = tables_[static_cast<size_t>(layer)];
  const int32_t n_old = t.n_tokens();
  if (static_cast<int64_t>(n_old) + n_rows > p_.max_tokens)
    return error(WT_ERR_CONTEXT_FULL, "pager: layer " + std::to_string(layer) + " would hold " +
                                          std::to_string(static_cast<int64_t>(n_old) + n_rows) + " rows, more than " +
                                          std::to_string(p_.max_tokens));
  if (n_rows == 0) return Status::ok();
  const int32_t nb_old = t.n_blocks(), nb_new = t.n_blocks_for(n_old + n_rows);
  const bool grows_last = n_old % p_.block_tokens != 0;
  if (grows_last && t.at(nb_old - 1).device_slot < 0)
    return error(WT_ERR_INVALID_ARGUMENT, "pager: the partly filled last block " + std::to_string(nb_old - 1) +
                                              " of layer " + std::to_string(layer) +
                                              " is not on the device (pin the newest block)");
  if (nb_new - nb_old > device_.n_free()) return device_.exhausted(layer, nb_new - nb_old - device_.n_free());

  if (grows_last) t.at(nb_old - 1).host_valid = false;  // its host copy misses the new rows
  int32_t cursor = -1;
  for (int32_t b = nb_old; b < nb_new; ++b) {
    cursor = device_.next_free(cursor + 1);
    device_.take(cursor);
    t.at(b) = BlockEntry{cursor, -1, true, false};
  }
  t.set_n_tokens(n_old + n_rows);
  return Status::ok();
}

Status Pager::truncate_rows(int32_t layer, int32_t n_tokens) {
  if (layer < 0 || layer >= p_.n_layer || n_tokens < 0 || n_tokens > table(layer).n_tokens())
    return error(WT_ERR_INVALID_ARGUMENT, "pager: truncate_rows: layer " + std::to_string(layer) + " or row count " +
                                              std::to_string(n_tokens) + " out of range");
  BlockTable& t = tables_[static_cast<size_t>(layer)];
  for (int32_t b = t.n_blocks_for(n_tokens); b < t.n_blocks(); ++b) {
    BlockEntry& e = t.at(b);
    if (e.device_slot >= 0) device_.give(e.device_slot);
    if (e.host_slot >= 0) host_.give(e.host_slot);
    e = BlockEntry{};
  }
  t.set_n_tokens(n_tokens);
  return Status::ok();
}

Status Pager::write_through(int32_t layer, int32_t block, int32_t* out_host_slot) {
  if (layer < 0 || layer >= p_.n_layer || block < 0 || block >= table(layer).n_blocks())
    return error(WT_ERR_INVALID_ARGUMENT, "pager: write_through: layer " + std::to_string(layer) + " block " +
                                              std::to_string(block) + " does not exist");
  BlockEntry& e = tables_[static_cast<size_t>(layer)].at(block);
  if (e.host_slot < 0) {
    const int32_t slot = host_.next_free(0);
    if (slot < 0) return host_.exhausted(layer, 1);
    host_.take(slot);
    e.host_slot = slot;
  }
  e.host_valid = true;
  *out_host_slot = e.host_slot;
  return Status::ok();
}

void Pager::active_blocks(int32_t layer, std::vector<int32_t>* out) const {
  out->clear();
  const BlockTable& t = table(layer);
  for (int32_t b = 0; b < t.n_blocks(); ++b)
    if (t.at(b).device_slot >= 0) out->push_back(b);
}

void Pager::paged_view(int32_t layer, std::vector<PagedBlock>* out) const {
  out->clear();
  const BlockTable& t = table(layer);
  for (int32_t b = 0; b < t.n_blocks(); ++b)
    if (t.at(b).device_slot >= 0) out->push_back(PagedBlock{b, t.at(b).device_slot, t.row_begin(b), t.n_rows(b)});
}

Status Pager::swap(int32_t layer_begin, int32_t layer_end, const SwapDecision& d, SwapPlan* out) {
  const PlanContext ctx{tables_, &device_, &host_, p_.row_bytes};
  WT_TRY(plan_swap(ctx, layer_begin, layer_end, d, out));
  apply(*out);
  return Status::ok();
}

// The plan was made from this exact state a moment ago, so every slot it names is as it
// expects: leaving blocks give their device slots back before entering blocks take theirs.
void Pager::apply(const SwapPlan& plan) {
  for (const BlockMove& m : plan.leaving) {
    BlockEntry& e = tables_[static_cast<size_t>(m.layer)].at(m.block);
    device_.give(m.device_slot);
    e.device_slot = -1;
    e.device_valid = false;
    if (m.take_host) host_.take(m.host_slot);
    e.host_slot = m.host_slot;
    e.host_valid = true;  // written back now, or already valid
  }
  for (const BlockMove& m : plan.entering) {
    BlockEntry& e = tables_[static_cast<size_t>(m.layer)].at(m.block);
    device_.take(m.device_slot);
    e.device_slot = m.device_slot;
    e.device_valid = true;
  }
  totals_.add(plan.account);
}

Status Pager::check_invariants() const {
  std::vector<uint8_t> dev_owned(static_cast<size_t>(device_.n_slots()), 0);
  std::vector<uint8_t> host_owned(static_cast<size_t>(host_.n_slots()), 0);
  int32_t n_dev = 0, n_host = 0;
  auto broken = [](int32_t l, int32_t b, const char* rule) {
    return error(WT_ERR_INTERNAL, "pager: layer " + std::to_string(l) + " block " + std::to_string(b) + ": " + rule);
  };
  for (int32_t l = 0; l < p_.n_layer; ++l) {
    const BlockTable& t = table(l);
    for (int32_t b = 0; b < t.max_blocks(); ++b) {
      const BlockEntry& e = t.at(b);
      if (b >= t.n_blocks()) {
        if (e.device_slot >= 0 || e.host_slot >= 0 || e.device_valid || e.host_valid)
          return broken(l, b, "past the layer's end but owns a slot");
        continue;
      }
      if ((e.device_slot >= 0) != e.device_valid) return broken(l, b, "device slot without a valid copy, or the reverse");
      if (e.host_valid && e.host_slot < 0) return broken(l, b, "valid host copy without a host slot");
      if (!e.device_valid && !e.host_valid) return broken(l, b, "no valid copy on either tier");
      if (e.device_slot >= 0) {
        if (e.device_slot >= device_.n_slots() || !device_.is_used(e.device_slot))
          return broken(l, b, "device slot out of range or free in the pool");
        if (dev_owned[static_cast<size_t>(e.device_slot)]++) return broken(l, b, "device slot owned twice");
        ++n_dev;
      }
      if (e.host_slot >= 0) {
        if (e.host_slot >= host_.n_slots() || !host_.is_used(e.host_slot))
          return broken(l, b, "host slot out of range or free in the pool");
        if (host_owned[static_cast<size_t>(e.host_slot)]++) return broken(l, b, "host slot owned twice");
        ++n_host;
      }
    }
  }
  if (n_dev != device_.n_used() || n_host != host_.n_used())
    return error(WT_ERR_INTERNAL, "pager: the pools count " + std::to_string(device_.n_used()) + " device and " +
                                      std::to_string(host_.n_used()) + " host slots used, the tables own " +
                                      std::to_string(n_dev) + " and " + std::to_string(n_host));
  return Status::ok();
}

}  // namespace wt
