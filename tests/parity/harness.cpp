#include "harness.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "kernels/cpu/quant.h"
#if defined(WHITTLE_VULKAN)
#include "backends/vulkan/vulkan_backend.h"
#endif
#include "tests/support/random_kquant.h"

namespace wt::parity {

bool g_skipped = false;
bool g_ran = false;

bool validation_requested() {
  const char* v = std::getenv("WT_PARITY_VALIDATION");
  const bool on = v && std::strcmp(v, "1") == 0;
#if defined(WHITTLE_VULKAN)
  if (on) {
    // The loader dlclose()s the layer at vkDestroyInstance; its globals are unmapped with it
    // and LeakSanitizer then reports everything they pointed to as leaked, in an "unknown
    // module". Keeping the library resident keeps those roots, so the ASan run still checks
    // our own allocations for leaks.
    static void* const pinned = dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_NODELETE);
    (void)pinned;
  }
#endif
  return on;
}

#if defined(WHITTLE_VULKAN)
namespace {
// The same device with only the kernels that need no optional feature (the subgroup matmul
// falls back to the shared-memory one), so both paths are checked on a device that has both.
Status create_vulkan_portable(const BackendOptions& options, std::unique_ptr<Backend>* out) {
  BackendOptions o = options;
  o.portable_kernels = true;
  return create_vulkan_backend(o, out);
}
// Each kernel family forced (BackendOptions::vulkan_kernels), so both are checked on any
// device. The one the device picks by default is what the "vulkan" run checks: that forced
// run is a skip, not the same cases a second time (a quarter of the Vulkan parity time).
Status create_vulkan_forced(const BackendOptions& options, BackendOptions::VulkanKernels kernels,
                            std::unique_ptr<Backend>* out) {
  BackendOptions o = options;
  o.vulkan_kernels = kernels;
  std::unique_ptr<Backend> b;
  WT_TRY(create_vulkan_backend(o, &b));
  const bool lane = kernels == BackendOptions::VulkanKernels::per_lane;
  if (static_cast<const vk::VulkanBackend&>(*b).automatic_picks_lane() == lane)
    return error(WT_ERR_UNSUPPORTED, std::string("the device's default kernels are the ") +
                                                 (lane ? "lane" : "subgroup") + " ones: the 'vulkan' run checks them");
  *out = std::move(b);
  return Status::ok();
}
Status create_vulkan_subgroup(const BackendOptions& options, std::unique_ptr<Backend>* out) {
  return create_vulkan_forced(options, BackendOptions::VulkanKernels::subgroup, out);
}
Status create_vulkan_lane(const BackendOptions& options, std::unique_ptr<Backend>* out) {
  return create_vulkan_forced(options, BackendOptions::VulkanKernels::per_lane, out);
}
}  // namespace
#endif

std::vector<BackendMaker> compiled_backends() {
  std::vector<BackendMaker> v;
#if defined(WHITTLE_VULKAN)
  v.push_back({"vulkan", &create_vulkan_backend});
  v.push_back({"vulkan-portable", &create_vulkan_portable});
  v.push_back({"vulkan-subgroup", &create_vulkan_subgroup});
  v.push_back({"vulkan-lane", &create_vulkan_lane});
#endif
#if defined(WHITTLE_CUDA)
  v.push_back({"cuda", &create_cuda_backend});  // no GPU or driver: make_backend reports the skip
#endif
  // WT_PARITY_BACKENDS=cuda,vulkan: only those (the compute-sanitizer run wants CUDA alone).
  if (const char* only = std::getenv("WT_PARITY_BACKENDS")) {
    const std::string list = std::string(",") + only + ",";
    std::erase_if(v, [&](const BackendMaker& m) { return list.find(std::string(",") + m.name + ",") == std::string::npos; });
  }
  return v;
}

