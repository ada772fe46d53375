// Backend::enqueue for Vulkan (launch() has run validate_op): each op of kernels/ops.def maps to an encoder (ops_*.cpp)
// that binds its tensors (by mapped pointer, alloc_table.h), uploads host-side arrays (ids,
// positions) to the ring, fills the push constants and records its dispatches — or to a
// reason why the op is not implemented here yet. Nothing is allocated.
//
// Batching rule: launches are recorded into the compute stream's open command buffer and
// submitted at synchronize / record_event (or when the ring fills); ops that return a host
// result (argmax) submit and wait before launch returns.
#include <string>

#include "encode.h"

namespace wt::vk {
namespace {

struct OpEntry {
  EncodeFn encode;     // nullptr: not implemented on Vulkan
  const char* reason;  // why not (shown by supports() and the parity suite)
};

// ---- the op table (one entry per line of ops.def) -----------------------------------------

// An op without a kernel gets {nullptr, "why"}: launch() then returns WT_ERR_UNSUPPORTED
// with that reason, supports() returns false with it, and tests/parity shows it as a skip.
constexpr OpEntry entry_embed{&encode_embed, nullptr};
constexpr OpEntry entry_rmsnorm{&encode_rmsnorm, nullptr};
constexpr OpEntry entry_matmul{&encode_matmul, nullptr};
constexpr OpEntry entry_add{&encode_add, nullptr};
constexpr OpEntry entry_rope{&encode_rope, nullptr};
constexpr OpEntry entry_attention_prefill{&encode_attention_prefill, nullptr};
constexpr OpEntry entry_attention_decode{&encode_attention_decode, nullptr};
constexpr OpEntry entry_swiglu{&encode_swiglu, nullptr};
constexpr OpEntry entry_copy_rows{&encode_copy_rows, nullptr};
constexpr OpEntry entry_window_scores{&encode_window_scores, nullptr};
constexpr OpEntry entry_pool1d{&encode_pool1d, nullptr};
constexpr OpEntry entry_topk{&encode_topk, nullptr};
constexpr OpEntry entry_gather_rows{&encode_gather_rows, nullptr};
constexpr OpEntry entry_block_scores{&encode_block_scores, nullptr};
constexpr OpEntry entry_kv_similarity{&encode_kv_similarity, nullptr};
constexpr OpEntry entry_argmax{&encode_argmax, nullptr};
constexpr OpEntry entry_key_bounds{&encode_key_bounds, nullptr};
constexpr OpEntry entry_bound_scores{&encode_bound_scores, nullptr};

constexpr OpEntry kOps[] = {
#define WT_OP(name, Args) entry_##name,
#include "kernels/ops.def"
#undef WT_OP
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(Op::count),
              "every op in ops.def needs a Vulkan entry: an encoder or a reason");

}  // namespace

Status VulkanBackend::enqueue(const OpCall& call) {
  const OpEntry& e = kOps[static_cast<size_t>(call.op)];
  if (!e.encode) return error(WT_ERR_UNSUPPORTED, std::string("vulkan: ") + op_name(call.op) + ": " + e.reason);
  step_profile_.launched();
  return e.encode(*this, call);
}

bool VulkanBackend::supports(Op op, const char** reason) const {
  if (op >= Op::count) {
    if (reason) *reason = "unknown op";
    return false;
  }
  const OpEntry& e = kOps[static_cast<size_t>(op)];
  if (reason) *reason = e.encode ? "" : e.reason;
  return e.encode != nullptr;
}

}  // namespace wt::vk
