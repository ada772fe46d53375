// One op call: what the engine asks a backend to run. Each op of ops.def has an argument
// struct of its own below, naming its tensors and parameters; an OpCall holds one of them.
// validate_op() checks a call against everything the kernels of every backend assume
// (types, shapes, counts, index ranges) once, before any backend sees it
// (Backend::launch), so no backend can skip a check the CPU kernel relies on. What a
// backend cannot run (a weight type, a head size) it still refuses itself, as unsupported.
//
// Shapes are written outermost first: [rows, n_head, head_dim] is a tensor with
// ne = {head_dim, n_head, rows} (kernels/tensor.h). Tensors are f32 unless a comment says
// otherwise; "[n]" arrays are host arrays the backend copies at launch if it must.
#pragma once

#include <cstdint>
#include <variant>

#include "base/status.h"
#include "tensor.h"

namespace wt {

enum class Op : uint32_t {
#define WT_OP(name, Args) name,
#include "ops.def"
#undef WT_OP
  count
};

const char* op_name(Op op);

// dst[n, d] = rows ids[0..n) of table [n_vocab, d] (any weight type: dequantized), times
// scale (Gemma 3's sqrt(n_embd); only on backends with BackendCaps::gemma_kernels unless 1).
struct EmbedOp {
  Tensor dst{}, table{};
  const int32_t* ids = nullptr;  // [n] token ids in [0, n_vocab)
  float scale = 1.0f;
};

// dst[n, d] = x[n, d] * rsqrt(mean(x^2) + eps) * weight[d]. dst may alias x.
// With a residual: x += residual first (x is written), then the norm of the sum; dst may
// alias the residual (the block's output becomes the next block's normed input in one op).
struct RmsnormOp {
  Tensor dst{}, x{}, weight{};
  float eps = 0;
  Tensor residual{};  // empty: none
};

// x[n, heads, head_dim] rotated in place, row r at position positions[r]; x2 (optional,
// [n, heads2, head_dim]) rotated with the same angles, so a layer's queries and keys take
// one launch.
struct RopeOp {
  Tensor x{};
  Tensor x2{};
  const int32_t* positions = nullptr;  // [n]
  int32_t n_rot = 0;                   // leading dims of a head that rotate: even, <= head_dim
  bool neox = false;                   // pairs (i, i + n_rot/2) instead of (2i, 2i+1)
  float theta_base = 10000.0f;
  float position_scale = 1.0f;         // linear scaling: 1 / factor
  // cos and sin times this (LongRoPE's rope.scaling.attn_factor, as ggml's attn_factor): so
  // the n_rot rotated dims of q and k, and only those, carry it. Positive and finite.
  float mscale = 1.0f;
  Tensor freq_divisors{};              // optional [n_rot/2] (llama3 scaling, precomputed)
  // Optional [n_rot, >= n]: row r's angles as rope_angles() makes them, cos and sin of each
  // pair; kernels read them instead of computing them (the engine fills it once per decode
  // step for every layer: no pow, cos or sin per layer and warp; exact where a device has
  // no float64). Where set, positions, theta_base, position_scale, mscale and freq_divisors
  // must be the ones it was made from: kernels use its values as given (mscale included).
  Tensor angles{};
};

// Rope's angles as every backend computes them: for pair i < n_rot / 2, freq_i =
// theta_base^(-2i / n_rot) / freq_divisors[i] in double (rope_freqs: [n_rot / 2]), then for a
// position p, angle_i = (p * position_scale) * freq_i in double, out[2i] = cos, out[2i + 1] =
// sin, each rounded to float, then times mscale in float (rope_angles: [n_rot]).
// freq_divisors must be host-readable.
void rope_freqs(const RopeOp& r, double* freqs);
void rope_angles(const RopeOp& r, const double* freqs, int32_t position, float* out);

// dst[n, out] = x[n, k] . w[out, k]^T (w any weight type). Up to two more products of the
// same x (dst2 = x . w2^T, dst3 = x . w3^T; empty: none), which a GPU backend computes in
// one launch where it can: a layer's Q, K and V, or its gate and up projections.
//
// Fusions for a one-row call (a decode step), on backends whose BackendCaps::fused_matmul_k
// covers x's length: the ops before and after the products, in the same launch.
//  - norm: the input is x's rmsnorm (RmsnormOp with weight norm, eps norm_eps, no residual);
//  - gate: the input is silu(gate) * x (SwigluOp with up = x): the down projection's input;
//  - bias, bias2, bias3 ([out] each): added to the product of w, w2, w3;
//  - accumulate: dst += product (+ bias) instead of dst = it (a block's residual add);
//  - rope (set when rope.x is): then RopeOp rope, whose x and x2 are [1, heads, head_dim]
//    views of dst and dst2 (a layer's queries and keys), head_dim even; not with accumulate.
//  - glu: then dst = silu(dst) * dst2 (SwigluOp with gate = dst, up = dst2, after the biases):
//    a feed-forward's gate and up products leave the down projection's input; w2 of w's
//    shape, no w3, not with accumulate or rope.
// norm and gate exclude each other; dst must not overlap x, gate or norm.
struct MatmulOp {
  Tensor dst{}, x{}, w{};
  bool f32_activations = false;  // no int8 rounding of x (the CPU's fast path rounds it)
  Tensor dst2{}, w2{}, dst3{}, w3{};
  Tensor norm{};
  float norm_eps = 0;
  Tensor gate{};
  Tensor bias{}, bias2{}, bias3{};
  bool accumulate = false;
  RopeOp rope{};
  bool glu = false;
};

// Whether a matmul call asks for any of the fusions.
inline bool matmul_fused(const MatmulOp& m) {
  return !m.norm.empty() || !m.gate.empty() || !m.bias.empty() || !m.bias2.empty() || !m.bias3.empty() ||
         m.accumulate || !m.rope.x.empty() || m.glu;
}

// The products of a matmul call, in order: (dst, w), then (dst2, w2) and (dst3, w3) where set.
struct MatmulProducts {
  int n = 0;
  const Tensor* dst[3] = {};
  const Tensor* w[3] = {};
  const Tensor* bias[3] = {};  // each may be empty
};
inline MatmulProducts matmul_products(const MatmulOp& m) {
  MatmulProducts p;
  p.dst[0] = &m.dst;
  p.w[0] = &m.w;
  p.bias[0] = &m.bias;
  p.n = 1;
  if (!m.w2.empty()) {
    p.dst[p.n] = &m.dst2;
    p.bias[p.n] = &m.bias2;
    p.w[p.n++] = &m.w2;
  }
  if (!m.w3.empty()) {
    p.dst[p.n] = &m.dst3;
    p.bias[p.n] = &m.bias3;
    p.w[p.n++] = &m.w3;
  }
  return p;
}

// dst[n, d] = a[n, d] + b, b [n, d] or [1, d] added to every row. dst may alias a.
struct AddOp {
  Tensor dst{}, a{}, b{};
};

// dst[n, n_head, hd] = causal GQA attention of q[n, n_head, hd] (row r at position pos0 + r)
// over k, v [>= pos0 + n, n_head_kv, hd]: keys 0..pos0 + r. Flash-style, no n x n matrix.
struct AttentionPrefillOp {
  Tensor dst{}, q{}, k{}, v{};
  int32_t pos0 = 0;
  float scale = 1.0f;
  const int32_t* skip_rows = nullptr;  // optional [n]: nonzero = the row's output is 0 and
                                       // nothing is computed for it (Token Filtering)
  bool f32_inputs = false;  // no rounding of q, k, v below f32 (CUDA's tensor-core kernel
                            // rounds them to f16 otherwise; the CPU and Vulkan never do)
  int32_t window = 0;  // > 0: row r sees keys pos0 + r - window + 1 .. pos0 + r only (a
                       // sliding-window layer; BackendCaps::gemma_kernels)
};

// dst[1, n_head, hd] for one query row at position pos0 over keys 0..pos0 of k, v
// [> pos0, n_head_kv, hd]; parallel over heads and key chunks.
struct AttentionDecodeOp {
  Tensor dst{}, q{}, k{}, v{};
  int32_t pos0 = 0;
  float scale = 1.0f;
  const int32_t* key_rows = nullptr;  // optional [n_key_rows]: attend only these rows of k, v
  int32_t n_key_rows = 0;             // (any order, repeats allowed: SlimInfer's active blocks
                                      // ascending, the pager's pool rows in logical order);
                                      // pos0 is then ignored; none: dst = 0
  int32_t window = 0;  // > 0 (no key_rows): keys pos0 - window + 1 .. pos0 only (gemma_kernels)
};

// dst[n, f] = silu(gate[n, f]) * up[n, f], or with gelu gelu(gate) * up (gelu's tanh form,
// Gemma 3's GeGLU; BackendCaps::gemma_kernels). dst may alias gate.
struct SwigluOp {
  Tensor dst{}, gate{}, up{};
  bool gelu = false;
};

// dst rows [row0, row0 + n) = src rows [0, n): src f32 and dst f32, f16 or q8_0 (a KV cache:
// each row rounded to dst's type), or src and dst of one type (bytes). dst2 / src2 (optional):
// a second copy of the same types, row width and rows at the same row0 (a layer's values
// beside its keys), so both take one launch.
struct CopyRowsOp {
  Tensor dst{}, src{};
  int32_t row0 = 0;
  Tensor dst2{}, src2{};
};

// dst[n_out, n_head, n_cols]: the attention of the last `window` query rows of
// q[n, n_head, hd] over key columns 0..n_cols of k[n_keys, n_head_kv, hd] (head h reads KV
// head h / (n_head / n_head_kv)). Query i of the window sits at key row n_visible - window +
// i (n_visible <= 0: n_keys) and sees no row past its own.
struct WindowScoresOp {
  Tensor dst{}, q{}, k{};
  int32_t window = 0;
  bool softmax = true;     // causal softmax over every visible key, z = q.k * scale; else raw q.k
                           // over all n_keys (no scale, mask or softmax)
  bool per_query = false;  // one output row per window query (n_out = window); else their sum
  int32_t n_visible = 0;
  float scale = 1.0f;
};

// dst[rows, n] = src[rows, n] pooled along the row: odd kernel, stride 1, kernel / 2
// padding (same length); average counts the padding as zeros (divisor always kernel), max
// ignores it. dst must not alias src.
struct Pool1dOp {
  Tensor dst{}, src{};
  int32_t kernel = 1;
  bool max = false;
};

// For each row r of scores[rows, n]: the indices of its k largest values (ties: lower index
// first), ascending, into out[r * k .. r * k + k) (a host result); k > n: the slots past n
// hold -1.
struct TopkOp {
  Tensor scores{};
  int32_t k = 0;
  int32_t* out = nullptr;  // [rows * k]
};

// dst[n_sel, heads, d] from src[n_src, heads, d] (2-D tensors: heads = 1): per_head false:
// dst row r = src row ids[r] (n_sel = n_ids); true: dst[r, h] = src[ids[h * n_sel + r], h]
// (n_sel = n_ids / heads). dst must not alias src.
struct GatherRowsOp {
  Tensor dst{}, src{};
  const int32_t* ids = nullptr;  // [n_ids] rows of src
  int32_t n_ids = 0;
  bool per_head = false;
};

// dst[n_blocks] SlimInfer block scores over the key rows of k[n_keys, n_head_kv, hd]: blocks
// of `block` rows made of units of `unit` rows (the last block and unit may be partial);
// qbar_h = mean of the last query_rows rows of q[n, n_head, hd] (query_rows <= 0 or > n:
// all of them); unit key = mean of the unit's rows; score = max over units of
// (1 / n_head) sum_h |qbar_h . unitkey_{h / G}|.
struct BlockScoresOp {
  Tensor dst{}, q{}, k{};
  int32_t block = 0, unit = 0, query_rows = 0;
  const int32_t* key_ids = nullptr;  // optional [n_keys]: key row r is row key_ids[r] of k
  int32_t n_keys = 0;                // with key_ids; otherwise every row of k