namespace {

size_t elem_bytes(DType t) { return t == DType::f16 || t == DType::bf16 ? 2 : 4; }
bool is_quantized(DType t) { return t != DType::f32 && t != DType::f16 && t != DType::bf16; }

struct Layout {
  size_t row_bytes;  // of the data in a row
  size_t nb[4];
  size_t total;
};
Layout layout_of(const TensorSpec& s) {
  Layout l{};
  size_t rb = 0;
  (void)dtype_row_bytes(s.type, s.ne[0], &rb);
  l.row_bytes = rb;
  l.nb[0] = is_quantized(s.type) ? 0 : elem_bytes(s.type);
  l.nb[1] = rb + static_cast<size_t>(s.row_pad) * (is_quantized(s.type) ? 0 : elem_bytes(s.type));
  l.nb[2] = l.nb[1] * static_cast<size_t>(s.ne[1]);
  l.nb[3] = l.nb[2] * static_cast<size_t>(s.ne[2]);
  l.total = l.nb[3] * static_cast<size_t>(s.ne[3]);
  return l;
}

float draw(Fill f, float scale, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, scale);
  switch (f) {
    case Fill::normal: return normal(rng);
    case Fill::small_ints: return static_cast<float>(static_cast<int>(rng() % 7) - 3);
    case Fill::zeros: return 0.0f;
    case Fill::positive: return 0.25f + std::fabs(normal(rng));
    case Fill::specials: {
      const int v = static_cast<int>(rng() % 10) - 3;  // -3..6; 6 and 5: the specials
      return v == 6 ? std::numeric_limits<float>::quiet_NaN() : v == 5 ? -0.0f : static_cast<float>(v);
    }
  }
  return 0.0f;
}

std::vector<uint8_t> make_bytes(const TensorSpec& s, std::mt19937& rng) {
  const Layout l = layout_of(s);
  std::vector<uint8_t> bytes(l.total, 0);
  const int64_t n_rows = s.ne[1] * s.ne[2] * s.ne[3];
  std::vector<float> row(static_cast<size_t>(s.ne[0]));
  for (int64_t r = 0; r < n_rows; ++r) {
    for (float& x : row) x = draw(s.fill, s.scale, rng);
    uint8_t* dst = bytes.data() + static_cast<size_t>(r) * l.nb[1];
    switch (s.type) {
      case DType::f32: std::memcpy(dst, row.data(), l.row_bytes); break;
      case DType::f16:
        for (size_t i = 0; i < row.size(); ++i) {
          const uint16_t h = cpu::f32_to_f16(row[i]);
          std::memcpy(dst + 2 * i, &h, 2);
        }
        break;
      case DType::q8_0: cpu::quantize_q8_0(row.data(), dst, s.ne[0]); break;
      case DType::q4_0: cpu::quantize_q4_0(row.data(), dst, s.ne[0]); break;
      case DType::q4_1: cpu::quantize_q4_1(row.data(), dst, s.ne[0]); break;
      case DType::q5_0: cpu::quantize_q5_0(row.data(), dst, s.ne[0]); break;
      case DType::q5_1: cpu::quantize_q5_1(row.data(), dst, s.ne[0]); break;
      case DType::bf16:
        for (size_t i = 0; i < row.size(); ++i) {
          const uint16_t h = cpu::f32_to_bf16(row[i]);
          std::memcpy(dst + 2 * i, &h, 2);
        }
        break;
      case DType::q4_k:
      case DType::q5_k:
      case DType::q6_k:  // no K-quant quantizer: random valid blocks (the row's draws unused)
        test::fill_random_kquant(static_cast<uint32_t>(s.type), dst, static_cast<size_t>(s.ne[0] / 256), rng);
        break;
      default: break;  // other types are not generated by any case
    }
  }
  return bytes;
}

const TensorSpec& spec_of(const Case& c, int i) { return i == 0 ? c.dst : c.src[i - 1]; }

void read_floats(const TensorSpec& s, const uint8_t* base, std::vector<float>* out) {
  const Layout l = layout_of(s);
  const int64_t n_rows = s.ne[1] * s.ne[2] * s.ne[3];
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = base + static_cast<size_t>(r) * l.nb[1];
    if (s.type == DType::q8_0) {  // a KV cache row of q8_0 (copy_rows, gather_rows): its values
      const size_t at = out->size();
      out->resize(at + static_cast<size_t>(s.ne[0]));
      cpu::dequantize(DType::q8_0, row, out->data() + at, s.ne[0]);
      continue;
    }
    for (int64_t i = 0; i < s.ne[0]; ++i) {
      if (s.type == DType::f16) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        out->push_back(cpu::f16_to_f32(h));
      } else {
        float f;
        std::memcpy(&f, row + 4 * i, 4);
        out->push_back(f);
      }
    }
  }
}

}  // namespace

