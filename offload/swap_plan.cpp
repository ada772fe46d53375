#include "swap_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace wt {
namespace {

Status check_ascending(std::span<const int32_t> ids, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || (i > 0 && ids[i] <= ids[i - 1]))
      return error(WT_ERR_INVALID_ARGUMENT, std::string("pager: the ") + what +
                                                " block list must be ascending, without repeats or negative ids");
  return Status::ok();
}

bool contains(std::span<const int32_t> ids, int32_t id) { return std::binary_search(ids.begin(), ids.end(), id); }

size_t count_common(std::span<const int32_t> a, std::span<const int32_t> b) {
  size_t i = 0, j = 0, n = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) ++i;
    else if (b[j] < a[i]) ++j;
    else ++n, ++i, ++j;
  }
  return n;
}

}  // namespace

Status decide_swap(const SwapInput& in, SwapDecision* out) {
  WT_TRY(check_ascending(in.current, "current"));
  WT_TRY(check_ascending(in.candidate, "candidate"));
  WT_TRY(check_ascending(in.pinned, "pinned"));
  if (!(in.gamma >= 0.0 && in.gamma <= 1.0))
    return error(WT_ERR_INVALID_ARGUMENT, "pager: gamma must be in [0, 1]");
  out->leaving.clear();
  out->entering.clear();
  // An empty candidate wants nothing new: treat it as full overlap.
  out->overlap = in.candidate.empty() ? 1.0
                                      : static_cast<double>(count_common(in.current, in.candidate)) /
                                            static_cast<double>(in.candidate.size());
  out->keep = !in.force && out->overlap >= in.gamma;
  if (out->keep) return Status::ok();

  for (int32_t b : in.current)
    if (!contains(in.candidate, b) && !contains(in.pinned, b)) out->leaving.push_back(b);
  // The new set is candidate ∪ pinned, walked in ascending order by a merge.
  size_t i = 0, j = 0;
  while (i < in.candidate.size() || j < in.pinned.size()) {
    int32_t b;
    if (j == in.pinned.size() || (i < in.candidate.size() && in.candidate[i] < in.pinned[j])) b = in.candidate[i++];
    else if (i == in.candidate.size() || in.pinned[j] < in.candidate[i]) b = in.pinned[j++];
    else b = in.candidate[i++], ++j;
    if (!contains(in.current, b)) out->entering.push_back(b);
  }
  return Status::ok();
}

void SwapAccount::add(const SwapAccount& o) {
  n_decisions += o.n_decisions;
  n_kept += o.n_kept;
  n_blocks_in += o.n_blocks_in;
  n_blocks_out += o.n_blocks_out;
  n_write_backs += o.n_write_backs;
  bytes_to_device += o.bytes_to_device;
  bytes_to_host += o.bytes_to_host;
}

void SwapPlan::clear() {
  layer_begin = layer_end = 0;
  leaving.clear();
  entering.clear();
  copies.clear();
  account = SwapAccount{};
}

namespace {

bool resident(const BlockTable& t, int32_t b) { return b < t.n_blocks() && t.at(b).device_slot >= 0; }

// Checks that the pools can take the whole group before any slot is chosen, so a failing
// plan reports the first layer that runs out and has nothing half done.
Status check_capacity(const PlanContext& ctx, int32_t layer_begin, int32_t layer_end, const SwapDecision& d) {
  int64_t device_free = ctx.device->n_free(), host_free = ctx.host->n_free();
  for (int32_t l = layer_begin; l < layer_end; ++l) {
    const BlockTable& t = ctx.tables[static_cast<size_t>(l)];
    for (int32_t b : d.leaving) {
      if (!resident(t, b)) continue;
      ++device_free;  // reusable by entering blocks of this and later layers
      const BlockEntry& e = t.at(b);
      if (!e.host_valid && e.host_slot < 0) --host_free;
    }
    if (host_free < 0) return ctx.host->exhausted(l, static_cast<int32_t>(-host_free));
    for (int32_t b : d.entering) {
      if (b >= t.n_blocks())
        return error(WT_ERR_INVALID_ARGUMENT, "pager: block " + std::to_string(b) + " of layer " + std::to_string(l) +
                                                  " does not exist (" + std::to_string(t.n_blocks()) + " blocks)");
      const BlockEntry& e = t.at(b);
      if (e.device_slot >= 0) continue;
      if (!e.host_valid)
        return error(WT_ERR_INTERNAL, "pager: block " + std::to_string(b) + " of layer " + std::to_string(l) +
                                          " has no valid copy on either tier");
      --device_free;
    }
    if (device_free < 0) return ctx.device->exhausted(l, static_cast<int32_t>(-device_free));
  }
  return Status::ok();
}

}  // namespace

