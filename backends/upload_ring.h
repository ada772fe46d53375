// The bookkeeping of a device backend's upload/readback ring: a host-visible buffer the
// kernels read (ids, positions, key rows) or write (host results), handed out as aligned
// slots in submission order. When a slot does not fit after the head, the queued work that
// still reads the ring is drained first and the ring starts over. The memory and the drain
// are the backend's (CUDA: a stream synchronize; Vulkan: the compute queue's).
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace wt {

class UploadRing {
 public:
  explicit UploadRing(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The offset of a slot of `bytes` (0 takes 4) rounded up to `align`, after drain() when
  // it does not fit behind the head. WT_ERR_UNSUPPORTED (naming the backend) when it is
  // larger than the whole ring.
  template <typename Drain>
  Status reserve(size_t bytes, size_t align, const char* backend, Drain&& drain, size_t* out_offset, size_t* out_size) {
    const size_t size = ((bytes == 0 ? 4 : bytes) + align - 1) / align * align;
    if (size > capacity_)
      return error(WT_ERR_UNSUPPORTED, std::string(backend) + ": " + std::to_string(bytes) +
                                           " bytes of host data in one op, the ring holds " + std::to_string(capacity_));
    if (head_ + size > capacity_) {
      WT_TRY(drain());
      head_ = 0;
    }
    *out_offset = head_;
    *out_size = size;
    head_ += size;
    return Status::ok();
  }
  // Nothing queued reads the ring any more (after a synchronize): start over.
  void clear() { head_ = 0; }
  size_t capacity_bytes() const { return capacity_; }

 private:
  size_t capacity_;
  size_t head_ = 0;
};

}  // namespace wt
