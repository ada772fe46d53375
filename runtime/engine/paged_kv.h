// The context's KV through the pager (offload/) — used when wt_context_params asks for a
// bounded device pool. Every layer's KV lives in blocks of B tokens. The device pool holds
// n_device_blocks blocks shared by all layers; the pinned host pool holds every block: each
// row written on the device is written through to the host on the copy stream, so a block
// leaves the device without a copy and comes back by a prefetch. Decode attention reads
// the device pool through the block table (key ids = slot * B + offset).
//
// Streams: fetches run on the copy stream after a compute event (the slots they overwrite
// were read by compute work queued before); compute waits for the fetches of a layer before
// its attention, and for every queued copy before it writes a slot it has just taken.
// prefetch(l + 1) is called right after require(l), before attention(l) is queued, so the
// copies overlap attention(l), o-proj/FFN(l) and QKV(l + 1). With sync_swaps the host waits
// for each swap instead (the ablation of SlimInfer's Table 4).
//
// In place (unified memory: the device reads host DRAM) there is nothing to copy: the device
// pool has a slot for every block, so no block is ever evicted or fetched, and there is no
// host tier — what the policies' ops read from the host tier (k_host, host_rows) is the pool
// itself, read by kernels only: the pool may have no host address (CUDA's cudaMalloc on a
// Jetson; lavapipe told so in the tests). The same bookkeeping runs; what it would move is
// empty. That costs the bytes of resident KV (in
// blocks) instead of a bounded device pool plus a host pool of every block in the same DRAM.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "offload/pager.h"
#include "offload/swap_copies.h"
#include "base/status.h"
#include "op_runner.h"

namespace wt {

struct PagedKvParams {
  int32_t n_layer = 0;
  int32_t n_ctx = 0;            // rows a layer may hold
  int32_t block_tokens = 64;    // B
  int32_t n_device_blocks = 0;  // device pool slots, shared by all layers (in place: every block)
  int32_t n_host_blocks = 0;    // host pool slots: every block of every layer at its planned size
                                // (in place: 0)
  int64_t head_dim = 0;
  int64_t n_head_kv = 0;
  DType kv_type = DType::f32;   // the cache's element (f32, f16 or q8_0): blocks move as bytes
  bool sync_swaps = false;
  bool in_place = false;        // one pool of every block, no host tier (paged_kv_params sets the counts)
};

// Since the last reset_counters() (a context reset).
struct PagerCounters {
  uint64_t bytes_to_device = 0;  // block fetches (prefetched or at use)
  uint64_t bytes_to_host = 0;    // write-through of new rows
  int64_t n_blocks_in = 0;       // blocks fetched
  int64_t n_blocks_on_demand = 0;// of those, fetched when attention needed them (not ahead)
  int64_t n_blocks_evicted = 0;
  int64_t n_transfers = 0;       // copy_async calls those moves took (consecutive slots: one)
  double sync_wait_ms = 0;       // sync_swaps: host time waiting for fetches
  // Where the backend times its streams (StreamTimes; -1 where it does not): the copy
  // stream's busy time, and the time compute waited for copies — blocked on their events,
  // plus sync_wait_ms. copy_ms - wait_ms is the copy time hidden behind compute.
  double copy_ms = -1;
  double wait_ms = -1;
};

class PagedKv {
 public:
  // Blocks of one layer at full context: the least device pool that works.
  static int32_t min_device_blocks(const PagedKvParams& p);
  // The one check of a pager request (context creation, the planner, init):
  // WT_ERR_INVALID_ARGUMENT for a block size outside [1, 4096] or a pool below one layer.
  static Status check_shape(int32_t n_ctx, int32_t block_tokens, int32_t n_device_blocks);
  static uint64_t device_pool_bytes(const PagedKvParams& p);
  static uint64_t host_pool_bytes(const PagedKvParams& p);

  // Allocates both pools and everything the bookkeeping will use.
  Status init(Backend& backend, const PagedKvParams& p);
  void release();
  // Empties every layer (a fresh prefill, a reset); queued copies stay ordered before any
  // later write into the slots they touch.
  void clear();

