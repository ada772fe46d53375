// Weight placement on a device backend. The weights are packed, in graph order, into as
// few allocations as the device allows (a chunk never exceeds max_buffer_bytes; a tensor
// never straddles two chunks, since a kernel binds one range of one buffer).
//
// The chunks are MemoryKind::device_only. Where the backend has no memory the host cannot
// address (the CPU; Vulkan on an integrated GPU or lavapipe, where host DRAM is device
// memory) that is the same as device, Buffer::host is set and the upload is a memcpy from the
// mapped GGUF into the mapped device memory. Where it has no host address (CUDA's cudaMalloc
// on any GPU, Vulkan's unmapped VRAM) each chunk is streamed through a pinned staging
// buffer (host_pinned, at most kStagingBytes, its two halves alternating so that filling
// one overlaps the copy of the other) with copy_async on the copy stream. Either way the
// file's pages are dropped afterwards, so the weights are resident once: in VRAM on a
// discrete card, in the backend's allocation on lavapipe and unified boards (CUDA's there:
// cudaMalloc'd, which the iGPU caches, backends/cuda/memory.h).
//
// After placement every weight's Tensor::data is a device address: the host must never
// dereference it again (on a discrete GPU it is not host memory at all). The one tensor
// the host reads, rope_freqs (Context builds its rope divisors from it; no kernel reads
// it), is therefore not placed: ModelDevice keeps a host copy of it.
//
// Unified-memory boards (Jetson) will want no copy at all: importing the mapped file pages
// as device memory (VK_EXT_external_memory_host, cudaHostRegister) makes the weights
// resident once without the transient second copy this load has.
#include "model_device.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "backends/weight_types.h"
#include "context_layout.h"
#include "runtime/model/gguf.h"

namespace wt {

namespace {

constexpr size_t kWeightAlign = 256;  // >= minStorageBufferOffsetAlignment of common devices
// The pinned staging of an upload to device-only memory, both halves together. Transient:
// allocated and freed inside place(), before any context of the model exists, so neither
// the planner (platform/planner.h counts "upload staging" in kDeviceRuntimeOverheadBytes)
// nor a context's budget has it to count against the arena.
constexpr size_t kStagingBytes = size_t{64} << 20;

size_t align_up(size_t n) { return (n + kWeightAlign - 1) / kWeightAlign * kWeightAlign; }

struct WeightRef {
  std::string name;
  Tensor* t;
  size_t bytes;
  size_t chunk;
  size_t offset;
};

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
  // rope_freqs is not here: only the host reads it (see the top of this file).
  for (size_t l = 0; l < m.layers.size(); ++l) {
    LayerWeights& w = m.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::pair<const char*, Tensor*> named[] = {
        {"attn_norm", &w.attn_norm}, {"attn_q", &w.wq},       {"attn_k", &w.wk},     {"attn_v", &w.wv},
        {"attn_q.bias", &w.bq},      {"attn_k.bias", &w.bk},  {"attn_v.bias", &w.bv}, {"attn_output", &w.wo},
        {"attn_q_norm", &w.q_norm},  {"attn_k_norm", &w.k_norm},
        {"ffn_norm", &w.ffn_norm},   {"ffn_gate", &w.w_gate}, {"ffn_up", &w.w_up},   {"ffn_down", &w.w_down},
        {"post_attention_norm", &w.attn_post_norm}, {"post_ffw_norm", &w.ffn_post_norm},
    };
    for (const auto& [name, t] : named) WT_TRY(add(p + name, *t));
  }
  return Status::ok();
}

// Copies the weights of one device-only chunk into it through `staging` (two halves of
// `half` bytes): [pos, pos + n) of the chunk's layout is assembled in one half (weight bytes
// where weights are, zeros in the alignment gaps), then copied on the copy stream. Before a
// half is issued the copy stream is synchronized, which also completes the copy that last
// read the other half: so a half is never refilled while a copy still reads it, and filling
// one overlaps the copy of the other. `*h` is the half to fill next (kept across chunks);
// the caller synchronizes the copy stream once after the last chunk.
Status upload_chunk(Backend& b, const Buffer& dst, size_t chunk_size, const std::vector<const WeightRef*>& in_chunk,
                    const Buffer& staging, size_t half, int* h) {
  char* const stage = static_cast<char*>(staging.host) + staging.offset;
  size_t next = 0;  // the first weight of in_chunk that may still overlap [pos, ...)
  for (size_t pos = 0; pos < chunk_size;) {
    const size_t n = std::min(half, chunk_size - pos), end = pos + n;
    char* const out = stage + static_cast<size_t>(*h) * half;
    size_t cur = pos;  // bytes of [pos, end) assembled so far
    for (size_t i = next; i < in_chunk.size() && in_chunk[i]->offset < end; ++i) {
      const WeightRef& w = *in_chunk[i];
      const size_t w_end = w.offset + w.bytes;
      if (w_end <= pos) continue;
      const size_t from = std::max(w.offset, pos), to = std::min(w_end, end);
      std::memset(out + (cur - pos), 0, from - cur);
      std::memcpy(out + (from - pos), static_cast<const char*>(w.t->data) + (from - w.offset), to - from);
      cur = to;
      if (w_end <= end) next = i + 1;  // done with it
    }
    std::memset(out + (cur - pos), 0, end - cur);
    WT_TRY(b.synchronize(Stream::copy));  // the other half's copy has finished too
    WT_TRY(b.copy_async(Stream::copy, byte_view(dst, pos, n), byte_view(staging, static_cast<size_t>(*h) * half, n), n));
    *h ^= 1;
    pos = end;
  }
  return Status::ok();
}

// Frees a transient buffer on every path out of place() (a failed copy included).
struct TransientBuffer {
  Backend& b;
  Buffer buf;
  ~TransientBuffer() {
    if (buf.host || buf.device) b.free(&buf);
  }
};

}  // namespace

