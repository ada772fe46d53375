// Backend::zero_async checked on one backend, shared by the CPU's unit test
// (unit/test_copy_worker.cpp) and the device backends' parity test (parity/test_zero_async.cpp):
// words zeroed through views at offsets, after a kernel that wrote them and before one that
// reads them on the compute stream, after a copy into them on the copy stream (ordered by
// events), nothing outside them, and the arguments every backend refuses alike. The buffer is
// device_only memory, filled and read back through copies, so the same check runs on memory
// the host cannot address (Vulkan's unmapped VRAM, CUDA's cudaMalloc).
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "backends/backend.h"
#include "kernels/ops.h"

namespace wt::test {

inline void check_zero_async(Backend& b) {
  const int64_t n = 1024;  // floats
  const size_t bytes = n * sizeof(float);
  Buffer dev, out, src, back, back_out;
  REQUIRE(b.alloc(bytes, MemoryKind::device_only, &dev).is_ok());
  REQUIRE(b.alloc(bytes, MemoryKind::device_only, &out).is_ok());
  REQUIRE(b.alloc(bytes, MemoryKind::host_pinned, &src).is_ok());
  REQUIRE(b.alloc(bytes, MemoryKind::host_pinned, &back).is_ok());
  REQUIRE(b.alloc(bytes, MemoryKind::host_pinned, &back_out).is_ok());
  float* const s = static_cast<float*>(src.host);
  for (int64_t i = 0; i < n; ++i) s[i] = static_cast<float>(i + 1);  // never 0
  std::memset(back.host, 0xff, bytes);
  std::memset(back_out.host, 0xff, bytes);
  const Tensor dev_t = make_tensor_2d(dev.device, DType::f32, n, 1);
  const Tensor out_t = make_tensor_2d(out.device, DType::f32, n, 1);
  const Tensor src_t = make_tensor_2d(src.device, DType::f32, n, 1);

  // Compute stream: a kernel adds src to dev in place (2 src), floats 64..313 (bytes
  // 256..1255) are zeroed after it, and a second kernel reads them (out = dev + src): a zero
  // that ran before the first kernel or after the second leaves no 0 there.
  REQUIRE(b.copy_async(Stream::compute, dev, src, bytes).is_ok());
  REQUIRE(b.launch(AddOp{.dst = dev_t, .a = dev_t, .b = src_t}).is_ok());
  REQUIRE(b.zero_async(Stream::compute, byte_view(dev, 256, 1000), 1000).is_ok());
  REQUIRE(b.launch(AddOp{.dst = out_t, .a = dev_t, .b = src_t}).is_ok());
  // Copy stream, after all that: src's first 256 floats copied to floats 512..767, then the
  // first 128 of them zeroed (the first 512 bytes of a 1024-byte view), in order with the copy.
  Event computed, zeroed;
  REQUIRE(b.record_event(Stream::compute, &computed).is_ok());
  REQUIRE(b.wait_event(Stream::copy, computed).is_ok());
  REQUIRE(b.copy_async(Stream::copy, byte_view(dev, 2048, 1024), src, 1024).is_ok());
  REQUIRE(b.zero_async(Stream::copy, byte_view(dev, 2048, 1024), 512).is_ok());
  REQUIRE(b.record_event(Stream::copy, &zeroed).is_ok());
  REQUIRE(b.wait_event(Stream::compute, zeroed).is_ok());
  CHECK(b.zero_async(Stream::compute, byte_view(dev, 3000, 0), 0).is_ok());  // nothing to do

  // Refused alike everywhere, changing nothing: not whole words, or past the view.
  CHECK(b.zero_async(Stream::compute, byte_view(dev, 3002, 8), 8).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(b.zero_async(Stream::compute, byte_view(dev, 3004, 8), 6).code() == WT_ERR_INVALID_ARGUMENT);
  Buffer unaligned = byte_view(dev, 0, 8);  // a view whose own address is off a word
  unaligned.device = static_cast<char*>(dev.device) + 3002;
  unaligned.host = dev.host ? static_cast<char*>(dev.host) + 3002 : nullptr;
  CHECK(b.zero_async(Stream::compute, unaligned, 8).code() == WT_ERR_INVALID_ARGUMENT);
  const Status past = b.zero_async(Stream::compute, byte_view(dev, 3004, 8), 12);
  CHECK(past.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(past.message().find("exceeds a buffer view") != std::string::npos);

  REQUIRE(b.copy_async(Stream::compute, back, dev, bytes).is_ok());
  REQUIRE(b.copy_async(Stream::compute, back_out, out, bytes).is_ok());
  REQUIRE(b.synchronize(Stream::compute).is_ok());
  const float* const d = static_cast<const float*>(back.host);
  const float* const o = static_cast<const float*>(back_out.host);
  int wrong = 0, wrong_out = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool zero_compute = i >= 64 && i < 314;
    const float doubled = zero_compute ? 0.0f : 2.0f * s[i];
    const float want = (i >= 512 && i < 640) ? 0.0f : (i >= 640 && i < 768) ? s[i - 512] : doubled;
    wrong += d[i] != want;
    wrong_out += o[i] != doubled + s[i];
  }
  CHECK(wrong == 0);
  CHECK(wrong_out == 0);
  for (Buffer* buf : {&dev, &out, &src, &back, &back_out}) b.free(buf);
}

}  // namespace wt::test
