// Backend::zero_async checked on one backend, shared by the CPU's unit test
// (unit/test_copy_worker.cpp) and the device backends' parity test (parity/test_zero_async.cpp):
// words zeroed through views at offsets, on the compute stream and on the copy stream
// (ordered by events), nothing outside them, and the arguments every backend refuses alike.
// The buffer is device_only memory, filled and read back through copies, so the same check
// runs on memory the host cannot address (Vulkan's unmapped VRAM, CUDA's cudaMalloc).
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>

#include "backends/backend.h"

namespace wt::test {

inline void check_zero_async(Backend& b) {
  const size_t n = 4096;
  Buffer dev, src, back;
  REQUIRE(b.alloc(n, MemoryKind::device_only, &dev).is_ok());
  REQUIRE(b.alloc(n, MemoryKind::host_pinned, &src).is_ok());
  REQUIRE(b.alloc(n, MemoryKind::host_pinned, &back).is_ok());
  auto pattern = [](size_t i) { return static_cast<unsigned char>(1 + i % 251); };  // never 0
  for (size_t i = 0; i < n; ++i) static_cast<unsigned char*>(src.host)[i] = pattern(i);
  std::memset(back.host, 0, n);
  REQUIRE(b.copy_async(Stream::compute, dev, src, n).is_ok());

  // Compute stream: 1000 bytes at offset 256.
  REQUIRE(b.zero_async(Stream::compute, byte_view(dev, 256, 1000), 1000).is_ok());
  // Copy stream, after the compute stream's copy: src's first 1024 bytes copied to 2048, then
  // the first 512 bytes of that view zeroed (in order with the copy before it).
  Event filled, zeroed;
  REQUIRE(b.record_event(Stream::compute, &filled).is_ok());
  REQUIRE(b.wait_event(Stream::copy, filled).is_ok());
  REQUIRE(b.copy_async(Stream::copy, byte_view(dev, 2048, 1024), src, 1024).is_ok());
  REQUIRE(b.zero_async(Stream::copy, byte_view(dev, 2048, 1024), 512).is_ok());
  REQUIRE(b.record_event(Stream::copy, &zeroed).is_ok());
  REQUIRE(b.wait_event(Stream::compute, zeroed).is_ok());
  CHECK(b.zero_async(Stream::compute, byte_view(dev, 3000, 0), 0).is_ok());  // nothing to do

  // Refused alike everywhere, changing nothing: not whole words, or past the view.
  CHECK(b.zero_async(Stream::compute, byte_view(dev, 3002, 8), 8).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(b.zero_async(Stream::compute, byte_view(dev, 3004, 8), 6).code() == WT_ERR_INVALID_ARGUMENT);
  const Status past = b.zero_async(Stream::compute, byte_view(dev, 3004, 8), 12);
  CHECK(past.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(past.message().find("exceeds a buffer view") != std::string::npos);

  REQUIRE(b.copy_async(Stream::compute, back, dev, n).is_ok());
  REQUIRE(b.synchronize(Stream::compute).is_ok());
  int wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool zero = (i >= 256 && i < 1256) || (i >= 2048 && i < 2560);
    const unsigned char want = zero ? 0 : i >= 2560 && i < 3072 ? pattern(i - 2048) : pattern(i);
    wrong += static_cast<unsigned char*>(back.host)[i] != want;
  }
  CHECK(wrong == 0);
  b.free(&dev);
  b.free(&src);
  b.free(&back);
}

}  // namespace wt::test