Status ModelDevice::place(std::unique_ptr<Backend> backend, Model* model) {
  if (!backend || !model) return error(WT_ERR_INVALID_ARGUMENT, "placement: null backend or model");
  auto dev = std::make_shared<ModelDevice>();
  dev->backend_ = std::move(backend);
  Backend& b = *dev->backend_;
  const BackendCaps& caps = b.caps();
  const size_t chunk_cap = caps.max_buffer_bytes > 0 ? caps.max_buffer_bytes : size_t{1} << 30;
  // A model no context could run here is refused at load, not at wt_context_create.
  WT_TRY(check_sliding_window(model->hp, false, false, caps.gemma_kernels, caps.name));

  std::vector<WeightRef> weights;
  WT_TRY(collect(*model, &weights));
  // Layout: fill a chunk until the next tensor would overflow it.
  std::vector<size_t> chunk_bytes(1, 0);
  for (WeightRef& w : weights) {
    if (!(caps.weight_types & dtype_bit(w.t->type)))
      return error(WT_ERR_UNSUPPORTED, "placement: weight '" + w.name + "' is " + dtype_name(w.t->type) + "; the " +
                                           std::string(caps.name) + " backend does not read that type yet (" +
                                           weight_type_names(caps.weight_types) + " only)");
    // Weights larger than one binding run in row ranges (matmuls: OpRunner::linears; the
    // embedding table: the backend's embed), so a row, not the tensor, must fit.
    if (caps.max_binding_bytes > 0 && w.t->nb[1] + kBindingSlackBytes > caps.max_binding_bytes)
      return error(WT_ERR_UNSUPPORTED, "placement: weight '" + w.name + "' has rows of " +
                                           std::to_string(w.t->nb[1]) + " bytes; " + std::string(caps.name) +
                                           " binds at most " + std::to_string(caps.max_binding_bytes) +
                                           " bytes, which must hold a row and " +
                                           std::to_string(kBindingSlackBytes) + " bytes of alignment slack");
    if (w.bytes > chunk_cap)
      return error(WT_ERR_UNSUPPORTED, "placement: weight '" + w.name + "' is larger than one " +
                                           std::string(caps.name) + " allocation may be");
    if (align_up(chunk_bytes.back() + w.bytes) > chunk_cap) chunk_bytes.push_back(0);
    w.chunk = chunk_bytes.size() - 1;
    w.offset = chunk_bytes.back();
    chunk_bytes.back() = align_up(w.offset + w.bytes);
  }
  // The one host-read tensor gets a host copy (the file's pages go below).
  if (!model->rope_freqs.empty()) {
    const size_t bytes = sizeof(float) * static_cast<size_t>(model->rope_freqs.n_elems());
    dev->host_rope_freqs_.reset(new (std::nothrow) char[bytes]);
    if (!dev->host_rope_freqs_) return error(WT_ERR_OUT_OF_MEMORY, "placement: cannot copy rope_freqs");
    std::memcpy(dev->host_rope_freqs_.get(), model->rope_freqs.data, bytes);
  }
  // The destructor frees what was allocated if a later step fails.
  size_t largest = 0;  // the largest chunk without a host address
  dev->buffers_.reserve(chunk_bytes.size());  // so that recording a buffer cannot throw
  for (size_t bytes : chunk_bytes) {
    Buffer buf;
    WT_TRY(b.alloc(bytes > 0 ? bytes : kWeightAlign, MemoryKind::device_only, &buf));
    dev->buffers_.push_back(buf);
    if (!buf.device)
      return error(WT_ERR_INTERNAL, std::string("placement: ") + caps.name + " memory has no device address");
    if (!buf.host) largest = std::max(largest, bytes);
  }
  // Host-addressable chunks: a memcpy each. Tensor::data is not changed yet: the staged
  // upload below still reads the file through it.
  std::vector<std::vector<const WeightRef*>> staged(dev->buffers_.size());
  for (const WeightRef& w : weights) {
    const Buffer& buf = dev->buffers_[w.chunk];
    if (buf.host) {
      std::memcpy(static_cast<char*>(buf.host) + buf.offset + w.offset, w.t->data, w.bytes);
    } else {
      staged[w.chunk].push_back(&w);  // in offset order
    }
  }
  if (largest > 0) {
    // Device-only chunks: through pinned staging on the copy stream, freed before returning
    // (transient: see kStagingBytes).
    const size_t half = std::min(kStagingBytes / 2, largest);
    TransientBuffer staging{b, Buffer{}};
    WT_TRY(b.alloc(2 * half, MemoryKind::host_pinned, &staging.buf));
    if (!staging.buf.host)
      return error(WT_ERR_UNSUPPORTED, std::string("placement: ") + caps.name + " pinned memory is not host-mapped");
    int h = 0;
    for (size_t c = 0; c < dev->buffers_.size(); ++c)
      if (!dev->buffers_[c].host)
        WT_TRY(upload_chunk(b, dev->buffers_[c], chunk_bytes[c], staged[c], staging.buf, half, &h));
    WT_TRY(b.synchronize(Stream::copy));  // the last copies have read the staging
  }
  // From here on each weight's data is the device address kernels read; the host never
  // dereferences it (on a discrete GPU it is not host memory).
  for (WeightRef& w : weights) {
    const Buffer& buf = dev->buffers_[w.chunk];
    w.t->data = static_cast<char*>(buf.device) + buf.offset + w.offset;  // contiguous: strides are unchanged
  }
  if (dev->host_rope_freqs_) model->rope_freqs.data = dev->host_rope_freqs_.get();
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
