#include "context_budget.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/available_memory.h"
#include "base/host_memory.h"

namespace wt {
namespace {

std::string mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return b;
}

// The arena of the same context at n_ctx rows (logits for every row if it keeps them), its
// layers' KV rows at most n_ctx: exact for full KV; for a method sized by max_new_tokens at
// least its rows at that n_ctx (kv_capacity's peak does not grow as the prompt shrinks).
ArenaBytes arena_at(const ArenaInputs& in, int32_t n_ctx) {
  ArenaInputs at = in;
  at.n_ctx = n_ctx;
  at.n_logit_rows = in.n_logit_rows > 1 ? n_ctx : 1;
  std::vector<int32_t> rows;
  if (in.kv_rows) {
    rows = *in.kv_rows;
    for (int32_t& r : rows) r = std::min(r, n_ctx);
    at.kv_rows = &rows;
  }
  return lay_out_arena(at, ArenaBases{}, nullptr);
}

// The arena of the same context with n_batch_rows = rows.
ArenaBytes arena_with_rows(const ArenaInputs& in, int32_t rows) {
  ArenaInputs at = in;
  at.n_batch_rows = rows;
  return lay_out_arena(at, ArenaBases{}, nullptr);
}

// The most rows in steps of kBatchRowsStep below `below` whose arena fits (0: none).
int32_t most_rows_that_fit(const ArenaInputs& in, int32_t below, const MemoryLimit& limit) {
  return largest_batch_rows(below, [&](int32_t rows) { return limit.fits(arena_with_rows(in, rows)); });
}

}  // namespace

uint64_t device_bytes(const ArenaBytes& a) { return a.total_bytes - a.host_bytes + a.pager_device_bytes; }
uint64_t pinned_host_bytes(const ArenaBytes& a) { return a.host_bytes + a.pager_host_bytes; }

bool MemoryLimit::fits(const ArenaBytes& a) const {
  if (budget_bytes > 0 && a.all_bytes() > budget_bytes) return false;
  if (available_bytes > 0 && (device_only ? device_bytes(a) : a.all_bytes()) > available_bytes) return false;
  return !device_only || host_available_bytes == 0 || pinned_host_bytes(a) <= host_available_bytes;
}

MemoryLimit::Bound MemoryLimit::bound(const ArenaBytes& a) const {
  std::vector<Bound> set;
  if (budget_bytes > 0) set.push_back({Part::all, a.all_bytes(), budget_bytes, "memory_budget_bytes"});
  if (available_bytes > 0)
    set.push_back(device_only ? Bound{Part::device, device_bytes(a), available_bytes,
                                      "the device memory available now (" + source + ")"}
                              : Bound{Part::all, a.all_bytes(), available_bytes, "the memory available now (" + source + ")"});
  if (device_only && host_available_bytes > 0)
    set.push_back({Part::host, pinned_host_bytes(a), host_available_bytes,
                   "the host memory available now (/proc/meminfo), for the pinned host parts"});
  if (set.empty()) return Bound{Part::all, a.all_bytes(), 0, "no limit"};
  // The largest shortfall, or the smallest headroom.
  const auto over = [](const Bound& b) { return static_cast<double>(b.counted) - static_cast<double>(b.limit); };
  return *std::max_element(set.begin(), set.end(), [&](const Bound& x, const Bound& y) { return over(x) < over(y); });
}

Status memory_limit(uint64_t budget_bytes, const Backend& backend, MemoryLimit* out) {
  MemoryLimit m;
  m.budget_bytes = budget_bytes;
  AvailableMemory mem;
  // A machine that reports no figures is checked against the budget alone; one that has
  // no memory left to read them is out of memory, not unmeasured.
  const Status detected = available_memory(backend, &mem);
  if (detected.code() == WT_ERR_OUT_OF_MEMORY) return detected;
  if (detected.is_ok() && mem.available_bytes > 0) {
    m.available_bytes = mem.available_bytes;
    m.device_only = !mem.unified;
    m.source = mem.source;
  }
  if (m.device_only) {  // the pinned host parts live in the host's memory
    HostMemory host;
    const Status read = read_host_memory(&host);
    if (read.code() == WT_ERR_OUT_OF_MEMORY) return read;
    if (read.is_ok()) m.host_available_bytes = host.available_bytes;
  }
  *out = std::move(m);
  return Status::ok();
}

int32_t fit_batch_rows(const ArenaInputs& in, const MemoryLimit& limit) {
  if (in.n_batch_rows != 0 || limit.none() || limit.fits(lay_out_arena(in, ArenaBases{}, nullptr))) return 0;
  return most_rows_that_fit(in, std::min(WT_BATCH_ROWS_DEFAULT, in.n_ctx), limit);
}

