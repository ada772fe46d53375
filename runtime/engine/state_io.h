// Byte streams of a saved context state (context_state.cpp): a sink that writes to a caller's
// buffer or a file, a source that reads from either, and the 64-bit hash both keep over every
// byte that passes, so a load can tell a damaged state before it changes anything. Nothing
// here allocates: a file is read and written through the C library's stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "base/status.h"
#include "runtime/prune/policy.h"

namespace wt {

// A hash of a byte stream, fed in pieces of any size: the same bytes in any split hash the
// same. 64-bit words in four lanes, each word xored in, multiplied by an odd constant and
// folded, then the lanes, the tail and the length mixed: it detects flipped, dropped and
// reordered bytes (not an adversary) at several GB/s.
class StreamHash {
 public:
  void update(const void* data, size_t n);
  uint64_t value() const;

 private:
  static constexpr uint32_t kLanes = 4;  // 32-byte blocks, one word to each lane: independent
                                         // multiply chains the core overlaps
  void mix_block(const uint8_t* block);
  uint64_t lane_[kLanes] = {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                            0x2545f4914f6cdd1dull};
  uint8_t pending_[8 * kLanes] = {};  // the bytes of an unfinished block
  uint32_t n_pending_ = 0;
  uint64_t n_bytes_ = 0;
};

class StateSink final : public StateWriter {
 public:
  // Into buffer[0, capacity): writing past it is WT_ERR_BUFFER_TOO_SMALL.
  StateSink(void* buffer, size_t capacity) : buf_(static_cast<uint8_t*>(buffer)), cap_(capacity) {}
  // Into an open file (the caller closes it).
  explicit StateSink(std::FILE* file) : file_(file) {}

  Status write(const void* data, size_t n) override;
  template <typename T>
  Status put(const T& v) {
    return write(&v, sizeof v);
  }
  // The hash of every byte written so far, then written itself (the trailer).
  Status finish();
  size_t written() const { return n_; }

 private:
  uint8_t* buf_ = nullptr;
  size_t cap_ = 0;
  std::FILE* file_ = nullptr;
  size_t n_ = 0;
  StreamHash hash_;
};

class StateSource final : public StateReader {
 public:
  StateSource(const void* data, size_t size) : data_(static_cast<const uint8_t*>(data)), size_(size) {}
  explicit StateSource(std::FILE* file) : file_(file) {}

  // n bytes into dst; WT_ERR_FORMAT ("the state ends early") where fewer are left.
  Status read(void* dst, size_t n) override;
  template <typename T>
  Status get(T* v) {
    return read(v, sizeof *v);
  }
  // n bytes hashed and dropped, through a fixed buffer.
  Status skip(size_t n);
  // n bytes passed over unread (the checking pass, after verify(): the hash is not kept).
  Status pass_over(size_t n);
  // Reads the trailer and compares it with the hash of everything read before it; then the
  // source must be at its end. WT_ERR_FORMAT otherwise.
  Status finish();
  // The whole source once: the hash of every byte but the last 8 against those 8 (the
  // trailer), then back to the first byte. WT_ERR_FORMAT when they differ: damaged, or cut.
  Status verify();
  // The checking pass's end: what was read must end where the trailer verify() checked
  // begins (sizes that leave bytes over would make the applying pass read its trailer from
  // the middle, after it changed the context). WT_ERR_FORMAT otherwise.
  Status expect_trailer() const;
  // Back to the first byte, hash cleared (the applying pass after the checking one).
  Status rewind();
  size_t consumed() const { return n_; }

 private:
  Status raw(void* dst, size_t n);
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_ = nullptr;
  size_t n_ = 0;
  size_t total_ = 0;  // the whole source's bytes, trailer included (verify)
  StreamHash hash_;
};

}  // namespace wt
