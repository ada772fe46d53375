// The backend interface: a device that owns memory and queues and runs the ops of
// kernels/ops.def. Modelled on a HAL; every entry returns Status. A backend never knows
// about pruning methods or models.
//
// Ordering model: two in-order streams per backend, compute and copy. Work on one stream
// runs in submission order; work on different streams is ordered only through events
// (record_event on one, wait_event on the other). synchronize(stream) blocks the host until
// the stream is idle. Nothing here allocates after the engine's arenas are made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "kernels/ops.h"
#include "base/status.h"

namespace wt {

enum class MemoryKind {
  device,       // device-local (for the CPU backend: ordinary host memory)
  host_pinned,  // page-locked host memory the device can reach (pager's host tier)
  host,         // pageable host memory
  device_only,  // device-local memory the host cannot address: Buffer::host == nullptr, filled
                // only through copy_async and kernels (the weights, the contexts' arenas'
                // device parts and the pager's device pool on a discrete GPU, and with CUDA on
                // any GPU). A backend without such memory (the CPU; Vulkan on an integrated GPU
                // or lavapipe) returns the same as for device,
                // host address and Buffer::kind == device included; so a caller writes through
                // Buffer::host when it is set and stages through copy_async when it is not.
};

// A view of backend memory. host is the host address when the memory is mappable
// (always on the CPU; nullptr for device_only memory that really is device-only), device
// the address kernels use. Views never own memory.
struct Buffer {
  void* host = nullptr;
  void* device = nullptr;
  uint64_t handle = 0;  // backend-specific (a VkBuffer, an allocation id)
  size_t offset = 0;
  size_t size_bytes = 0;
  MemoryKind kind = MemoryKind::device;
};

// The view of `bytes` bytes at `offset` into a view (copies take views; so do kernels' binds).
inline Buffer byte_view(const Buffer& base, size_t offset, size_t bytes) {
  Buffer v = base;
  v.offset = base.offset + offset;
  v.size_bytes = bytes;
  return v;
}

// zero_async's arguments, the same on every backend: within the view, in whole 4-byte words
// (the address Buffer::device + offset and bytes; allocations start 64-byte aligned, so on
// Vulkan the offset within the VkBuffer is a whole word too).
inline Status check_zero_range(const char* backend, const Buffer& dst, size_t bytes) {
  if (bytes > dst.size_bytes)
    return error(WT_ERR_INVALID_ARGUMENT, std::string(backend) + ": zeroing " + std::to_string(bytes) +
                                              " bytes exceeds a buffer view of " + std::to_string(dst.size_bytes));
  const uintptr_t at = reinterpret_cast<uintptr_t>(dst.device) + dst.offset;
  if (at % 4 != 0 || bytes % 4 != 0)
    return error(WT_ERR_INVALID_ARGUMENT, std::string(backend) + ": zeroing " + std::to_string(bytes) +
                                              " bytes at view offset " + std::to_string(dst.offset) +
                                              ": the address and the size must be multiples of 4");
  return Status::ok();
}

enum class Stream { compute = 0, copy = 1 };

struct Event {
  uint64_t value = 0;  // a point on the stream's timeline
  Stream stream = Stream::compute;
};

// Where a binding starts is rounded down to the device's offset alignment (at most 256 bytes)
// and its end up to a word: a range of a tensor's rows binds at most this much more than the
// rows themselves (the row ranges of a tensor larger than max_binding_bytes).
constexpr size_t kBindingSlackBytes = 512;
// Rows of row_bytes each that one binding of limit bytes holds with that slack (0: not one).
inline int64_t rows_per_binding(size_t limit, size_t row_bytes) {
  return limit > kBindingSlackBytes && row_bytes > 0 ? static_cast<int64_t>((limit - kBindingSlackBytes) / row_bytes)
                                                     : 0;
}

struct BackendCaps {
  const char* name = "";       // "cpu"
  std::string device_name;     // "Intel Xeon (AVX-512 VNNI)"
  bool unified_memory = false; // device memory is host DRAM (CPU, Jetson)
  bool device_only_unmapped = false; // device_only memory has no host address (a discrete GPU; CUDA everywhere):
                                     // the host reaches it through copy_async only
  bool has_copy_queue = false; // copies overlap compute on a separate engine
  bool reads_any_host_pointer = false; // ops may take any host address, not only this backend's memory (CPU)
  size_t max_buffer_bytes = 0; // largest single allocation
  size_t max_binding_bytes = 0;// largest range one kernel argument may bind
  uint64_t queued_work_bytes = 0; // host memory the driver may hold for recorded, unfinished work,
                                  // at most (Vulkan: its command storage; an estimate)
  uint64_t weight_types = 0;   // the DTypes its matmul and embed read: bit (1 << DType value)
  uint64_t kv_types = 0;       // the KV cache types its kernels read and write (same bits)
  int64_t fused_matmul_k = 0;  // MatmulOp's fusions (norm, gate, bias, accumulate, rope, glu) run for
                               // x rows up to this long; 0: the backend has none
  bool fuse_rope = false;      // the engine folds rope into a decode step's Q, K, V matmul too
                               // (where that is faster than rope's own launch)
  bool fuse_glu = false;       // the engine folds swiglu into a decode step's gate and up matmul
                               // (MatmulOp::glu) instead of into the down projection's input
  bool gemma_kernels = false;  // EmbedOp::scale, SwigluOp::gelu and attention windows (Gemma 3);
                               // launches that need them are refused elsewhere
  int n_threads = 1;
  const char* simd = "";       // ISA of the hot kernels ("avx512-vnni")
};

inline constexpr uint64_t dtype_bit(DType t) { return uint64_t{1} << static_cast<uint32_t>(t); }

// What a backend that times its streams has measured since it was created.
struct StreamTimes {
  double copy_busy_ms = 0;     // the copy stream executing copies
  double compute_wait_ms = 0;  // the compute stream blocked on copy-stream events
};

// What a backend with a worker pool (the CPU) has run since it was created: launches, and
// the workers they used in all (fewer than launches x caps().n_threads where its workers
// waited for cores other threads held: backends/cpu/core_share.h).
struct WorkerCounts {
  uint64_t launches = 0;
  uint64_t worker_launches = 0;
};

struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const BackendCaps& caps() const = 0;
  // Safe from any thread without the device's lock (wt_context_plan reads it while another
  // thread's context may be allocating or running); CUDA's makes its device current on the
  // calling thread, as every CUDA call of the backend does.
  virtual Status memory_info(MemoryInfo* out) const = 0;

