#include "paged_kv.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace wt {
namespace {

int32_t n_blocks_for(const PagedKvParams& p, int32_t rows) { return (rows + p.block_tokens - 1) / p.block_tokens; }

// One token's K (or V) of one layer, all KV heads, in the cache's type.
uint64_t plane_row_bytes(const PagedKvParams& p) {
  size_t head = 0;
  dtype_row_bytes(p.kv_type, p.head_dim, &head);
  return static_cast<uint64_t>(head) * static_cast<uint64_t>(p.n_head_kv);
}

}  // namespace

int32_t PagedKv::min_device_blocks(const PagedKvParams& p) { return n_blocks_for(p, p.n_ctx); }

uint64_t PagedKv::device_pool_bytes(const PagedKvParams& p) {
  return 2 * plane_row_bytes(p) * static_cast<uint64_t>(p.block_tokens) * static_cast<uint64_t>(p.n_device_blocks);
}

uint64_t PagedKv::host_pool_bytes(const PagedKvParams& p) {
  return 2 * plane_row_bytes(p) * static_cast<uint64_t>(p.block_tokens) * static_cast<uint64_t>(p.n_host_blocks);
}

Status PagedKv::check_shape(int32_t n_ctx, int32_t block_tokens, int32_t n_device_blocks) {
  if (block_tokens < 1 || block_tokens > 4096)
    return error(WT_ERR_INVALID_ARGUMENT, "kv_block_tokens " + std::to_string(block_tokens) + " outside [1, 4096]");
  const int32_t layer_blocks = (n_ctx + block_tokens - 1) / block_tokens;
  if (n_device_blocks < layer_blocks)
    return error(WT_ERR_INVALID_ARGUMENT, "kv_device_blocks " + std::to_string(n_device_blocks) +
                                              ": the device pool must hold one whole layer at n_ctx " +
                                              std::to_string(n_ctx) + ", " + std::to_string(layer_blocks) +
                                              " blocks of " + std::to_string(block_tokens) + " tokens");
  return Status::ok();
}

