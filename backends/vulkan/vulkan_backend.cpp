// The Vulkan backend: memory by kind, streams on queues with timeline semaphores, the
// upload/readback ring, and the public factory. Op encoding lives in dispatch.cpp.
#include "vulkan_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "backends/weight_types.h"
#include "base/fault_injection.h"
#include "decode_split.h"
#include "encode.h"
#include "vk_status.h"

namespace wt {
namespace vk {
namespace {

// What a driver keeps per recorded op (a dispatch with its barrier, pushed descriptors and
// push constants) until its command buffer is reset: 1.6 KiB on lavapipe (Mesa 22.3; 8192
// ops in one batch held 12.8 MiB), rounded up for drivers not measured.
constexpr uint64_t kDriverBytesPerOp = 2048;

constexpr size_t kDummyBytes = 256;

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The texel view of an allocation on binding b, where it reaches all of b and its indexes
// fit the int texelFetch takes; else b keeps no view (its kernels read storage).
void set_view(uint64_t view, size_t view_bytes, uint32_t unit, Bound* b) {
  const uint64_t end = b->offset + b->range;
  if (!view || end > view_bytes || b->offset % unit != 0 || end / unit >= (1ull << 31)) return;
  b->view = reinterpret_cast<VkBufferView>(view);
  b->view_base = static_cast<uint32_t>(b->offset / unit);
}

}  // namespace

Status VulkanBackend::init(const BackendOptions& options) {
  DeviceOptions dopt;
  dopt.device_index = options.device_index;
  dopt.validation = options.validation;
  {
    const fault::ForeignCode driver;  // the driver's own allocations are not the sweep's
    WT_TRY(create_device(dopt, &device_));
    WT_TRY(streams_[0].init(&device_, device_.compute_queue, device_.compute_family, device_.compute_timestamp_bits));
    WT_TRY(streams_[1].init(&device_, device_.copy_queue, device_.copy_family, device_.copy_timestamp_bits));
    WT_TRY(pipelines_.init(&device_));
  }
  WT_TRY(memory_.alloc(kRingBytes, MemoryKind::host, &ring_));
  WT_TRY(memory_.alloc(kDummyBytes, MemoryKind::device, &dummy_));
  std::memset(dummy_.host, 0, kDummyBytes);
  const VulkanCaps& c = device_.caps;
  const uint32_t wg_limit = c.max_workgroup_invocations < c.max_workgroup_size_x ? c.max_workgroup_invocations
                                                                                 : c.max_workgroup_size_x;
  while (wg_size_ > wg_limit && wg_size_ > 64) wg_size_ /= 2;  // 64 is under every device's minimum (128)
  constexpr VkSubgroupFeatureFlags kArith = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  subgroup_arith_ = !options.portable_kernels && (c.subgroup_ops & kArith) == kArith && c.subgroup_size >= 1 &&
                    c.subgroup_size <= wg_size_;
  using Kernels = BackendOptions::VulkanKernels;
  automatic_lane_ = c.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  lane_kernels_ = !options.portable_kernels &&
                  (options.vulkan_kernels == Kernels::per_lane ||
                   (options.vulkan_kernels == Kernels::automatic && automatic_lane_));
  if (lane_kernels_ && c.texel_views) memory_.enable_texel_views();  // the lane matmul's texel reads (matmul_lt_*)
  if (options.unmapped_device_only) memory_.unmap_device_only();
  caps_.name = "vulkan";
  caps_.device_name = c.device_name;
  caps_.unified_memory = c.unified_memory;
  caps_.device_only_unmapped = memory_.device_only_unmapped();
  caps_.has_copy_queue = c.has_transfer_queue;
  caps_.max_buffer_bytes = static_cast<size_t>(c.max_memory_allocation_bytes < c.max_buffer_bytes
                                                   ? c.max_memory_allocation_bytes
                                                   : c.max_buffer_bytes);
  caps_.max_binding_bytes = static_cast<size_t>(c.max_storage_buffer_range);
  if (options.max_binding_bytes > 0 && options.max_binding_bytes < caps_.max_binding_bytes)
    caps_.max_binding_bytes = options.max_binding_bytes;
  // What kernels/vulkan/dequant.glsl decodes; F16 only with 16-bit storage buffers.
  caps_.weight_types = weight_types_of(WT_BACKEND_VULKAN);
  caps_.kv_types = kv_types_of(WT_BACKEND_VULKAN);
  if (!c.storage_16bit) caps_.weight_types &= ~kVulkanFeatureTypes;
  // MatmulOp's fusions, at any row length, in the GPU kernels (matmul.comp kFuse; rope a
  // dispatch of its own after the products). Not on CPU devices: on lavapipe the lane
  // kernels' texel fetches decide the speed, and a norm's weights fetched per column group
  // cost more than the rmsnorm and swiglu dispatches saved (docs/results/vulkan.md).
  // WT_VK_FUSE=0 turns them off for an A/B on a GPU (scripts/gpu-lease/call2.sh), as
  // WT_CUDA_FUSE does CUDA's.
  const char* tiled = std::getenv("WT_VK_TILED");
  tiled_prompt_ = !lane_kernels_ && wg_size_ >= 256 && !(tiled && std::strcmp(tiled, "0") == 0);
  const char* fuse = std::getenv("WT_VK_FUSE");
  caps_.fused_matmul_k = lane_kernels_ || (fuse && std::strcmp(fuse, "0") == 0) ? 0 : INT64_MAX;
  caps_.fuse_rope = false;
  caps_.gemma_kernels = true;  // embed's scale, swiglu's gelu, attention.comp's window
  caps_.n_threads = 1;
  caps_.simd = "spirv";
  caps_.queued_work_bytes = uint64_t{std::size(streams_)} * VkStream::kRing * VkStream::kMaxBatchOps * kDriverBytesPerOp;
  return check_validation();
}

VulkanBackend::~VulkanBackend() {
  // Streams wait for their work in their destructors; buffers go with memory_.
  (void)streams_[0].synchronize();
  (void)streams_[1].synchronize();
  profile_.print();
  step_profile_.print();
}

Status VulkanBackend::check_validation() const {
  const ValidationLog* log = device_.validation;
  if (!log || log->n_errors == 0) return Status::ok();
  return error(WT_ERR_BACKEND, "vulkan: the validation layer reported " + std::to_string(log->n_errors) +
                                   " error(s); first: " + log->first_error);
}

Status VulkanBackend::memory_info(MemoryInfo* out) const {
  return memory_.device_memory(out);
}

Status VulkanBackend::alloc(size_t bytes, MemoryKind kind, Buffer* out) { return memory_.alloc(bytes, kind, out); }

void VulkanBackend::free(Buffer* buffer) {
  // Freeing is never in the hot path; waiting here keeps a buffer alive while work uses it.
  (void)streams_[0].synchronize();
  (void)streams_[1].synchronize();
  memory_.free(buffer);
}

Status VulkanBackend::begin_transfer(Stream stream, VkCommandBuffer* cmd) {
  VkStream& st = streams_[static_cast<int>(stream)];
  WT_TRY(st.begin(cmd));
  auto mb = vk_info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      stream == Stream::copy && caps_.has_copy_queue ? VK_PIPELINE_STAGE_TRANSFER_BIT
                                                     : VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  // Also at the start of a batch: submission order alone does not order execution, and the
  // previous batch on this queue may still write what this transfer reads or writes.
  vkCmdPipelineBarrier(*cmd, stages, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  return Status::ok();
}

Status VulkanBackend::copy_async(Stream stream, const Buffer& dst, const Buffer& src, size_t bytes) {
  if (bytes > dst.size_bytes || bytes > src.size_bytes)
    return error(WT_ERR_INVALID_ARGUMENT, "vulkan: copy of " + std::to_string(bytes) + " bytes exceeds a buffer view");
  if (bytes == 0) return Status::ok();
  Resolved d, s;
  // Buffer::device: the mapping, or the reserved addresses of unmapped memory (memory.h).
  if (!memory_.table().find(static_cast<char*>(dst.device) + dst.offset, bytes, &d) ||
      !memory_.table().find(static_cast<const char*>(src.device) + src.offset, bytes, &s))
    return error(WT_ERR_INVALID_ARGUMENT, "vulkan: copy_async between memory this backend did not allocate");
  VkCommandBuffer cmd;
  WT_TRY(begin_transfer(stream, &cmd));
  const VkBufferCopy region{s.offset, d.offset, bytes};
  vkCmdCopyBuffer(cmd, reinterpret_cast<VkBuffer>(s.buffer), reinterpret_cast<VkBuffer>(d.buffer), 1, &region);
  return streams_[static_cast<int>(stream)].recorded();
}

Status VulkanBackend::zero_async(Stream stream, const Buffer& dst, size_t bytes) {
  WT_TRY(check_zero_range("vulkan", dst, bytes));
  if (bytes == 0) return Status::ok();
  Resolved d;
  if (!memory_.table().find(static_cast<char*>(dst.device) + dst.offset, bytes, &d))
    return error(WT_ERR_INVALID_ARGUMENT, "vulkan: zero_async of memory this backend did not allocate");
  VkCommandBuffer cmd;
  WT_TRY(begin_transfer(stream, &cmd));
  vkCmdFillBuffer(cmd, reinterpret_cast<VkBuffer>(d.buffer), d.offset, bytes, 0u);
  return streams_[static_cast<int>(stream)].recorded();
}

Status VulkanBackend::record_event(Stream stream, Event* out) {
  uint64_t value = 0;
  WT_TRY(streams_[static_cast<int>(stream)].flush(&value));
  *out = Event{value, stream};
  return Status::ok();
}

Status VulkanBackend::wait_event(Stream stream, const Event& event) {
  if (event.stream == stream) return Status::ok();  // a stream is in order with itself
  VkStream& from = streams_[static_cast<int>(event.stream)];
  if (event.value > from.submitted())
    return error(WT_ERR_INVALID_ARGUMENT, "vulkan: wait_event on an event that was never recorded");
  return streams_[static_cast<int>(stream)].add_wait(from, event.value);
}

bool VulkanBackend::stream_times(StreamTimes* out) {
  if (!streams_[0].timed() || !streams_[1].timed()) return false;
  // Copy first: a compute batch's wait reads the end of the copy batch it waited for.
  if (!streams_[1].collect_times() || !streams_[0].collect_times()) return false;
  out->copy_busy_ms = streams_[1].busy_ns() / 1e6;
  out->compute_wait_ms = streams_[0].waited_ns() / 1e6;
  return true;
}

Status VulkanBackend::synchronize(Stream stream) {
  VkStream& s = streams_[static_cast<int>(stream)];
  if (stream == Stream::compute && step_profile_.waiting()) {
    const auto t0 = std::chrono::steady_clock::now();
    WT_TRY(s.synchronize());
    step_profile_.step_waited(std::chrono::steady_clock::now() - t0, s.submitted());
  } else {
    WT_TRY(s.synchronize());
  }
  if (stream == Stream::compute) ring_slots_.clear();  // no submitted work reads the ring any more
  return check_validation();
}

Status VulkanBackend::set_step_replay(bool on) {
  if (on) {
    step_profile_.step_start(streams_[static_cast<int>(Stream::compute)].submitted());
  } else {
    step_profile_.step_issued();
  }
  return Status::ok();
}

size_t VulkanBackend::workspace_bytes(const OpCall& c) const {
  switch (c.op) {
    case Op::window_scores: {
      // Running max and sum per (head, window query); the window is at most q's rows, the
      // bound a sizing call that leaves the window unset gets (as on the CPU).
      const WindowScoresOp& a = c.get<WindowScoresOp>();
      const int64_t rows = a.q.ne[2];
      const int64_t w = a.window > 0 && a.window < rows ? a.window : rows;
      return sizeof(float) * 2 * static_cast<size_t>(a.q.ne[1] * w);
    }
    case Op::block_scores: {
      const BlockScoresOp& a = c.get<BlockScoresOp>();
      return sizeof(float) * static_cast<size_t>(a.q.ne[0] * a.q.ne[1]);  // qbar [n_head][hd]
    }
    case Op::bound_scores:
      return bound_scores_workspace_bytes(c.get<BoundScoresOp>());
    // A split decode's partials (decode_split.h; not on the lane kernels), for the larger of
    // the call's keys and the cache's rows. The planner asks with a prefill over the whole
    // cache, so a prefill's answer covers every decode step over that cache.
    case Op::attention_prefill: {
      const AttentionPrefillOp& a = c.get<AttentionPrefillOp>();
      return lane_kernels_ ? 0 : decode_partial_bytes(static_cast<uint64_t>(a.k.ne[2]), a.q.ne[1], a.q.ne[0]);
    }
    case Op::attention_decode: {
      const AttentionDecodeOp& a = c.get<AttentionDecodeOp>();
      const int64_t keys = std::max<int64_t>(a.key_rows ? a.n_key_rows : int64_t{a.pos0} + 1, a.k.ne[2]);
      return lane_kernels_ ? 0 : decode_partial_bytes(static_cast<uint64_t>(keys), a.q.ne[1], a.q.ne[0]);
    }
    default:
      return 0;
  }
}

Status VulkanBackend::bind_workspace(size_t bytes, const char* what, Bound* out) const {
  if (bytes > workspace_.size_bytes || !workspace_.device)
    return error(WT_ERR_INTERNAL, std::string("vulkan: ") + what + " needs " + std::to_string(bytes) +
                                      " workspace bytes, the plan gave " + std::to_string(workspace_.size_bytes));
  // Buffer::device: the device part of the arena may be unmapped (memory.h).
  Tensor t = make_tensor_2d(static_cast<char*>(workspace_.device) + workspace_.offset, DType::f32,
                            static_cast<int64_t>((bytes + 3) / 4), 1);
  if (t.ne[0] == 0) t.ne[0] = 1;
  return bind_tensor(t, 4, what, out);
}

Status VulkanBackend::bind_union(const Tensor* const* ts, int n, uint32_t unit, const char* what, Bound* out,
                                 uint32_t* firsts, bool* shared) const {
  Bound each[3];
  if (n < 1 || n > 3) return error(WT_ERR_INTERNAL, std::string("vulkan: ") + what + ": bind_union takes 1 to 3 tensors");
  VkDeviceSize lo = 0, hi = 0;
  *shared = true;
  for (int i = 0; i < n; ++i) {
    WT_TRY(bind_tensor(*ts[i], unit, what, &each[i]));
    const VkDeviceSize end = each[i].offset + each[i].range;
    if (i == 0 || each[i].offset < lo) lo = each[i].offset;
    if (i == 0 || end > hi) hi = end;
    if (each[i].buffer != each[0].buffer || (each[i].offset - each[0].offset) % unit != 0) *shared = false;
  }
  if (hi - lo > caps_.max_binding_bytes) *shared = false;
  if (!*shared) return Status::ok();
  // Each binding's offset is a multiple of the offset alignment, so the lowest one is too,
  // and every tensor's first element is a whole number of units past it.
  *out = Bound{each[0].buffer, lo, hi - lo, 0};
  // The union lies in the view where every binding in it does (it ends where one of them ends).
  bool all_viewed = true;
  for (int i = 0; i < n; ++i) all_viewed = all_viewed && each[i].view;
  if (all_viewed) {
    out->view = each[0].view;
    out->view_base = static_cast<uint32_t>(lo / unit);
  }
  for (int i = 0; i < n; ++i)
    firsts[i] = static_cast<uint32_t>((each[i].offset - lo) / unit) + each[i].first;
  return Status::ok();
}

Status VulkanBackend::bind_tensor(const Tensor& t, uint32_t unit, const char* what, Bound* out) const {
  size_t row_bytes = 0;
  if (!dtype_row_bytes(t.type, t.ne[0], &row_bytes))
    return error(WT_ERR_INVALID_ARGUMENT, std::string("vulkan: ") + what + ": row size is not a whole number of blocks");
  size_t extent = row_bytes;
  for (int i = 1; i < 4; ++i)
    if (t.ne[i] > 1) extent += static_cast<size_t>(t.ne[i] - 1) * t.nb[i];
  Resolved r;
  if (!memory_.table().find(t.data, extent, &r))
    return error(WT_ERR_INVALID_ARGUMENT, std::string("vulkan: ") + what +
                                              " is not inside memory allocated by this backend (or runs past its end)");
  const size_t align = static_cast<size_t>(device_.caps.min_storage_buffer_offset_alignment);
  const size_t base = r.offset / align * align;
  const size_t first = r.offset - base;
  if (first % unit != 0)
    return error(WT_ERR_INVALID_ARGUMENT, std::string("vulkan: ") + what + " is misaligned for its element type");
  for (int i = 1; i < 4; ++i)
    if (t.nb[i] % unit != 0)
      return error(WT_ERR_INVALID_ARGUMENT, std::string("vulkan: ") + what + " has a stride that is not a whole element");
  size_t range = align_up(first + extent, 4);
  if (base + range > r.size_bytes) range = r.size_bytes - base;
  if (range > caps_.max_binding_bytes)
    return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + what + " spans " + std::to_string(range) +
                                          " bytes, more than one binding may reach (maxStorageBufferRange " +
                                          std::to_string(device_.caps.max_storage_buffer_range) +
                                          (caps_.max_binding_bytes < device_.caps.max_storage_buffer_range
                                               ? ", lowered to " + std::to_string(caps_.max_binding_bytes)
                                               : std::string()) +
                                          ")");
  *out = Bound{reinterpret_cast<VkBuffer>(r.buffer), base, range, static_cast<uint32_t>(first / unit)};
  set_view(r.view, r.view_bytes, unit, out);
  return Status::ok();
}

Status VulkanBackend::ring_reserve(size_t bytes, Bound* out, void** host) {
  const size_t align = static_cast<size_t>(device_.caps.min_storage_buffer_offset_alignment) > 16
                           ? static_cast<size_t>(device_.caps.min_storage_buffer_offset_alignment)
                           : 16;
  size_t offset = 0, size = 0;
  // Full: the queued work that reads the ring finishes first.
  WT_TRY(ring_slots_.reserve(bytes, align, "vulkan", [&] { return streams_[0].synchronize(); }, &offset, &size));
  *host = static_cast<char*>(ring_.host) + offset;
  *out = Bound{reinterpret_cast<VkBuffer>(ring_.handle), offset, size, 0};
  return Status::ok();
}

Status VulkanBackend::upload(const void* data, size_t bytes, Bound* out) {
  void* host = nullptr;
  WT_TRY(ring_reserve(bytes, out, &host));
  if (bytes) std::memcpy(host, data, bytes);
  return Status::ok();
}

Status VulkanBackend::readback_slot(size_t bytes, Bound* out, void** host) { return ring_reserve(bytes, out, host); }

Bound VulkanBackend::dummy() const { return Bound{reinterpret_cast<VkBuffer>(dummy_.handle), 0, kDummyBytes, 0}; }

Status VulkanBackend::record(Kernel k, const Spec& spec, const Bound (&b)[kBindings], const Push& push,
                             uint32_t n_groups_x, uint32_t n_groups_y) {
  if (n_groups_x == 0 || n_groups_y == 0) return Status::ok();
  if (n_groups_y > device_.caps.max_workgroup_count[1] || n_groups_x > device_.caps.max_workgroup_count[0])
    return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + kernel_name(k) + ": grid larger than the device allows");
  VkPipeline pipeline;
  WT_TRY(pipelines_.get(k, spec, &pipeline));
  VkStream& st = streams_[0];
  std::chrono::steady_clock::time_point t0;
  double busy0 = 0;
  if (profile_.on()) {  // this dispatch alone: everything before it done, it submitted and waited for
    WT_TRY(st.synchronize());
    WT_TRY(st.collect_times());
    busy0 = st.busy_ns();
    t0 = std::chrono::steady_clock::now();
  }
  VkCommandBuffer cmd;
  WT_TRY(st.begin(&cmd));
  {
    // Ops run in order, each seeing the writes of the ones before it, in its batch and in
    // the batches submitted before it on this queue (submission order alone does not wait).
    auto mb = vk_info<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  // Texel bindings (texel_bindings(k)) take the allocation's texel view; their kernels
  // index from the view's start, so a tensor's first element is view_base + first. The
  // encoder checked that they have views.
  const uint32_t texels = texel_bindings(k);
  const VkPipelineLayout layout = pipelines_.layout(k);
  VkDescriptorBufferInfo infos[kBindings];
  VkWriteDescriptorSet writes[kBindings];
  Push pc = push;  // each tensor's first element within its binding comes with the binding
  for (uint32_t i = 0; i < kBindings; ++i) {
    const bool texel = (texels >> i) & 1u;
    if (texel && !b[i].view)
      return error(WT_ERR_INTERNAL, std::string("vulkan: ") + kernel_name(k) + ": a texel binding without a view");
    infos[i] = VkDescriptorBufferInfo{b[i].buffer, b[i].offset, b[i].range};
    writes[i] = vk_info<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    if (texel)
      writes[i].pTexelBufferView = &b[i].view;
    else
      writes[i].pBufferInfo = &infos[i];
    pc.off[i] = b[i].first + (texel ? b[i].view_base : 0u);
  }
  device_.cmd_push_descriptor_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, kBindings, writes);
  vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push), &pc);
  vkCmdDispatch(cmd, n_groups_x, n_groups_y, 1);
  if (profile_.on()) {
    WT_TRY(st.synchronize());
    const auto host = std::chrono::steady_clock::now() - t0;
    WT_TRY(st.collect_times());
    // The batch's own timestamps where the queue has them (no submit or wake-up in them).
    if (st.timed() && st.busy_ns() > busy0)
      profile_.add(k, std::chrono::nanoseconds(static_cast<int64_t>(st.busy_ns() - busy0)));
    else
      profile_.add(k, host);
    return Status::ok();
  }
  return st.recorded();
}

Status VulkanBackend::finish_host_result() {
  WT_TRY(streams_[0].synchronize());
  return check_validation();
}

}  // namespace vk

Status create_vulkan_backend(const BackendOptions& options, std::unique_ptr<Backend>* out) {
  return make_backend<vk::VulkanBackend>("vulkan", options, out);
}

}  // namespace wt