  int64_t key_count() const { return key_ids ? n_keys : k.ne[2]; }  // the key rows read
};

// Quest's page bounds (Tang et al., ICML 2024): for each block b of `block` consecutive
// rows of k [n, n_head_kv, hd] (the last block may be shorter) and KV head g, the elementwise
// min and max of the block's keys: dst[b, g, 0:hd] = min, dst[b, g, hd:2hd] = max, for
// dst[n_blocks, n_head_kv, 2 * hd] of f16 with n_blocks = ceil(n / block), rounded outward
// (the min down, the max up; f16_bound.h), so the pair still encloses the block's keys
// (keys beyond f16's +-65504 excepted: their bounds saturate there). With key_ids, key row r
// is row key_ids[r] of k and n = n_keys (a pager's host tier, whose slots are not in order).
struct KeyBoundsOp {
  Tensor dst{}, k{};
  int32_t block = 0;
  const int32_t* key_ids = nullptr;  // optional [n_keys]
  int32_t n_keys = 0;                // with key_ids; otherwise every row of k

  int64_t key_count() const { return key_ids ? n_keys : k.ne[2]; }  // the key rows read
};

// dst[n_blocks]: for the last query row of q [n, n_head, hd], per head h (of KV head
// g = h / (n_head / n_head_kv)) the upper bounds u_h[b] = scale * sum_d max(q_d * lo_d,
// q_d * hi_d) with lo, hi = bounds[b, g] (KeyBoundsOp's dst, its first n_blocks = dst.ne[0]
// blocks: no key of block b has a larger q.k * scale), then
// dst[b] = log sum_h softmax_b(u_h)[b], in the log domain: a bound far below a head's best
// would underflow to 0 in f32 and tie with every other such block.
struct BoundScoresOp {
  Tensor dst{}, q{}, bounds{};
  float scale = 1.0f;
};

// dst[n, n_head_kv, 2]: for each row t of k and v [n, n_head_kv, hd], in row order,
// cos(k_t, A_k) and cos(v_t, A_v) per KV head against anchors[2, n_head_kv, hd] (K then V;
// read and updated in place), then each anchor becomes decay * A + (1 - decay) * x (an all-
// zero anchor just takes x, cos 0).
struct KvSimilarityOp {
  Tensor dst{}, k{}, v{}, anchors{};
  float decay = 0.0f;
};

// *out = the index of the largest value of x's first row (the first on ties): a host result.
struct ArgmaxOp {
  Tensor x{};
  int32_t* out = nullptr;
};

// Which op an argument struct is for.
template <typename Args>
struct OpOf;
#define WT_OP(name, Args)                        \
  template <>                                    \
  struct OpOf<Args> {                            \
    static constexpr Op value = Op::name;        \
  };
#include "ops.def"
#undef WT_OP

// One call: the op and its arguments (the variant's alternative k + 1 is op k's struct).
class OpCall {
 public:
  using Variant = std::variant<std::monostate
#define WT_OP(name, Args) , Args
#include "ops.def"
#undef WT_OP
                               >;
  OpCall() = default;
  template <typename Args>
  OpCall(const Args& args) : op(OpOf<Args>::value), args_(args) {}  // NOLINT: a call is its args