CaseData make_data(const Case& c, uint32_t seed) {
  CaseData d;
  std::mt19937 rng(seed);
  for (int i = 0; i < 4; ++i) {
    const TensorSpec& s = spec_of(c, i);
    if (s.used && !(i == 0 && c.dst_is_src0)) d.bytes[i] = make_bytes(s, rng);
  }
  return d;
}

Status run_case(Backend& b, const Case& c, const CaseData& data, size_t pad_bytes, Outputs* out) {
  Buffer bufs[4];
  Tensor tensors[4];
  auto release = [&] {
    for (Buffer& x : bufs)
      if (x.host) b.free(&x);
  };
  for (int i = 0; i < 4; ++i) {
    const TensorSpec& s = spec_of(c, i);
    if (!s.used || (i == 0 && c.dst_is_src0)) continue;
    const Layout l = layout_of(s);
    Status st = b.alloc(l.total + pad_bytes, MemoryKind::device, &bufs[i]);
    if (!st) {
      release();
      return st;
    }
    uint8_t* p = static_cast<uint8_t*>(bufs[i].host) + pad_bytes;
    std::memcpy(p, data.bytes[i].data(), l.total);
    Tensor& t = tensors[i];
    t.data = p;
    t.type = s.type;
    t.n_dims = s.n_dims;
    for (int k = 0; k < 4; ++k) {
      t.ne[k] = s.ne[k];
      t.nb[k] = l.nb[k];
    }
  }
  if (c.dst_is_src0) tensors[0] = tensors[1];
  out->ints.assign(static_cast<size_t>(c.n_out_i), -7);
  Slots slots;
  slots.dst = tensors[0];
  for (int i = 0; i < 3; ++i) slots.src[i] = tensors[i + 1];
  slots.ids = c.ids.empty() ? nullptr : c.ids.data();
  slots.n_ids = static_cast<int32_t>(c.ids.size());
  slots.out = c.n_out_i ? out->ints.data() : nullptr;
  slots.reference = std::string(b.caps().name) == "cpu";
  const OpCall call = c.call(slots);

  // Workspace as the engine sizes it: one buffer of workspace_bytes() for the call.
  Buffer ws;
  const size_t ws_bytes = b.workspace_bytes(call);
  Status st = b.alloc(ws_bytes ? ws_bytes : 64, MemoryKind::device, &ws);
  if (st) {
    b.set_workspace(ws);
    st = b.launch(call);
  }
  if (st) st = b.synchronize(Stream::compute);
  if (st) {
    out->values.clear();
    const int order[3] = {0, 1, 3};  // dst, src0 (in-place ops), src2 (updated state)
    const uint32_t flags[3] = {result_dst, result_src0, result_src2};
    for (int k = 0; k < 3; ++k) {
      if (!(c.results & flags[k])) continue;
      const int i = (order[k] == 0 && c.dst_is_src0) ? 1 : order[k];
      read_floats(spec_of(c, i), static_cast<const uint8_t*>(tensors[i].data), &out->values);
    }
  }
  if (ws.host) b.free(&ws);
  release();
  return st;
}

Error compare(const Outputs& got, const Outputs& ref) {
  Error e;
  if (got.values.size() != ref.values.size() || got.ints.size() != ref.ints.size()) {
    e.size_mismatch = true;
    return e;
  }
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.values.size(); ++i) {
    const double r = ref.values[i], g = got.values[i];
    const double d = std::fabs(g - r);
    // NaN anywhere counts as an infinite error (d != d).
    if (!(d == d)) {
      e.max_abs = INFINITY;
      num = INFINITY;
      continue;
    }
    num += d * d;
    den += r * r;
    if (d > e.max_abs) e.max_abs = d;
  }
  e.nmse = den > 0.0 ? num / den : (num > 0.0 ? INFINITY : 0.0);
  for (size_t i = 0; i < ref.ints.size(); ++i) e.n_int_mismatch += got.ints[i] != ref.ints[i];
  return e;
}

}  // namespace wt::parity