Status plan_swap(const PlanContext& ctx, int32_t layer_begin, int32_t layer_end, const SwapDecision& d,
                 SwapPlan* out) {
  out->clear();
  if (layer_begin < 0 || layer_end < layer_begin || static_cast<size_t>(layer_end) > ctx.tables.size())
    return error(WT_ERR_INVALID_ARGUMENT, "pager: layer range [" + std::to_string(layer_begin) + ", " +
                                              std::to_string(layer_end) + ") is outside the " +
                                              std::to_string(ctx.tables.size()) + " layers");
  out->layer_begin = layer_begin;
  out->layer_end = layer_end;
  out->account.n_decisions = 1;
  if (d.keep) {
    out->account.n_kept = 1;
    return Status::ok();
  }
  if (Status st = check_capacity(ctx, layer_begin, layer_end, d); !st.is_ok()) {
    out->clear();
    return st;
  }

  // Device slots for entering blocks: first those leaving blocks give back (in order), then
  // the pool's free ones from the lowest up. The pool is not changed, so a cursor suffices.
  size_t reuse = 0;
  int32_t device_cursor = -1, host_cursor = -1;
  for (int32_t l = layer_begin; l < layer_end; ++l) {
    const BlockTable& t = ctx.tables[static_cast<size_t>(l)];
    for (int32_t b : d.leaving) {
      if (!resident(t, b)) continue;
      const BlockEntry& e = t.at(b);
      BlockMove m{l, b, e.device_slot, e.host_slot, false, !e.host_valid};
      if (m.host_slot < 0) {
        m.host_slot = host_cursor = ctx.host->next_free(host_cursor + 1);
        m.take_host = true;
      }
      out->leaving.push_back(m);
    }
    for (int32_t b : d.entering) {
      const BlockEntry& e = t.at(b);
      if (e.device_slot >= 0) continue;
      BlockMove m{l, b, -1, e.host_slot, false, false};
      if (reuse < out->leaving.size()) m.device_slot = out->leaving[reuse++].device_slot;
      else m.device_slot = device_cursor = ctx.device->next_free(device_cursor + 1);
      out->entering.push_back(m);
    }
  }

  SwapAccount& a = out->account;
  for (const BlockMove& m : out->leaving) {
    ++a.n_blocks_out;
    if (!m.write_back) continue;
    const size_t bytes = static_cast<size_t>(ctx.tables[static_cast<size_t>(m.layer)].n_rows(m.block)) * ctx.row_bytes;
    out->copies.push_back(CopyCommand{m.layer, m.block, Tier::device, m.device_slot, Tier::host, m.host_slot, bytes});
    ++a.n_write_backs;
    a.bytes_to_host += bytes;
  }
  for (const BlockMove& m : out->entering) {
    const size_t bytes = static_cast<size_t>(ctx.tables[static_cast<size_t>(m.layer)].n_rows(m.block)) * ctx.row_bytes;
    out->copies.push_back(CopyCommand{m.layer, m.block, Tier::host, m.host_slot, Tier::device, m.device_slot, bytes});
    ++a.n_blocks_in;
    a.bytes_to_device += bytes;
  }
  return Status::ok();
}

}  // namespace wt
