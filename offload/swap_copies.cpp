#include "swap_copies.h"

#include <string>

namespace wt {
namespace {

Buffer slot_view(const Buffer& base, int32_t slot, size_t slot_bytes) {
  Buffer v = base;
  v.offset = base.offset + static_cast<size_t>(slot) * slot_bytes;
  v.size_bytes = slot_bytes;
  return v;
}

bool fits(const Buffer& base, int32_t slot, size_t slot_bytes) {
  return slot >= 0 && (static_cast<size_t>(slot) + 1) * slot_bytes <= base.size_bytes;
}

}  // namespace

Status issue_copies(Backend& backend, const SwapPlan& plan, const PoolMemory& mem, const Event* after,
                    Event* out_done) {
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
  for (const CopyCommand& c : plan.copies) {
    for (int p = 0; p < mem.n_planes; ++p) {
      const Buffer& src = c.src == Tier::device ? mem.device[p] : mem.host[p];
      const Buffer& dst = c.dst == Tier::device ? mem.device[p] : mem.host[p];
      WT_TRY(backend.copy_async(Stream::copy, slot_view(dst, c.dst_slot, mem.slot_bytes),
                                slot_view(src, c.src_slot, mem.slot_bytes), c.bytes / planes));
    }
  }
  return backend.record_event(Stream::copy, out_done);
}

}  // namespace wt
