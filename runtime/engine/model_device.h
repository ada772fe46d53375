// A model whose weights live on a device backend (Vulkan, CUDA): the backend — one device,
// shared by every context of the model — the memory the weights were uploaded to, and the
// lock that hands the backend to one context at a time.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "runtime/model/model.h"
#include "base/status.h"

namespace wt {

class ModelDevice {
 public:
  // Uploads every weight of *model into `backend` memory of kind device_only (a memcpy where
  // that memory has a host address, else through transient pinned staging on the copy
  // stream), points the model's weight tensors there and makes *model own the backend
  // (model->device). Their Tensor::data are then device addresses the host must never
  // dereference; rope_freqs, which only the host reads, points at a host copy instead. The
  // file's pages of tensor data are then released, so the weights are not resident twice
  // after load. Errors: a tensor wider than one binding or allocation may reach
  // (WT_ERR_UNSUPPORTED, naming it), out of device or pinned host memory, or whatever the
  // backend reports.
  static Status place(std::unique_ptr<Backend> backend, Model* model);

  ModelDevice() = default;
  ModelDevice(const ModelDevice&) = delete;
  ModelDevice& operator=(const ModelDevice&) = delete;
  ~ModelDevice();

  Backend& backend() { return *backend_; }
  const Backend& backend() const { return *backend_; }

  // The backend's streams, upload ring and workspace serve one caller at a time
  // (backends/vulkan/README.md), while ARCHITECTURE.md lets contexts of one model run on
  // several threads. So a context holds this lock for the whole of each call that touches
  // the backend (creation, prefill, decode, destruction) and re-installs its workspace
  // when it takes it: contexts on different threads take turns on the device. Letting them
  // overlap needs per-context streams in the backend interface, a later step.
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  // The lock if no call holds the device now (owns_lock() says): for a call that may come
  // from a callback of one already holding it, which lock() would deadlock.
  std::unique_lock<std::mutex> try_lock() { return std::unique_lock<std::mutex>(mutex_, std::try_to_lock); }

 private:
  std::unique_ptr<Backend> backend_;
  std::vector<Buffer> buffers_;  // the weight chunks, freed before the backend goes
  std::unique_ptr<char[]> host_rope_freqs_;  // the model's rope_freqs, when it has them
  std::mutex mutex_;
};

}  // namespace wt