  const PagedKvParams& params() const { return p_; }
  const Tensor& k_pool() const { return k_dev_; }   // [slots * B, n_head_kv, head_dim]
  const Tensor& v_pool() const { return v_dev_; }
  const Tensor& k_host() const { return k_host_; }  // the host tier, same layout (in place: the pool)
  int32_t n_rows(int32_t layer) const { return pager_.table(layer).n_tokens(); }
  const Pager& pager() const { return pager_; }
  PagerCounters counters() const;
  void reset_counters();

  // Appends rows [0, n) of k and v ([>= n, n_head_kv, head_dim] f32) to the layer's KV.
  Status append(OpRunner& run, int32_t layer, const Tensor& k, const Tensor& v, int32_t n);
  // Keeps the layer's first n rows (wt_context_truncate): the blocks past them leave both
  // pools; a ragged last block not on the device is fetched by the next append.
  Status truncate(int32_t layer, int32_t n);
  // Makes the blocks holding the given logical rows (ascending; nullptr: every row) resident
  // on the device; compute work queued after this call sees them.
  Status require(int32_t layer, const int32_t* rows, int32_t n_rows);
  // Starts fetching, on the copy stream, the blocks the layer is predicted to need. Call it
  // between require(layer - 1) and that layer's attention: its needed blocks stay put.
  Status prefetch(int32_t layer);
  // Device-pool rows (or host-pool rows) of the given logical rows (nullptr: 0..n-1), in a
  // buffer of the PagedKv valid until the next call. Device rows need require() first.
  const int32_t* device_rows(int32_t layer, const int32_t* rows, int32_t n) { return tier_rows(layer, rows, n, true); }
  const int32_t* host_rows(int32_t layer, const int32_t* rows, int32_t n) { return tier_rows(layer, rows, n, false); }
  // Rows [0, n_rows(layer)) into the first rows of k_dst / v_dst (after require(all)).
  Status gather(OpRunner& run, int32_t layer, const Tensor& k_dst, const Tensor& v_dst);
  // After a multi-row pass: the host copies are complete (policies read them) and every
  // layer's prediction for the first decode step is all of its blocks, but for layers from
  // bounded_from on, none of its own: a policy that ranks blocks by key bounds built on the
  // host tier (decode_topk) asks for its few blocks once the bounds chose them (prefetch()
  // may still follow the layer before's choice).
  Status finish_prefill(int32_t bounded_from);

 private:
  const int32_t* tier_rows(int32_t layer, const int32_t* rows, int32_t n, bool device);
  Status make_room(int32_t layer, int32_t n_slots);
  // make_room's evictions, short of n_slots without an error when there is not enough to
  // evict. Layer in_use (>= 0: its attention is not queued yet) gives up none of the blocks
  // it needs, nor its newest.
  Status free_slots(int32_t layer, int32_t n_slots, const std::vector<int32_t>& keep, int32_t in_use);
  Status evict(int32_t layer);
  // The missing ones; in_use: a layer whose needed blocks must stay (see free_slots).
  Status fetch(int32_t layer, const std::vector<int32_t>& want, bool on_demand, int32_t in_use = -1);
  Status wait_fetches();
  void set_need_all(int32_t layer);

  Backend* b_ = nullptr;
  PagedKvParams p_;
  Pager pager_;
  Buffer dev_mem_, host_mem_;
  PoolMemory pools_;
  Tensor k_dev_, v_dev_, k_host_, v_host_;
  size_t plane_row_bytes_ = 0;  // one token's K (or V) of one layer
  std::vector<std::vector<int32_t>> need_;  // [n_layer] blocks attention needed last time
  std::vector<int32_t> blocks_, ids_;       // scratch: block lists, key ids [n_ctx]
  std::vector<int32_t> prev_;               // the last required layer's set before this step
  std::vector<int32_t> one_;                // a one-block list
  int32_t prev_layer_ = -1;
  SwapDecision decision_;
  SwapPlan plan_;
  Event last_copy_;   // the newest copy of any kind
  Event last_fetch_;  // the newest fetch compute has not waited for
  bool copies_queued_ = false;
  bool fetch_pending_ = false;
  PagerCounters counters_;
  StreamTimes times0_;  // the backend's stream times at the last reset_counters()
};

}  // namespace wt