  // Memory. alloc returns a view of a fresh allocation, aligned to 64 bytes at least.
  virtual Status alloc(size_t bytes, MemoryKind kind, Buffer* out) = 0;
  virtual void free(Buffer* buffer) = 0;

  // Copies between buffers on a stream (host-visible buffers on the CPU backend).
  virtual Status copy_async(Stream stream, const Buffer& dst, const Buffer& src, size_t bytes) = 0;
  // Sets the first `bytes` bytes of dst to zero on a stream, in order with its copies and
  // kernels: how the engine clears device_only memory the host cannot address. dst's offset
  // and bytes are whole words (Vulkan's vkCmdFillBuffer fills words); check_zero_range says so.
  virtual Status zero_async(Stream stream, const Buffer& dst, size_t bytes) = 0;
  virtual Status record_event(Stream stream, Event* out) = 0;
  virtual Status wait_event(Stream stream, const Event& event) = 0;
  virtual Status synchronize(Stream stream) = 0;
  // Optional: false where the backend does not time its streams (a Vulkan device without
  // timestamps). Device backends read their timestamps back here, so it is not const.
  virtual bool stream_times(StreamTimes* out) {
    (void)out;
    return false;
  }
  // Optional: false where the backend has no worker pool.
  virtual bool worker_counts(WorkerCounts* out) const {
    (void)out;
    return false;
  }

  // Scratch the ops may use (quantized activations, attention tiles); the engine sizes it
  // from workspace_bytes() of the largest call at context creation.
  virtual size_t workspace_bytes(const OpCall& call) const = 0;
  virtual void set_workspace(const Buffer& workspace) = 0;

  // Runs an op on the compute stream, once validate_op (kernels/ops.h) has checked it: every
  // backend's kernels get calls that passed the same checks. WT_ERR_INVALID_ARGUMENT for a
  // call that does not, WT_ERR_UNSUPPORTED if the backend lacks the op or what it reads.
  Status launch(const OpCall& call) {
    WT_TRY(validate_op(call));
    if (!caps().gemma_kernels && op_needs_gemma_kernels(call))
      return error(WT_ERR_UNSUPPORTED, std::string(caps().name) + ": no embedding scale, gelu or attention window (" +
                                           op_name(call.op) + ")");
    if (call.op == Op::matmul && matmul_fused(call.get<MatmulOp>()) &&
        call.get<MatmulOp>().x.ne[0] > caps().fused_matmul_k)
      return error(WT_ERR_UNSUPPORTED, std::string(caps().name) + ": no fused matmul for rows of " +
                                           std::to_string(call.get<MatmulOp>().x.ne[0]));
    return enqueue(call);
  }
  // Whether the backend implements an op; if not, reason says why.
  virtual bool supports(Op op, const char** reason) const = 0;