Status PagedKv::init(Backend& backend, const PagedKvParams& p) {
  // In place the pool is every planned block, which a method's budgets may keep below one
  // layer at n_ctx: the context checked the request itself.
  if (!p.in_place) WT_TRY(check_shape(p.n_ctx, p.block_tokens, p.n_device_blocks));
  b_ = &backend;
  p_ = p;
  plane_row_bytes_ = plane_row_bytes(p);
  const int32_t host_blocks = p.n_host_blocks;
  if (p.in_place ? p.n_device_blocks < 1 || host_blocks != 0 : host_blocks < 1)
    return error(WT_ERR_INVALID_ARGUMENT, "pager: no blocks planned");
  PagerParams pp;
  pp.n_layer = p.n_layer;
  pp.max_tokens = p.n_ctx;
  pp.block_tokens = p.block_tokens;
  pp.row_bytes = 2 * plane_row_bytes_;
  pp.n_device_slots = p.n_device_blocks;
  pp.n_host_slots = host_blocks;
  WT_TRY(pager_.init(pp));

  const size_t slot_bytes = plane_row_bytes_ * static_cast<size_t>(p.block_tokens);
  const size_t dev_plane = slot_bytes * static_cast<size_t>(p.n_device_blocks);
  const size_t host_plane = slot_bytes * static_cast<size_t>(host_blocks);
  // Paged attention binds the device pool's K (and V) plane whole: refused here, not at the
  // first decode step. In place that plane is every layer's KV, which a long context on
  // Vulkan can take past a binding's range.
  const size_t bind_limit = backend.caps().max_binding_bytes;
  if (bind_limit > 0 && dev_plane > bind_limit)
    return error(WT_ERR_UNSUPPORTED, "pager: the device pool's K plane of " + std::to_string(dev_plane) +
                                         " bytes is more than the " + std::string(backend.caps().name) +
                                         " backend binds at once (" + std::to_string(bind_limit) +
                                         "); a shorter n_ctx, a smaller kv_type, or the copying pager " +
                                         "(WT_KV_PAGER_COPY) with fewer kv_device_blocks");
  // Kernels and copies alone touch the device pool: no host address on a discrete GPU.
  WT_TRY(backend.alloc(2 * dev_plane, MemoryKind::device_only, &dev_mem_));
  if (!p.in_place) {
    Status st = backend.alloc(2 * host_plane, MemoryKind::host_pinned, &host_mem_);
    if (!st.is_ok()) {
      backend.free(&dev_mem_);
      return st;
    }
  }
  pools_.n_planes = 2;
  pools_.slot_bytes = slot_bytes;
  for (int i = 0; i < 2; ++i) {
    pools_.device[i] = byte_view(dev_mem_, static_cast<size_t>(i) * dev_plane, dev_plane);
    pools_.host[i] = byte_view(host_mem_, static_cast<size_t>(i) * host_plane, host_plane);
  }
  auto plane = [&](const Buffer& b, int64_t rows) {
    const int64_t ne[3] = {p.head_dim, p.n_head_kv, rows};
    return make_tensor(static_cast<char*>(b.device) + b.offset, p.kv_type, 3, ne);  // the host's where mapped
  };
  const int64_t dev_rows = static_cast<int64_t>(p.n_device_blocks) * p.block_tokens;
  const int64_t host_rows = static_cast<int64_t>(host_blocks) * p.block_tokens;
  k_dev_ = plane(pools_.device[0], dev_rows);
  v_dev_ = plane(pools_.device[1], dev_rows);
  k_host_ = p.in_place ? k_dev_ : plane(pools_.host[0], host_rows);
  v_host_ = p.in_place ? v_dev_ : plane(pools_.host[1], host_rows);

  const size_t max_blocks = static_cast<size_t>(n_blocks_for(p, p.n_ctx));
  need_.assign(static_cast<size_t>(p.n_layer), {});
  for (auto& n : need_) n.reserve(max_blocks);
  blocks_.reserve(max_blocks);
  prev_.reserve(max_blocks);
  one_.reserve(1);
  ids_.assign(static_cast<size_t>(p.n_ctx), 0);
  decision_.leaving.reserve(max_blocks);
  decision_.entering.reserve(max_blocks);
  plan_.leaving.reserve(max_blocks);
  plan_.entering.reserve(max_blocks);
  plan_.copies.reserve(2 * max_blocks);
  return Status::ok();
}

PagerCounters PagedKv::counters() const {
  PagerCounters c = counters_;
  StreamTimes t;
  if (b_ && b_->stream_times(&t)) {
    c.copy_ms = t.copy_busy_ms - times0_.copy_busy_ms;
    c.wait_ms = t.compute_wait_ms - times0_.compute_wait_ms + c.sync_wait_ms;
  }
  return c;
}

void PagedKv::reset_counters() {
  counters_ = PagerCounters{};
  times0_ = StreamTimes{};
  if (b_) (void)b_->stream_times(&times0_);
}

void PagedKv::release() {
  if (!b_) return;
  b_->free(&dev_mem_);
  if (!p_.in_place) b_->free(&host_mem_);
  b_ = nullptr;
}

void PagedKv::clear() {
  pager_.reset();
  for (auto& n : need_) n.clear();
  prev_layer_ = -1;
  fetch_pending_ = false;  // copies still queued are ordered by last_copy_ before any new write
}

