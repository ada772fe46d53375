// Saved-state streams (state_io.h).
#include "state_io.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace wt {

namespace {

constexpr uint64_t kMul = 0xff51afd7ed558ccdull;

uint64_t fold(uint64_t h, uint64_t word) {
  h ^= word;
  h *= kMul;
  return h ^ (h >> 29);
}

}  // namespace

void StreamHash::mix_block(const uint8_t* block) {
  for (uint32_t l = 0; l < kLanes; ++l) {
    uint64_t w;
    std::memcpy(&w, block + 8 * l, 8);
    lane_[l] = fold(lane_[l], w);
  }
}

void StreamHash::update(const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  n_bytes_ += n;
  constexpr uint32_t kBlock = sizeof pending_;
  if (n_pending_ > 0) {  // finish the block an earlier piece began
    const size_t take = std::min<size_t>(n, kBlock - n_pending_);
    std::memcpy(pending_ + n_pending_, p, take);
    n_pending_ += static_cast<uint32_t>(take);
    p += take;
    n -= take;
    if (n_pending_ < kBlock) return;
    mix_block(pending_);
    n_pending_ = 0;
  }
  for (; n >= kBlock; n -= kBlock, p += kBlock) mix_block(p);
  std::memcpy(pending_, p, n);
  n_pending_ = static_cast<uint32_t>(n);
}

uint64_t StreamHash::value() const {
  uint64_t h = n_bytes_;
  for (uint32_t l = 0; l < kLanes; ++l) h = fold(h, lane_[l]);
  for (uint32_t i = 0; i < n_pending_; ++i) h = fold(h, pending_[i] + (uint64_t{i} << 8));
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

Status StateSink::write(const void* data, size_t n) {
  if (n == 0) return Status::ok();
  if (file_) {
    if (std::fwrite(data, 1, n, file_) != n) return error(WT_ERR_IO, "writing the state file failed");
  } else {
    if (n > cap_ - n_)
      return error(WT_ERR_BUFFER_TOO_SMALL, "the buffer of " + std::to_string(cap_) + " bytes is too small for the state");
    std::memcpy(buf_ + n_, data, n);
  }
  hash_.update(data, n);
  n_ += n;
  return Status::ok();
}

Status StateSink::finish() {
  const uint64_t h = hash_.value();
  return write(&h, sizeof h);
}

Status StateSource::raw(void* dst, size_t n) {
  if (n == 0) return Status::ok();
  if (file_) {
    if (std::fread(dst, 1, n, file_) != n) {
      if (std::ferror(file_)) return error(WT_ERR_IO, "reading the state file failed");
      return error(WT_ERR_FORMAT, "the state ends early, after " + std::to_string(n_ + 0) + " bytes (truncated?)");
    }
  } else {
    if (n > size_ - n_)
      return error(WT_ERR_FORMAT, "the state ends early: " + std::to_string(size_) + " bytes (truncated?)");
    std::memcpy(dst, data_ + n_, n);
  }
  n_ += n;
  return Status::ok();
}

Status StateSource::read(void* dst, size_t n) {
  WT_TRY(raw(dst, n));
  hash_.update(dst, n);
  return Status::ok();
}

Status StateSource::skip(size_t n) {
  uint8_t chunk[16384];
  while (n > 0) {
    const size_t m = n < sizeof chunk ? n : sizeof chunk;
    WT_TRY(read(chunk, m));
    n -= m;
  }
  return Status::ok();
}

Status StateSource::pass_over(size_t n) {
  if (file_) {
    // fseek takes a long: large skips in steps (a state past 2 GiB on a 32-bit long).
    while (n > 0) {
      const size_t step = n < (size_t{1} << 30) ? n : (size_t{1} << 30);
      if (std::fseek(file_, static_cast<long>(step), SEEK_CUR) != 0) return error(WT_ERR_IO, "cannot seek in the state file");
      n -= step;
      n_ += step;
    }
    return Status::ok();
  }
  if (n > size_ - n_) return error(WT_ERR_FORMAT, "the state ends early: " + std::to_string(size_) + " bytes (truncated?)");
  n_ += n;
  return Status::ok();
}

Status StateSource::finish() {
  const uint64_t want = hash_.value();
  uint64_t got = 0;
  WT_TRY(raw(&got, sizeof got));
  if (got != want) return error(WT_ERR_FORMAT, "the state is damaged: its checksum does not match its bytes");
  uint8_t extra = 0;
  const bool more = file_ ? std::fread(&extra, 1, 1, file_) == 1 : n_ < size_;
  if (more) return error(WT_ERR_FORMAT, "the state has bytes after its end");
  return Status::ok();
}

Status StateSource::verify() {
  size_t total = size_;
  if (file_) {
    if (std::fseek(file_, 0, SEEK_END) != 0) return error(WT_ERR_IO, "cannot seek in the state file");
    const long end = std::ftell(file_);
    if (end < 0) return error(WT_ERR_IO, "cannot tell the state file's size");
    total = static_cast<size_t>(end);
  }
  if (total < sizeof(uint64_t)) return error(WT_ERR_FORMAT, "the state ends early: " + std::to_string(total) + " bytes");
  total_ = total;
  WT_TRY(rewind());
  WT_TRY(skip(total - sizeof(uint64_t)));
  const uint64_t want = hash_.value();
  uint64_t got = 0;
  WT_TRY(raw(&got, sizeof got));
  if (got != want)
    return error(WT_ERR_FORMAT, "the state is damaged or cut short: its checksum does not match its bytes");
  return rewind();
}

Status StateSource::expect_trailer() const {
  if (n_ + sizeof(uint64_t) != total_)
    return error(WT_ERR_FORMAT, "the state's parts end at byte " + std::to_string(n_) + ", its trailer at " +
                                    std::to_string(total_ - sizeof(uint64_t)) + " (inconsistent sizes)");
  return Status::ok();
}

Status StateSource::rewind() {
  if (file_ && std::fseek(file_, 0, SEEK_SET) != 0) return error(WT_ERR_IO, "cannot seek in the state file");
  n_ = 0;
  hash_ = StreamHash();
  return Status::ok();
}

}  // namespace wt
