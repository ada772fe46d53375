#include "copy_probe.h"

#include <chrono>
#include <cstring>
#include <string>

namespace wt {

Status measure_copy_bandwidth(Backend& backend, size_t bytes, double* out_gbs) {
  constexpr size_t kMin = size_t{1} << 20, kMax = size_t{1} << 30;
  if (bytes < kMin || bytes > kMax)
    return error(WT_ERR_INVALID_ARGUMENT,
                 "copy bandwidth: bytes is " + std::to_string(bytes) + ", outside [1 MiB, 1 GiB]");
  Buffer host{}, dev{};
  WT_TRY(backend.alloc(bytes, MemoryKind::host_pinned, &host));
  Status st = backend.alloc(bytes, MemoryKind::device_only, &dev);
  double best_s = 0;
  if (st.is_ok()) {
    std::memset(static_cast<char*>(host.host) + host.offset, 0x5A, bytes);  // pages touched, not first faults
    for (int i = 0; i < 4 && st.is_ok(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      st = backend.copy_async(Stream::copy, dev, host, bytes);
      if (st.is_ok()) st = backend.synchronize(Stream::copy);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i > 0 && (best_s == 0 || s < best_s)) best_s = s;  // i == 0: the warm-up
    }
  }
  if (dev.size_bytes) backend.free(&dev);
  backend.free(&host);
  WT_TRY(st);
  *out_gbs = best_s > 0 ? static_cast<double>(bytes) / best_s / 1e9 : 0;
  return Status::ok();
}

}  // namespace wt