  Op op = Op::count;
  // The arguments, which must be op's struct (validate_op checks).
  template <typename Args>
  const Args& get() const {
    return *std::get_if<Args>(&args_);
  }
  template <typename Args>
  Args& get() {
    return *std::get_if<Args>(&args_);
  }
  bool holds_op_args() const { return op < Op::count && args_.index() == static_cast<size_t>(op) + 1; }

 private:
  Variant args_;
};

// The checks every backend's kernels rely on: op's own struct, tensors present and of the
// types the op reads (f32 activations; any weight type where ops.def says so, which the
// backend then refuses if it lacks it), shapes that agree, strides of whole elements,
// counts in range and indices inside the tensors they index. WT_ERR_INVALID_ARGUMENT naming
// the op and what is wrong. It reads host arrays (ids, positions, key rows) to check their
// ranges: O(n) next to the kernels' work, never an allocation on success.
Status validate_op(const OpCall& call);
// Whether a call asks for what only backends with BackendCaps::gemma_kernels compute: an
// embedding scale, gelu, an attention window.
bool op_needs_gemma_kernels(const OpCall& call);

// The host int arrays a call reads, and the one it writes (a host result): pointers into
// the call, so a device backend can point them at device-visible copies it makes.
struct OpHostArrays {
  const int32_t** in = nullptr;  // ids, positions, skip flags, key rows; null: none
  int64_t n_in = 0;
  int32_t** out = nullptr;       // argmax, topk; null: none
  int64_t n_out = 0;
};
OpHostArrays op_host_arrays(OpCall& call);

}  // namespace wt
