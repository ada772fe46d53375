// Weight placement on a device backend. The weights are packed, in graph order, into as
// few allocations as the device allows (a chunk never exceeds max_buffer_bytes; a tensor
// never straddles two chunks, since a kernel binds one range of one buffer).
//
// Today every allocation of the Vulkan backend is host-visible and mapped, so the upload
// is a memcpy from the mapped GGUF into the mapped device memory, after which the file's
// pages are dropped: on a discrete card the weights then live only in VRAM (or in a
// DEVICE_LOCAL|HOST_VISIBLE window of it), on lavapipe only in the backend's allocation.
// Unified-memory boards (Jetson) will want no copy at all: importing the mapped file pages
// as device memory (VK_EXT_external_memory_host, cudaHostRegister) makes the weights
// resident once without the transient second copy this load has. Devices whose
// device-local memory is not mappable will need a staging buffer and copy_async on the
// copy stream instead of the memcpy.
#include "model_device.h"

#include <cstring>
#include <string>
#include <utility>

#include "runtime/model/gguf.h"

namespace wt {

namespace {

constexpr size_t kWeightAlign = 256;  // >= minStorageBufferOffsetAlignment of common devices

size_t align_up(size_t n) { return (n + kWeightAlign - 1) / kWeightAlign * kWeightAlign; }

struct WeightRef {
  std::string name;
  Tensor* t;
  size_t bytes;
  size_t chunk;
  size_t offset;
};

std::string supported_types(uint64_t bits) {
  std::string s;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q4_0, DType::q4_1, DType::q8_0, DType::q4_k,
                  DType::q5_k, DType::q6_k})
    if (bits & dtype_bit(t)) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

Status collect(Model& m, std::vector<WeightRef>* out) {
  auto add = [&](const std::string& name, Tensor& t) -> Status {
    if (t.empty()) return Status::ok();  // optional tensor absent
    size_t row_bytes = 0;
    if (!dtype_row_bytes(t.type, t.ne[0], &row_bytes))
      return error(WT_ERR_INTERNAL, "placement: " + name + " rows are not whole blocks");
    out->push_back({name, &t, row_bytes * static_cast<size_t>(t.n_rows()), 0, 0});
    return Status::ok();
  };
  WT_TRY(add("token_embd", m.tok_embd));
  WT_TRY(add("output_norm", m.output_norm));
  if (!m.tied_output) WT_TRY(add("output", m.output));
  WT_TRY(add("rope_freqs", m.rope_freqs));
  for (size_t l = 0; l < m.layers.size(); ++l) {
    LayerWeights& w = m.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::pair<const char*, Tensor*> named[] = {
        {"attn_norm", &w.attn_norm}, {"attn_q", &w.wq},       {"attn_k", &w.wk},     {"attn_v", &w.wv},
        {"attn_q.bias", &w.bq},      {"attn_k.bias", &w.bk},  {"attn_v.bias", &w.bv}, {"attn_output", &w.wo},
        {"ffn_norm", &w.ffn_norm},   {"ffn_gate", &w.w_gate}, {"ffn_up", &w.w_up},   {"ffn_down", &w.w_down},
    };
    for (const auto& [name, t] : named) WT_TRY(add(p + name, *t));
  }
  return Status::ok();
}

}  // namespace

Status ModelDevice::place(std::unique_ptr<Backend> backend, Model* model) {
  if (!backend || !model) return error(WT_ERR_INVALID_ARGUMENT, "placement: null backend or model");
  auto dev = std::make_shared<ModelDevice>();
  dev->backend_ = std::move(backend);
  Backend& b = *dev->backend_;
  const BackendCaps& caps = b.caps();
  const size_t chunk_cap = caps.max_buffer_bytes > 0 ? caps.max_buffer_bytes : size_t{1} << 30;

  std::vector<WeightRef> weights;
  WT_TRY(collect(*model, &weights));
  // Layout: fill a chunk until the next tensor would overflow it.
  std::vector<size_t> chunk_bytes(1, 0);
  for (WeightRef& w : weights) {
    if (!(caps.weight_types & dtype_bit(w.t->type)))
      return error(WT_ERR_UNSUPPORTED, "placement: weight '" + w.name + "' is " + dtype_name(w.t->type) + "; the " +
                                           std::string(caps.name) + " backend does not read that type yet (" +
                                           supported_types(caps.weight_types) + " only)");
    if (caps.max_binding_bytes > 0 && w.bytes > caps.max_binding_bytes)
      return error(WT_ERR_UNSUPPORTED, "placement: weight '" + w.name + "' is " + std::to_string(w.bytes) + " bytes, " +
                                           std::string(caps.name) + " binds at most " +
                                           std::to_string(caps.max_binding_bytes) + " bytes per tensor");
    if (w.bytes > chunk_cap)
      return error(WT_ERR_UNSUPPORTED, "placement: weight '" + w.name + "' is larger than one " +
                                           std::string(caps.name) + " allocation may be");
    if (align_up(chunk_bytes.back() + w.bytes) > chunk_cap) chunk_bytes.push_back(0);
    w.chunk = chunk_bytes.size() - 1;
    w.offset = chunk_bytes.back();
    chunk_bytes.back() = align_up(w.offset + w.bytes);
  }
  // The destructor frees what was allocated if a later step fails.
  for (size_t bytes : chunk_bytes) {
    Buffer buf;
    WT_TRY(b.alloc(bytes > 0 ? bytes : kWeightAlign, MemoryKind::device, &buf));
    dev->buffers_.push_back(buf);
    if (!buf.host) return error(WT_ERR_UNSUPPORTED, std::string("placement: ") + caps.name + " memory is not host-mapped");
  }
  for (WeightRef& w : weights) {
    char* dst = static_cast<char*>(dev->buffers_[w.chunk].host) + dev->buffers_[w.chunk].offset + w.offset;
    std::memcpy(dst, w.t->data, w.bytes);
    w.t->data = dst;  // contiguous: strides are unchanged
  }
  if (model->tied_output) model->output = model->tok_embd;
  if (model->file) model->file->release_tensor_pages();
  model->device = std::move(dev);
  return Status::ok();
}

ModelDevice::~ModelDevice() {
  if (!backend_) return;
  for (Buffer& buf : buffers_) backend_->free(&buf);
}

}  // namespace wt