Status PagedKv::append(OpRunner& run, int32_t layer, const Tensor& k, const Tensor& v, int32_t n) {
  if (n <= 0) return Status::ok();
  const BlockTable& t = pager_.table(layer);
  const int32_t B = p_.block_tokens, n_old = t.n_tokens();
  const int32_t nb_old = t.n_blocks(), nb_new = t.n_blocks_for(n_old + n);
  // A prefetch may still be filling the block the new rows go into.
  WT_TRY(wait_fetches());
  if (n_old % B != 0 && t.at(nb_old - 1).device_slot < 0) {
    // The partly filled last block grows in place: fetch it now.
    one_.assign(1, nb_old - 1);
    WT_TRY(fetch(layer, one_, true));
    WT_TRY(wait_fetches());
  }
  if (nb_new > nb_old) {
    WT_TRY(make_room(layer, nb_new - nb_old));
    // A slot just taken may still be read or written by a queued copy.
    if (copies_queued_) WT_TRY(b_->wait_event(Stream::compute, last_copy_));
  }
  WT_TRY(pager_.append_rows(layer, n));
  const Tensor kd = flatten_heads(k_dev_), vd = flatten_heads(v_dev_);
  for (int32_t r = n_old; r < n_old + n;) {
    const int32_t b = r / B, off = r % B, m = std::min(B - off, n_old + n - r);
    const int32_t row0 = t.at(b).device_slot * B + off;
    WT_TRY(run.copy_rows(kd, flatten_heads(rows_view(k, r - n_old, m)), row0));
    WT_TRY(run.copy_rows(vd, flatten_heads(rows_view(v, r - n_old, m)), row0));
    r += m;
  }
  if (p_.in_place) return Status::ok();  // the rows are where every reader looks
  // Write the new rows through to the host tier once compute has written them.
  Event written;
  WT_TRY(b_->record_event(Stream::compute, &written));
  WT_TRY(b_->wait_event(Stream::copy, written));
  for (int32_t r = n_old; r < n_old + n;) {
    const int32_t b = r / B, off = r % B, m = std::min(B - off, n_old + n - r);
    int32_t host_slot = -1;
    WT_TRY(pager_.write_through(layer, b, &host_slot));
    const size_t bytes = plane_row_bytes_ * static_cast<size_t>(m);
    const size_t src_off = (static_cast<size_t>(t.at(b).device_slot) * B + off) * plane_row_bytes_;
    const size_t dst_off = (static_cast<size_t>(host_slot) * B + off) * plane_row_bytes_;
    for (int pl = 0; pl < 2; ++pl)
      WT_TRY(b_->copy_async(Stream::copy, byte_view(pools_.host[pl], dst_off, bytes),
                            byte_view(pools_.device[pl], src_off, bytes), bytes));
    counters_.bytes_to_host += 2 * bytes;
    counters_.n_transfers += 2;
    r += m;
  }
  WT_TRY(b_->record_event(Stream::copy, &last_copy_));
  copies_queued_ = true;
  return Status::ok();
}

Status PagedKv::truncate(int32_t layer, int32_t n) {
  // A fetch still queued may be filling a slot given back here; the compute work that takes
  // the slot next waits for it (append's wait on the queued copies).
  WT_TRY(pager_.truncate_rows(layer, n));
  std::vector<int32_t>& need = need_[static_cast<size_t>(layer)];
  const int32_t n_blocks = pager_.table(layer).n_blocks();
  need.erase(std::remove_if(need.begin(), need.end(), [&](int32_t b) { return b >= n_blocks; }), need.end());
  prev_layer_ = -1;
  return Status::ok();
}

void PagedKv::set_need_all(int32_t layer) {
  std::vector<int32_t>& need = need_[static_cast<size_t>(layer)];
  need.clear();
  for (int32_t b = 0; b < pager_.table(layer).n_blocks(); ++b) need.push_back(b);
}

Status PagedKv::require(int32_t layer, const int32_t* rows, int32_t n_rows) {
  prev_.assign(need_[static_cast<size_t>(layer)].begin(), need_[static_cast<size_t>(layer)].end());
  prev_layer_ = layer;
  if (!rows) {
    set_need_all(layer);
  } else {
    std::vector<int32_t>& need = need_[static_cast<size_t>(layer)];
    need.clear();
    for (int32_t i = 0; i < n_rows; ++i) {
      const int32_t b = rows[i] / p_.block_tokens;
      if (need.empty() || need.back() != b) need.push_back(b);
    }
  }
  WT_TRY(fetch(layer, need_[static_cast<size_t>(layer)], true));
  return wait_fetches();
}

