// The Vulkan backend object: owns the device, memory, the two streams, the pipeline cache
// and the upload/readback ring. Op encoders (dispatch.cpp) use the helpers below to turn
// tensors into bindings and to record dispatches; they never allocate.
#pragma once

#include <vulkan/vulkan.h>

#include "backends/backend.h"
#include "backends/upload_ring.h"
#include "device.h"
#include "kernel_profile.h"
#include "step_profile.h"
#include "memory.h"
#include "pipeline.h"
#include "stream.h"

namespace wt::vk {

// A storage-buffer binding plus the index of the tensor's first element within it, and
// where the allocation has a texel view (Memory::enable_texel_views) that reaches the whole
// binding, that view and the binding's start in it: element e of the binding lies at
// view_base + e from the view's start, in the binding's units (floats, or bytes for the
// quantized types), which a kernel turns into texels as it turns them into words.
struct Bound {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize range = 0;
  uint32_t first = 0;  // in units of the view (see Push)
  VkBufferView view = VK_NULL_HANDLE;
  uint32_t view_base = 0;
};

class VulkanBackend final : public Backend {
 public:
  VulkanBackend() : memory_(&device_) {}
  Status init(const BackendOptions& options);
  ~VulkanBackend() override;

  const BackendCaps& caps() const override { return caps_; }
  Status memory_info(MemoryInfo* out) const override;
  Status alloc(size_t bytes, MemoryKind kind, Buffer* out) override;
  void free(Buffer* buffer) override;
  Status copy_async(Stream stream, const Buffer& dst, const Buffer& src, size_t bytes) override;
  Status zero_async(Stream stream, const Buffer& dst, size_t bytes) override;
  Status record_event(Stream stream, Event* out) override;
  Status wait_event(Stream stream, const Event& event) override;
  Status synchronize(Stream stream) override;
  Status set_step_replay(bool on) override;  // marks for StepProfile only: steps run op by op
  // From timestamps of every batch (stream.h says how waiting is estimated); false where
  // a queue family has no timestamps.
  bool stream_times(StreamTimes* out) override;
  size_t workspace_bytes(const OpCall& call) const override;
  void set_workspace(const Buffer& workspace) override { workspace_ = workspace; }
  bool supports(Op op, const char** reason) const override;  // dispatch.cpp

  // ---- helpers for the op encoders ----
  const VulkanCaps& vk_caps() const { return device_.caps; }
  // The workgroup size of the 1-D kernels: the largest power of two <= 256 the device runs
  // (the reduction kernels need a power of two; their shared arrays hold 256).
  uint32_t wg_size() const { return wg_size_; }
  // Subgroup arithmetic in compute shaders, unless the options asked for portable kernels.
  bool subgroup_arith() const { return subgroup_arith_; }
  // The lane kernels: matmul with outputs per lane, attention with a query row or key
  // slice per lane (BackendOptions::vulkan_kernels).
  bool lane_kernels() const { return lane_kernels_; }
  // The tiled kernels of a prompt (matmul_tiled.comp, attention_tiled.comp) where the GPU
  // kernels run and a workgroup holds their 256 invocations; WT_VK_TILED=0 turns them off
  // (an A/B on a GPU).
  bool tiled_prompt() const { return tiled_prompt_; }
  // What VulkanKernels::automatic picks on this device: the lane kernels on a CPU device
  // (a lane is a SIMD slot there), the subgroup ones elsewhere.
  bool automatic_picks_lane() const { return automatic_lane_; }
  // The binding of tensor t viewed in units of unit_bytes (4 f32/int, 2 f16, 1 quantized).
  Status bind_tensor(const Tensor& t, uint32_t unit_bytes, const char* what, Bound* out) const;
  // One binding for n tensors (a matmul's products) in units of unit_bytes: firsts[i] is
  // tensor i's first element in it. *shared = false (and no error) where they lie in
  // different buffers or span more than a binding reaches; errors as bind_tensor's.
  Status bind_union(const Tensor* const* ts, int n, uint32_t unit_bytes, const char* what, Bound* out,
                    uint32_t* firsts, bool* shared) const;
  // The first `bytes` of the engine's workspace (set_workspace), or an error if it is smaller.
  Status bind_workspace(size_t bytes, const char* what, Bound* out) const;
  // Copies host data (ids, tables) into the ring for the current batch.
  Status upload(const void* data, size_t bytes, Bound* out);
  // A ring slot for the current batch that the host fills now (upload without the copy).
  Status ring_reserve(size_t bytes, Bound* out, void** host);
  // A ring slot the next dispatch writes and the host reads after finish_host_result().
  Status readback_slot(size_t bytes, Bound* out, void** host);
  Bound dummy() const;
  // Records kernel k, specialized by spec (a workgroup size converts), over n_groups
  // workgroups (spread over x and y) on the compute stream.
  Status record(Kernel k, const Spec& spec, const Bound (&b)[kBindings], const Push& push, uint32_t n_groups_x,
                uint32_t n_groups_y = 1);
  // Submits and waits for the compute stream, for ops whose result the host reads.
  Status finish_host_result();

 protected:
  Status enqueue(const OpCall& call) override;  // dispatch.cpp

 private:
  Status check_validation() const;
  // Opens a transfer command on a stream, after a barrier for what ran before it.
  Status begin_transfer(Stream stream, VkCommandBuffer* cmd);

  Device device_;
  Memory memory_;
  PipelineCache pipelines_;
  VkStream streams_[2];
  BackendCaps caps_;
  Buffer workspace_;
  static constexpr size_t kRingBytes = 4u << 20;  // ids and host results of one batch
  Buffer ring_;        // host-visible upload/readback ring, made at creation
  UploadRing ring_slots_{kRingBytes};
  Buffer dummy_;       // bound to the slots a kernel does not use
  uint32_t wg_size_ = 256;
  bool subgroup_arith_ = false;
  bool lane_kernels_ = false;
  bool automatic_lane_ = false;
  bool tiled_prompt_ = false;
  KernelProfile profile_;  // WT_VK_PROFILE=1: per-kernel times, printed at destruction
  StepProfile step_profile_;  // WT_VK_HOST_PROFILE=1: the host's time per decode step
};

}  // namespace wt::vk