int32_t refused_batch_rows(const ArenaInputs& in, const MemoryLimit& limit) {
  if (in.n_batch_rows != 0 || in.n_ctx <= kBatchRowsStep) return 0;
  return limit.fits(arena_with_rows(in, kBatchRowsStep)) ? 0 : kBatchRowsStep;
}

Status check_arena_budget(const ArenaInputs& in, const ArenaBytes& asked, const MemoryLimit& limit) {
  if (limit.fits(asked)) return Status::ok();

  // With the default n_batch_rows the context would have run as few as one step of rows
  // (fit_batch_rows): the parts, the shortfall and the n_ctx that fits are those at it.
  ArenaInputs least = in;
  const int32_t fewest = refused_batch_rows(in, limit);
  const bool at_least = fewest != 0;
  if (at_least) least.n_batch_rows = fewest;
  const ArenaBytes need = at_least ? lay_out_arena(least, ArenaBases{}, nullptr) : asked;
  // The arena grows with n_ctx: the largest n_ctx that fits, by bisection.
  int32_t lo = 0, hi = in.n_ctx;  // arena_at(lo) fits (or lo = 0), arena_at(hi) does not
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    (limit.fits(arena_at(least, mid)) ? lo : hi) = mid;
  }
  // An n_batch_rows the caller set: a smaller one may fit at this n_ctx.
  const int32_t rows = in.n_batch_rows == 0 ? 0 : most_rows_that_fit(in, std::min(in.n_batch_rows, in.n_ctx), limit);
  // Each part, and its pinned host share (context_layout.h: the logits, the index arrays and
  // transfer staging, the policies' host part, the pager's host pool); the rest is device
  // memory on a discrete device.
  const uint64_t host_index = need.host_bytes - need.logits_bytes - need.prune_host_bytes;
  struct Part {
    const char* name;
    uint64_t bytes, host;
  };
  const Part parts[] = {
      {"kv cache", need.kv_bytes, 0},
      {"activations", need.activations_bytes, 0},
      {"op workspace", need.workspace_bytes, 0},
      {"logits", need.logits_bytes, need.logits_bytes},
      {"index + scratch", need.index_bytes, host_index},
      {"pruning state", need.prune_bytes, need.prune_host_bytes},
      {"pager device pool", need.pager_device_bytes, 0},
      {"pager host pool", need.pager_host_bytes, need.pager_host_bytes},
  };
  const MemoryLimit::Bound b = limit.bound(need);
  // The largest part of what the bound counts.
  const auto counted = [&](const Part& p) {
    return b.part == MemoryLimit::Part::device ? p.bytes - p.host : b.part == MemoryLimit::Part::host ? p.host : p.bytes;
  };
  std::string list;
  const char* largest = parts[0].name;
  uint64_t largest_bytes = 0;
  for (const Part& p : parts) {
    if (p.bytes == 0 && std::string(p.name).starts_with("pager")) continue;  // no pager
    list += (list.empty() ? "" : ", ") + std::string(p.name) + " " + mib(p.bytes);
    if (counted(p) > largest_bytes) largest = p.name, largest_bytes = counted(p);
  }
  std::string msg = "the context needs " + mib(need.all_bytes()) + " MiB (" + list + " MiB" +
                    (at_least ? ", at " + std::to_string(kBatchRowsStep) + " rows at once" : "") + ")";
  if (b.part != MemoryLimit::Part::all)
    msg += ", " + mib(b.counted) + " MiB of it " + (b.part == MemoryLimit::Part::device ? "device" : "pinned host") +
           " memory,";
  msg += " but " + b.source + " allows " + mib(b.limit) + " MiB: short by " +
         mib(b.counted > b.limit ? b.counted - b.limit : 0) + " MiB; the " + largest + " is the largest part. ";
  msg += lo > 0 ? "An n_ctx of at most " + std::to_string(lo) + " fits (now " + std::to_string(in.n_ctx) + ")"
                : "No n_ctx fits: the fixed parts alone exceed the limit";
  if (rows > 0)
    msg += ", or an n_batch_rows of " + std::to_string(rows) + " (the most in steps of " + std::to_string(kBatchRowsStep) +
           " that fits; now " + std::to_string(in.n_batch_rows) + ")";
  if (in.n_logit_rows > 1 && b.part != MemoryLimit::Part::device) msg += "; logits_all keeps n_ctx rows of logits";
  return error(WT_ERR_BUDGET, msg);
}

}  // namespace wt
