// The host's reads and writes of the arena's device part (context_layout.h): a state's KV and
// anchors, and the anchors' zeros before a pruned prompt. Where that part has a host address
// (the CPU, Vulkan on unified memory) a state's bytes are read and written in place. Where it
// has none (a discrete GPU, CUDA on any, BackendCaps::device_only_unmapped) they go through the host part's
// transfer staging a chunk at a time, copied on the compute stream (so after the kernels that
// wrote them and before those that read them), waited for before the staging is used again.
// Zeros are the backend's own fill on the compute stream everywhere. Not hot: a state's save
// or load, once per pruned prompt.
#include <algorithm>

#include "context.h"

namespace wt {

// Views of the two parts by address: p in the device part, the staging in the host part.
Buffer Context::device_view(const void* p, size_t bytes) const {
  return byte_view(arena_, static_cast<size_t>(static_cast<const char*>(p) - static_cast<const char*>(arena_.device)), bytes);
}

Buffer Context::staging_view(size_t bytes) const {
  return byte_view(host_arena_, static_cast<size_t>(transfer_ - static_cast<const char*>(host_arena_.host)), bytes);
}

Status Context::save_device_bytes(StateSink& out, const void* src, size_t bytes) {
  if (!transfer_) return out.write(src, bytes);
  const char* p = static_cast<const char*>(src);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(transfer_bytes_, bytes - done);
    WT_TRY(backend_->copy_async(Stream::compute, staging_view(n), device_view(p + done, n), n));
    WT_TRY(backend_->synchronize(Stream::compute));
    WT_TRY(out.write(transfer_, n));
    done += n;
  }
  return Status::ok();
}

Status Context::load_device_bytes(StateSource& in, void* dst, size_t bytes) {
  if (!transfer_) return in.read(dst, bytes);
  char* p = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(transfer_bytes_, bytes - done);
    WT_TRY(in.read(transfer_, n));
    WT_TRY(backend_->copy_async(Stream::compute, device_view(p + done, n), staging_view(n), n));
    WT_TRY(backend_->synchronize(Stream::compute));  // the copy has read the staging
    done += n;
  }
  return Status::ok();
}

Status Context::zero_device_bytes(void* dst, size_t bytes) {
  // The backend clears it on the compute stream, after the kernels that read the last
  // prompt's values and before the next prompt's, with or without a host address.
  return backend_->zero_async(Stream::compute, device_view(dst, bytes), bytes);
}

}  // namespace wt