  // Optional: the engine marks the launches of a decode step (on at its start, off at its
  // end), the same ops token after token with other lengths and positions. A backend may
  // gather them and launch them as one unit (CUDA: a graph updated in place each step); it
  // still honours every synchronize, event and host result in order. Turning it off
  // launches what was gathered. The default launches op by op.
  virtual Status set_step_replay(bool on) {
    (void)on;
    return Status::ok();
  }

 protected:
  // launch() after the checks: the call holds its op's arguments, consistent as ops.h says.
  virtual Status enqueue(const OpCall& call) = 0;
};

struct BackendOptions {
  int n_threads = 0;       // cpu: 0 = all cores
  bool fixed_threads = false;  // cpu: every launch on all n_threads workers, even while
                               // they wait for cores other threads hold
  int device_index = -1;   // vulkan: which physical device; -1 = the best one
                           // cuda: the CUDA device ordinal; -1 = device 0
  bool validation = false; // vulkan: run under VK_LAYER_KHRONOS_validation; any error it
                           // reports fails the next synchronize / host-result launch
  bool portable_kernels = false;  // vulkan: only the kernels that need no optional device
                                  // feature (no subgroup ops), so tests cover that path too
  // vulkan: the matmul and attention kernels when portable_kernels is off. automatic: the
  // lane kernels on a CPU device (lavapipe: a lane is a SIMD slot and owns whole outputs,
  // since per-lane loads dominate there), else the subgroup matmul where the device has
  // subgroup arithmetic and the workgroup-per-row attention. The others force one, so
  // tests cover both on one device.
  enum class VulkanKernels { automatic, subgroup, per_lane };
  VulkanKernels vulkan_kernels = VulkanKernels::automatic;
  // vulkan, cpu: one binding reaches at most this many bytes where that is less than the
  // device's limit (Vulkan's maxStorageBufferRange; 0: the device's), so tests run the paths
  // that split large tensors into row ranges on any device and on the CPU (whose matmuls then
  // refuse larger weights). Everything that reads BackendCaps::max_binding_bytes sees it:
  // placement, the pager's refusal of a device plane over it, the host-tier key bounds.
  size_t max_binding_bytes = 0;
  // vulkan: device_only memory is never mapped, as on a discrete card, where the device's
  // memory is host-visible too (lavapipe, Jetson), so tests run the weights' staged upload,
  // the contexts' unmapped arenas and kernels reading unmapped buffers on any device.
  bool unmapped_device_only = false;
};

Status create_cpu_backend(const BackendOptions& options, std::unique_ptr<Backend>* out);

// Makes a B and runs its init(options); for the device backends' create functions.
template <class B>
Status make_backend(const char* name, const BackendOptions& options, std::unique_ptr<Backend>* out) {
  if (!out) return error(WT_ERR_INVALID_ARGUMENT, std::string(name) + ": out is NULL");
  std::unique_ptr<B> b(new (std::nothrow) B());
  if (!b) return error(WT_ERR_OUT_OF_MEMORY, std::string(name) + ": cannot allocate the backend");
  WT_TRY(b->init(options));
  *out = std::move(b);
  return Status::ok();
}

// The Vulkan backend (backends/vulkan). WT_ERR_UNSUPPORTED with a message when the build
// has no Vulkan (WHITTLE_VULKAN=OFF), there is no driver or device, or no device has what
// the backend needs (Vulkan 1.2 timeline semaphores, push descriptors).
Status create_vulkan_backend(const BackendOptions& options, std::unique_ptr<Backend>* out);

// The CUDA backend (backends/cuda). WT_ERR_UNSUPPORTED with a message when the build has no
// CUDA (WHITTLE_CUDA=OFF), there is no driver or GPU, or the GPU lacks what the backend
// needs (mapped host memory; managed memory on a discrete GPU).
Status create_cuda_backend(const BackendOptions& options, std::unique_ptr<Backend>* out);

}  // namespace wt
