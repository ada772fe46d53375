#include "swap_copies.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace wt {
namespace {

// `bytes` from the start of slot `slot` (slots of slot_bytes; the caller checked the range).
Buffer slot_view(const Buffer& base, int32_t slot, size_t slot_bytes, size_t bytes) {
  Buffer v = base;
  v.offset = base.offset + static_cast<size_t>(slot) * slot_bytes;
  v.size_bytes = bytes;
  return v;
}

bool fits(const Buffer& base, int32_t slot, size_t slot_bytes) {
  return slot >= 0 && (static_cast<size_t>(slot) + 1) * slot_bytes <= base.size_bytes;
}

}  // namespace

Status issue_copies(Backend& backend, const SwapPlan& plan, const PoolMemory& mem, const Event* after,
                    Event* out_done, int64_t* n_transfers) {
  if (mem.n_planes < 1 || mem.n_planes > PoolMemory::kMaxPlanes)
    return error(WT_ERR_INVALID_ARGUMENT, "pager: pool memory has " + std::to_string(mem.n_planes) + " planes");
  const size_t planes = static_cast<size_t>(mem.n_planes);
  // Check every command first, so a bad one never leaves half a plan issued.
  for (const CopyCommand& c : plan.copies) {
    bool ok = c.bytes % planes == 0 && c.bytes / planes <= mem.slot_bytes;
    for (int p = 0; p < mem.n_planes; ++p) {
      const Buffer& src = c.src == Tier::device ? mem.device[p] : mem.host[p];
      const Buffer& dst = c.dst == Tier::device ? mem.device[p] : mem.host[p];
      ok = ok && fits(src, c.src_slot, mem.slot_bytes) && fits(dst, c.dst_slot, mem.slot_bytes);
    }
    if (!ok)
      return error(WT_ERR_INVALID_ARGUMENT, "pager: the copy of layer " + std::to_string(c.layer) + " block " +
                                                std::to_string(c.block) + " falls outside the pool memory");
  }
  if (after) WT_TRY(backend.wait_event(Stream::copy, *after));
  // A run of commands that continue each other (between the two tiers, each source and
  // destination slot the one after the previous command's, every command but the last a
  // whole slot) goes as one copy per plane: blocks fetched into consecutive slots from
  // consecutive host slots are one transfer, not one each. The stream runs copies in order,
  // so write-backs still end before the prefetches after them begin.
  // WT_PAGER_MERGE=0: one copy per command and plane, as before (an A/B on a GPU).
  static const bool merge = [] {
    const char* v = std::getenv("WT_PAGER_MERGE");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  const std::vector<CopyCommand>& cs = plan.copies;
  int64_t transfers = 0;
  for (size_t i = 0; i < cs.size();) {
    size_t j = i + 1;
    size_t bytes = cs[i].bytes / planes;  // per plane
    while (merge && j < cs.size() && cs[j].src == cs[i].src && cs[j].dst == cs[i].dst && cs[i].src != cs[i].dst &&
           cs[j].src_slot == cs[j - 1].src_slot + 1 && cs[j].dst_slot == cs[j - 1].dst_slot + 1 &&
           bytes == (j - i) * mem.slot_bytes) {
      bytes += cs[j].bytes / planes;
      ++j;
    }
    const size_t span = (j - i) * mem.slot_bytes;
    for (int p = 0; p < mem.n_planes; ++p) {
      const Buffer& src = cs[i].src == Tier::device ? mem.device[p] : mem.host[p];
      const Buffer& dst = cs[i].dst == Tier::device ? mem.device[p] : mem.host[p];
      WT_TRY(backend.copy_async(Stream::copy, slot_view(dst, cs[i].dst_slot, mem.slot_bytes, span),
                                slot_view(src, cs[i].src_slot, mem.slot_bytes, span),
                                bytes));
      ++transfers;
    }
    i = j;
  }
  if (n_transfers) *n_transfers += transfers;
  return backend.record_event(Stream::copy, out_done);
}

}  // namespace wt