// The prediction is what the layer needed last step — unless last step it needed exactly
// what the layer before it needed: then the two move together (a SlimInfer group shares
// one active set), and the set the layer before just took is the better guess. That is
// the paper's scheme: blocks the decision at layer l brings in are prefetched for l + 1 at once.
// The layer's own record stays what it needed last step (require() compares the next
// layer against it): a prediction written over it broke the chain at every second layer.
// Called between require(l) and attention(l), so the blocks attention(l) is about to read
// are off limits to the room the prefetch makes.
Status PagedKv::prefetch(int32_t layer) {
  if (p_.sync_swaps) return Status::ok();
  const int32_t before = (layer - 1 + p_.n_layer) % p_.n_layer;
  const std::vector<int32_t>& need = need_[static_cast<size_t>(layer)];
  const bool follow = prev_layer_ == before && need == prev_;
  return fetch(layer, follow ? need_[static_cast<size_t>(before)] : need, false, before);
}

Status PagedKv::fetch(int32_t layer, const std::vector<int32_t>& want, bool on_demand, int32_t in_use) {
  const BlockTable& t = pager_.table(layer);
  blocks_.clear();
  for (int32_t b : want)
    if (b < t.n_blocks() && t.at(b).device_slot < 0) blocks_.push_back(b);
  if (blocks_.empty()) return Status::ok();
  if (!on_demand && static_cast<int32_t>(blocks_.size()) > pager_.device_pool().n_free()) {
    // Room for a prefetch comes from other layers. A pool too small for it leaves the
    // prefetch short, which is not an error (and builds no message on the decode path):
    // the rest is fetched when attention needs it.
    WT_TRY(free_slots(layer, static_cast<int32_t>(blocks_.size()), want, in_use));
    if (static_cast<int32_t>(blocks_.size()) > pager_.device_pool().n_free()) return Status::ok();
  } else {
    WT_TRY(make_room(layer, static_cast<int32_t>(blocks_.size())));
  }
  decision_.keep = false;
  decision_.leaving.clear();
  decision_.entering.assign(blocks_.begin(), blocks_.end());
  WT_TRY(pager_.swap(layer, layer + 1, decision_, &plan_));
  // The slots may have been read by compute work queued before now. Sync swaps stall
  // everything: the compute stream drains first, so the host's wait is the copies alone.
  Event after;
  if (p_.sync_swaps) WT_TRY(b_->synchronize(Stream::compute));
  WT_TRY(b_->record_event(Stream::compute, &after));
  WT_TRY(issue_copies(*b_, plan_, pools_, &after, &last_copy_, &counters_.n_transfers));
  last_fetch_ = last_copy_;
  copies_queued_ = fetch_pending_ = true;
  counters_.bytes_to_device += plan_.account.bytes_to_device;
  counters_.n_blocks_in += plan_.account.n_blocks_in;
  if (on_demand) counters_.n_blocks_on_demand += plan_.account.n_blocks_in;
  return Status::ok();
}

Status PagedKv::wait_fetches() {
  if (!fetch_pending_) return Status::ok();
  fetch_pending_ = false;
  if (p_.sync_swaps) {
    const auto t0 = std::chrono::steady_clock::now();
    WT_TRY(b_->synchronize(Stream::copy));
    counters_.sync_wait_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return Status::ok();
  }
  return b_->wait_event(Stream::compute, last_fetch_);
}

// The blocks in decision_.leaving leave the layer's device slots.
Status PagedKv::evict(int32_t layer) {
  WT_TRY(pager_.swap(layer, layer + 1, decision_, &plan_));
  if (!plan_.copies.empty()) {
    // A write-back: only for a block whose host copy is stale, which write-through avoids.
    Event after;
    WT_TRY(b_->record_event(Stream::compute, &after));
    WT_TRY(issue_copies(*b_, plan_, pools_, &after, &last_copy_, &counters_.n_transfers));
    copies_queued_ = true;
    counters_.bytes_to_host += plan_.account.bytes_to_host;
  }
  counters_.n_blocks_evicted += plan_.account.n_blocks_out;
  return Status::ok();
}

