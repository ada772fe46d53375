// The per-op parity cases and tolerances: what tests/parity runs on every non-CPU backend
// against the CPU reference. One table of tolerances, one list of cases per op.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ops.h"

namespace wt::parity {

enum class Fill {
  normal,      // N(0, scale)
  small_ints,  // integers in [-3, 3]: many ties (argmax, topk)
  zeros,
  positive,    // 0.25 + |N(0, scale)|: score rows, rope divisors
  specials,    // small_ints with NaN, -0 and +0 among them (topk's order: NaN lowest, -0 == +0)
};

struct TensorSpec {
  bool used = false;
  DType type = DType::f32;
  int32_t n_dims = 2;
  int64_t ne[4] = {1, 1, 1, 1};
  int64_t row_pad = 0;  // extra elements between rows (f32/f16 only): strided views
  Fill fill = Fill::normal;
  float scale = 1.0f;
};

// Where the result to compare lives: dst, or a tensor an in-place op updates.
enum Result : uint32_t { result_dst = 1, result_src0 = 2, result_src2 = 4, result_out_i = 8 };

// The tensors and arrays the harness made for a case (dst, src[] as their specs say), which
// the case turns into its op's arguments.
struct Slots {
  Tensor dst, src[3];
  const int32_t* ids = nullptr;  // the case's ids (null when it has none)
  int32_t n_ids = 0;
  int32_t* out = nullptr;        // the host result (argmax, topk)
  bool reference = false;        // the CPU reference run: it asks for f32 everywhere, while a
                                 // device runs what the engine asks by default (tensor cores
                                 // on CUDA), unless the case sets Case::f32_inputs
};

struct Case {
  std::string label;       // shape summary printed with the numbers
  Op op = Op::count;
  std::function<OpCall(const Slots&)> call;  // the op's arguments over the harness's tensors
  TensorSpec dst, src[3];
  std::vector<int32_t> ids;
  bool dst_is_src0 = false;  // dst aliases src0 (in-place residual add, rmsnorm)
  uint32_t results = result_dst;
  int32_t n_out_i = 0;       // host results (argmax 1, topk rows * k)
  // The CUDA backend runs this call on tensor cores (kernels/cuda/tensor_core_paths.h, on a
  // GPU of compute capability 8 or more): its inputs are rounded below f32.
  bool tensor_cores = false;
  bool f32_inputs = false;  // the device call, too, asks for f32 (WT_MATMUL_F32): no tensor cores
  // The type of the KV cache the case reads or writes (attention's k and v, the scores' k,
  // the rows copy_rows / gather_rows store): a backend whose BackendCaps::kv_types lack it
  // skips the case, visibly.
  DType kv_type = DType::f32;
  // A fused one-row matmul (MatmulOp's norm, gate, accumulate) over rows this long: a backend
  // whose BackendCaps::fused_matmul_k is shorter skips the case, visibly.
  int64_t fused_k = 0;
  // An embedding scale, gelu or an attention window (Gemma 3): a backend without
  // BackendCaps::gemma_kernels skips the case, visibly.
  bool gemma = false;
};

struct Tolerance {
  Op op;
  double nmse;     // sum (x - ref)^2 / sum ref^2
  double max_abs;  // max |x - ref|
  // For the CUDA backend's tensor-core calls (Case::tensor_cores); 0 where the op has none.
  double tc_nmse = 0.0, tc_max_abs = 0.0;
};

// The declared tolerance of op, or nullptr when the table lacks it (a test failure).
const Tolerance* tolerance(Op op);
// Whether the named backend ("cuda", "vulkan") runs case c on tensor cores.
bool on_tensor_cores(const Case& c, const std::string& backend);
// The limits (nmse, max-abs) for case c on that backend.
std::pair<double, double> limits(const Tolerance& t, const Case& c, const std::string& backend);
// The cases of op (several shapes, ragged sizes, GQA where the op has heads).
std::vector<Case> cases(Op op);

}  // namespace wt::parity