// Frees device slots until n_slots are free for `layer`. Every block has a valid host copy
// (write-through), so eviction only gives slots back. Two passes over the other layers,
// the most recently used first (layer - 1, layer - 2, ..., wrapping: in the decode loop's
// cyclic order the ones needed furthest in the future): first the blocks a layer did not
// need at its last step (SlimInfer's inactive blocks, what a prefill left behind), then the
// ones it did. Between them, `layer`'s own blocks outside `keep` (never its newest one):
// what it needed last step, or for a prefetch what it is predicted to need. make_room fails
// with the pool's reason when that is not enough.
Status PagedKv::make_room(int32_t layer, int32_t n_slots) {
  WT_TRY(free_slots(layer, n_slots, need_[static_cast<size_t>(layer)], -1));
  const BlockPool& pool = pager_.device_pool();
  if (pool.n_free() < n_slots) return pool.exhausted(layer, n_slots - pool.n_free());
  return Status::ok();
}

Status PagedKv::free_slots(int32_t layer, int32_t n_slots, const std::vector<int32_t>& keep, int32_t in_use) {
  const BlockPool& pool = pager_.device_pool();
  auto evict_from = [&](int32_t victim, bool needed_too) -> Status {
    const BlockTable& t = pager_.table(victim);
    const std::vector<int32_t>& need = victim == layer ? keep : need_[static_cast<size_t>(victim)];
    decision_.keep = false;
    decision_.entering.clear();
    decision_.leaving.clear();
    int32_t want = n_slots - pool.n_free();
    for (int32_t b = t.n_blocks() - 1; b >= 0 && want > 0; --b) {
      if (t.at(b).device_slot < 0) continue;
      const bool needed = std::binary_search(need.begin(), need.end(), b);
      // The layer making room and the one in use keep what they need and their newest block.
      const bool guarded = victim == layer || victim == in_use;
      if (guarded ? (needed || b == t.n_blocks() - 1) : (needed && !needed_too)) continue;
      decision_.leaving.push_back(b);
      --want;
    }
    if (decision_.leaving.empty()) return Status::ok();
    std::reverse(decision_.leaving.begin(), decision_.leaving.end());
    return evict(victim);
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t d = 1; d < p_.n_layer && pool.n_free() < n_slots; ++d)
      WT_TRY(evict_from((layer - d + p_.n_layer) % p_.n_layer, pass == 1));
    if (pass == 0 && pool.n_free() < n_slots) WT_TRY(evict_from(layer, false));
  }
  return Status::ok();
}

const int32_t* PagedKv::tier_rows(int32_t layer, const int32_t* rows, int32_t n, bool device) {
  const BlockTable& t = pager_.table(layer);
  const int32_t B = p_.block_tokens;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t r = rows ? rows[i] : i;
    const BlockEntry& e = t.at(r / B);
    ids_[static_cast<size_t>(i)] = (device || p_.in_place ? e.device_slot : e.host_slot) * B + r % B;
  }
  return ids_.data();
}

Status PagedKv::gather(OpRunner& run, int32_t layer, const Tensor& k_dst, const Tensor& v_dst) {
  const int32_t n = n_rows(layer);
  if (n == 0) return Status::ok();
  const int32_t* ids = device_rows(layer, nullptr, n);
  WT_TRY(run.gather_rows(first_rows(k_dst, n), k_dev_, ids, n, false));
  return run.gather_rows(first_rows(v_dst, n), v_dev_, ids, n, false);
}

Status PagedKv::finish_prefill(int32_t bounded_from) {
  if (copies_queued_) WT_TRY(b_->synchronize(Stream::copy));
  fetch_pending_ = false;
  for (int32_t l = 0; l < p_.n_layer; ++l) {
    if (l < bounded_from) set_need_all(l);
    else need_[static_cast<size_t>(l)].clear();
  }
  return Status::ok();
}

}  // namespace wt
