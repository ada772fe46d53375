// Op names, the one validation of every call (ops.h: validate_op), the host arrays a
// call carries, and rope's angles as every backend computes them (rope_freqs, rope_angles).
// The checks are what the kernels of every backend rely on; each failure names the op and
// the argument.
#include "ops.h"

#include <cmath>
#include <string>
#include <utility>

namespace wt {

const char* op_name(Op op) {
  switch (op) {
#define WT_OP(name, Args) \
  case Op::name:          \
    return #name;
#include "ops.def"
#undef WT_OP
    case Op::count:
      break;
  }
  return "unknown";
}

namespace {

// The checks of one call, each returning the first failure.
class Check {
 public:
  explicit Check(Op op) : op_(op) {}

  Status fail(const std::string& what) const {
    return error(WT_ERR_INVALID_ARGUMENT, std::string(op_name(op_)) + ": " + what);
  }
  Status that(bool ok, const char* what) const { return ok ? Status::ok() : fail(what); }
  Status present(const Tensor& t, const char* what) const {
    return t.empty() ? fail(std::string(what) + " is missing") : Status::ok();
  }
  // Present, of type f32 (or any KV cache type where allowed: f16, q8_0), rows of whole
  // blocks, with row strides of whole elements (blocks).
  Status floats(const Tensor& t, const char* what, bool kv_types_too = false) const {
    WT_TRY(present(t, what));
    if (t.type != DType::f32 && !(kv_types_too && is_kv_type(t.type)))
      return fail(std::string(what) + " must be f32" + (kv_types_too ? ", f16 or q8_0" : "") + ", not " + dtype_name(t.type));
    size_t row_bytes = 0;
    if (!dtype_row_bytes(t.type, t.ne[0], &row_bytes))
      return fail(std::string(what) + " rows are not whole " + dtype_name(t.type) + " blocks");
    const size_t elem = traits(t.type).block_bytes;
    for (int i = 1; i < 4; ++i)
      if (t.nb[i] % elem != 0) return fail(std::string(what) + " has a stride that is not a whole element");
    return Status::ok();
  }
  // Present, of type f16 (Quest's key bounds), with row strides of whole elements.
  Status halves(const Tensor& t, const char* what) const {
    WT_TRY(present(t, what));
    if (t.type != DType::f16) return fail(std::string(what) + " must be f16, not " + dtype_name(t.type));
    for (int i = 1; i < 4; ++i)
      if (t.nb[i] % sizeof(uint16_t) != 0) return fail(std::string(what) + " has a stride that is not a whole element");
    return Status::ok();
  }
  // Weights of any type: present, rows of whole quantization blocks.
  Status weights(const Tensor& t, const char* what) const {
    WT_TRY(present(t, what));
    size_t row_bytes = 0;
    if (!dtype_row_bytes(t.type, t.ne[0], &row_bytes)) return fail(std::string(what) + " rows are not whole blocks");
    return Status::ok();
  }
  // dst holds at least `rows` rows (outermost dims) of at least `width` elements.
  Status holds(const Tensor& dst, int64_t rows, int64_t width, const char* what) const {
    if (dst.ne[0] < width) return fail(std::string(what) + " rows are too short");
    if (dst.n_rows() < rows) return fail(std::string(what) + " has too few rows");
    return Status::ok();
  }
  // n host indices (ids non-null when n > 0), each in [0, bound).
  Status indices(const int32_t* ids, int64_t n, int64_t bound, const char* what) const {
    if (n < 0) return fail(std::string(what) + ": negative count");
    if (n > 0 && !ids) return fail(std::string(what) + " are missing");
    for (int64_t i = 0; i < n; ++i)
      if (ids[i] < 0 || ids[i] >= bound)
        return fail(std::string(what) + " " + std::to_string(i) + " is " + std::to_string(ids[i]) + ", outside [0, " +
                    std::to_string(bound) + ")");
    return Status::ok();
  }
  // Attention-shaped q, k, v: one head size, n_head a multiple of n_head_kv, k and v alike.
  Status heads(const Tensor& q, const Tensor& k, const Tensor& v) const {
    WT_TRY(that(q.ne[0] == k.ne[0] && (v.empty() || v.ne[0] == k.ne[0]), "q, k and v differ in head_dim"));
    WT_TRY(that(k.ne[1] > 0 && q.ne[1] % k.ne[1] == 0, "n_head is not a multiple of n_head_kv"));
    if (!v.empty()) WT_TRY(that(v.ne[1] == k.ne[1] && v.ne[2] >= k.ne[2], "k and v differ in shape"));
    return Status::ok();
  }

 private:
  Op op_;
};

Status check(const Check& c, const EmbedOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.weights(a.table, "table"));
  WT_TRY(c.that(a.dst.ne[0] <= a.table.ne[0], "dst rows are longer than table rows"));
  return c.indices(a.ids, a.dst.n_rows(), a.table.ne[1], "token ids");
}

Status check(const Check& c, const RmsnormOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.x, "x"));
  WT_TRY(c.floats(a.weight, "weight"));
  WT_TRY(c.that(a.weight.ne[0] >= a.x.ne[0], "weight is shorter than a row"));
  if (!a.residual.empty()) {
    WT_TRY(c.floats(a.residual, "residual"));
    WT_TRY(c.holds(a.residual, a.x.n_rows(), a.x.ne[0], "residual"));
  }
  return c.holds(a.dst, a.x.n_rows(), a.x.ne[0], "dst");
}

Status check(const Check& c, const RopeOp& a) {
  WT_TRY(c.floats(a.x, "x"));
  if (!a.x2.empty()) {
    WT_TRY(c.floats(a.x2, "x2"));
    WT_TRY(c.that(a.x2.ne[0] == a.x.ne[0] && a.x2.ne[2] == a.x.ne[2], "x2 must have x's head_dim and rows"));
  }
  WT_TRY(c.that(a.n_rot > 0 && a.n_rot % 2 == 0 && a.n_rot <= a.x.ne[0] && a.n_rot <= 512,
                "n_rot must be even, > 0, <= head_dim and <= 512"));
  WT_TRY(c.that(std::isfinite(a.mscale) && a.mscale > 0.0f, "mscale must be positive and finite"));
  if (!a.freq_divisors.empty()) {
    WT_TRY(c.floats(a.freq_divisors, "frequency divisors"));
    WT_TRY(c.that(a.freq_divisors.ne[0] >= a.n_rot / 2, "fewer frequency divisors than n_rot / 2"));
  }
  if (!a.angles.empty()) {
    WT_TRY(c.floats(a.angles, "angles"));
    WT_TRY(c.that(a.angles.ne[0] == a.n_rot, "angles rows must be n_rot long (cos and sin of each pair)"));
    // Kernels read row r at r * nb[1]: a 2-D table.
    WT_TRY(c.that(a.angles.ne[2] == 1 && a.angles.ne[3] == 1, "angles must be a 2-D table [n_rot, rows]"));
    WT_TRY(c.that(a.angles.ne[1] >= a.x.ne[2], "fewer angle rows than rows of x"));
  }
  return c.that(a.x.ne[2] == 0 || a.positions, "positions are missing");
}

Status check(const Check& c, const MatmulOp& a) {
  WT_TRY(c.floats(a.x, "x"));
  WT_TRY(c.that(a.w3.empty() || !a.w2.empty(), "w3 without w2"));
  const MatmulProducts p = matmul_products(a);
  for (int i = 0; i < p.n; ++i) {
    WT_TRY(c.floats(*p.dst[i], i == 0 ? "dst" : i == 1 ? "dst2" : "dst3"));
    WT_TRY(c.weights(*p.w[i], i == 0 ? "weights" : i == 1 ? "weights w2" : "weights w3"));
    WT_TRY(c.that(a.x.ne[0] == p.w[i]->ne[0], "x rows and weight rows differ in length"));
    WT_TRY(c.holds(*p.dst[i], a.x.n_rows(), p.w[i]->ne[1], i == 0 ? "dst" : i == 1 ? "dst2" : "dst3"));
  }
  if (!matmul_fused(a)) return Status::ok();
  WT_TRY(c.that(a.x.n_rows() == 1, "a fused call (norm, gate, bias, accumulate, rope) takes one row of x"));
  WT_TRY(c.that(a.norm.empty() || a.gate.empty(), "norm and gate together"));
  WT_TRY(c.that((a.bias2.empty() || !a.w2.empty()) && (a.bias3.empty() || !a.w3.empty()), "a bias without its product"));
  for (int i = 0; i < p.n; ++i) {
    if (p.bias[i]->empty()) continue;
    WT_TRY(c.floats(*p.bias[i], "bias"));
    WT_TRY(c.holds(*p.bias[i], 1, p.w[i]->ne[1], "bias"));
  }
  if (!a.rope.x.empty()) {
    const RopeOp& r = a.rope;
    WT_TRY(check(c, r));
    WT_TRY(c.that(!a.accumulate, "rope with accumulate"));
    WT_TRY(c.that(r.x.ne[0] % 2 == 0, "rope's head_dim is odd"));
    auto is_view_of = [](const Tensor& heads, const Tensor& out, const Tensor& w) {
      return heads.data == out.data && heads.ne[2] == 1 && heads.ne[0] * heads.ne[1] == w.ne[1] &&
             heads.nb[1] == sizeof(float) * static_cast<size_t>(heads.ne[0]);
    };
    WT_TRY(c.that(is_view_of(r.x, a.dst, a.w), "rope's x is not dst's heads"));
    WT_TRY(c.that(r.x2.empty() || (!a.w2.empty() && is_view_of(r.x2, a.dst2, a.w2)), "rope's x2 is not dst2's heads"));
  }
  if (a.glu) {
    WT_TRY(c.that(!a.w2.empty() && a.w3.empty() && a.w2.ne[1] == a.w.ne[1],
                  "glu takes two products of one width (a feed-forward's gate and up)"));
    // swiglu runs over dst's rows as they are: exactly the products' width.
    WT_TRY(c.that(a.dst.ne[0] == a.w.ne[1] && a.dst2.ne[0] == a.w.ne[1], "glu's dst and dst2 must be the products' width"));
    WT_TRY(c.that(!a.accumulate && a.rope.x.empty(), "glu with accumulate or rope"));
    const char* d = static_cast<const char*>(a.dst.data);
    const char* d2 = static_cast<const char*>(a.dst2.data);
    const int64_t span = a.w.ne[1] * static_cast<int64_t>(sizeof(float));
    WT_TRY(c.that(d + span <= d2 || d2 + span <= d, "glu's dst and dst2 overlap"));
  }
  if (!a.norm.empty()) {
    WT_TRY(c.floats(a.norm, "norm"));
    WT_TRY(c.that(a.norm.ne[0] >= a.x.ne[0], "norm is shorter than a row"));
  }
  if (!a.gate.empty()) {
    WT_TRY(c.floats(a.gate, "gate"));
    WT_TRY(c.holds(a.gate, 1, a.x.ne[0], "gate"));
  }
  // The products are written while other threads still read the input.
  auto bytes = [](const Tensor& t, int64_t n) {
    const char* b = static_cast<const char*>(t.data);
    return std::pair{b, b + n * static_cast<int64_t>(sizeof(float))};
  };
  for (int i = 0; i < p.n; ++i) {
    const auto out = bytes(*p.dst[i], p.w[i]->ne[1]);
    for (const Tensor* in : {&a.x, &a.gate, &a.norm}) {
      if (in->empty()) continue;
      const auto r = bytes(*in, a.x.ne[0]);
      WT_TRY(c.that(out.second <= r.first || r.second <= out.first, "a fused call's dst overlaps its input"));
    }
  }
  return Status::ok();
}

Status check(const Check& c, const AddOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.a, "a"));
  WT_TRY(c.floats(a.b, "b"));
  WT_TRY(c.that(a.b.ne[0] >= a.a.ne[0], "b rows are shorter than a's"));
  WT_TRY(c.that(a.b.n_rows() == 1 || a.b.n_rows() >= a.a.n_rows(), "b has neither one row nor a's rows"));
  return c.holds(a.dst, a.a.n_rows(), a.a.ne[0], "dst");
}

template <typename Attention>
Status check_attention(const Check& c, const Attention& a, int64_t keys_needed) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.q, "q"));
  // k and v: the KV cache, f32, f16 or q8_0 (the same for both).
  WT_TRY(c.floats(a.k, "k", /*kv_types_too=*/true));
  WT_TRY(c.floats(a.v, "v", /*kv_types_too=*/true));
  WT_TRY(c.that(a.k.type == a.v.type, "k and v differ in type"));
  WT_TRY(c.heads(a.q, a.k, a.v));
  WT_TRY(c.that(a.dst.ne[0] >= a.q.ne[0] && a.dst.ne[1] >= a.q.ne[1] && a.dst.ne[2] >= a.q.ne[2],
                "dst is smaller than q"));
  WT_TRY(c.that(a.pos0 >= 0, "pos0 is negative"));
  return c.that(a.k.ne[2] >= keys_needed, "k and v have fewer rows than the queries see");
}

Status check(const Check& c, const AttentionPrefillOp& a) {
  WT_TRY(c.that(a.window >= 0, "window is negative"));
  return check_attention(c, a, static_cast<int64_t>(a.pos0) + a.q.ne[2]);
}

Status check(const Check& c, const AttentionDecodeOp& a) {
  WT_TRY(c.that(a.q.ne[2] == 1, "q must be one row"));
  WT_TRY(c.that(a.window >= 0, "window is negative"));
  if (a.key_rows) {
    WT_TRY(c.that(a.window == 0, "a window with key rows"));
    WT_TRY(check_attention(c, a, 0));
    return c.indices(a.key_rows, a.n_key_rows, a.k.ne[2], "key rows");
  }
  return check_attention(c, a, static_cast<int64_t>(a.pos0) + 1);
}

Status check(const Check& c, const SwigluOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.gate, "gate"));
  WT_TRY(c.floats(a.up, "up"));
  WT_TRY(c.holds(a.up, a.gate.n_rows(), a.gate.ne[0], "up"));
  return c.holds(a.dst, a.gate.n_rows(), a.gate.ne[0], "dst");
}

Status check(const Check& c, const CopyRowsOp& a) {
  // f32 rows into any KV type, or a KV cache's rows into one of its type (the pager's
  // staging of a pruned prompt into its blocks).
  WT_TRY(c.floats(a.src, "src", /*kv_types_too=*/true));
  WT_TRY(c.floats(a.dst, "dst", /*kv_types_too=*/true));
  WT_TRY(c.that(a.src.type == a.dst.type || a.src.type == DType::f32, "only f32 rows are copied into another type"));
  WT_TRY(c.that(a.row0 >= 0, "row0 is negative"));
  if (!a.dst2.empty() || !a.src2.empty()) {
    WT_TRY(c.floats(a.src2, "src2", /*kv_types_too=*/true));
    WT_TRY(c.floats(a.dst2, "dst2", /*kv_types_too=*/true));
    WT_TRY(c.that(a.src2.type == a.src.type && a.dst2.type == a.dst.type, "src2 and dst2 must have src's and dst's types"));
    WT_TRY(c.that(a.src2.ne[0] == a.src.ne[0] && a.src2.n_rows() == a.src.n_rows(), "src2 must have src's row width and rows"));
    WT_TRY(c.holds(a.dst2, static_cast<int64_t>(a.row0) + a.src2.n_rows(), a.src2.ne[0], "dst2"));
  }
  return c.holds(a.dst, static_cast<int64_t>(a.row0) + a.src.n_rows(), a.src.ne[0], "dst");
}

Status check(const Check& c, const WindowScoresOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.q, "q"));
  WT_TRY(c.floats(a.k, "k", /*kv_types_too=*/true));  // the KV cache's keys at decode (the oracle)
  WT_TRY(c.heads(a.q, a.k, Tensor{}));
  WT_TRY(c.that(a.window >= 1 && a.window <= a.q.ne[2], "the window must be in [1, q rows]"));
  WT_TRY(c.that(a.n_visible <= a.k.ne[2], "n_visible is past k's rows"));
  WT_TRY(c.that(a.n_visible <= 0 || a.window <= a.n_visible, "the window is longer than the visible keys"));
  WT_TRY(c.that(a.dst.ne[0] >= 1 && a.dst.ne[0] <= a.k.ne[2], "dst columns must be in [1, k rows]"));
  WT_TRY(c.that(a.dst.ne[1] >= a.q.ne[1], "dst has fewer heads than q"));
  return c.that(a.dst.ne[2] >= (a.per_query ? a.window : 1), "dst has fewer rows than the window's outputs");
}

Status check(const Check& c, const Pool1dOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.src, "src"));
  WT_TRY(c.that(a.kernel >= 1 && a.kernel % 2 == 1, "kernel must be odd and >= 1"));
  WT_TRY(c.that(a.dst.data != a.src.data, "dst aliases src"));
  return c.holds(a.dst, a.src.n_rows(), a.src.ne[0], "dst");
}

Status check(const Check& c, const TopkOp& a) {
  WT_TRY(c.floats(a.scores, "scores"));
  WT_TRY(c.that(a.k >= 0, "k is negative"));
  return c.that(a.k == 0 || a.scores.n_rows() == 0 || a.out, "out is missing");
}

Status check(const Check& c, const GatherRowsOp& a) {
  // Rows into the same type, or f32 into f16 or q8_0 (rounded: a KV cache of that type).
  WT_TRY(c.floats(a.dst, "dst", /*kv_types_too=*/true));
  WT_TRY(c.floats(a.src, "src", /*kv_types_too=*/true));
  WT_TRY(c.that(a.src.type == a.dst.type || a.src.type == DType::f32, "only f32 rows are gathered into another type"));
  WT_TRY(c.that(a.dst.data != a.src.data, "dst aliases src"));
  // A 3-D tensor is [rows, heads, d]; a 2-D one [rows, d] with one head.
  const bool src3 = a.src.n_dims >= 3, dst3 = a.dst.n_dims >= 3;
  const int64_t heads = src3 ? a.src.ne[1] : 1, src_rows = src3 ? a.src.ne[2] : a.src.ne[1];
  WT_TRY(c.that(a.n_ids >= 0, "negative n_ids"));
  WT_TRY(c.that(!a.per_head || (heads > 0 && a.n_ids % heads == 0), "per head: n_ids is not rows x heads"));
  const int64_t n_sel = a.per_head ? a.n_ids / heads : a.n_ids;
  WT_TRY(c.that(a.dst.ne[0] >= a.src.ne[0], "dst rows are shorter than src rows"));
  WT_TRY(c.that(dst3 ? a.dst.ne[1] >= heads && a.dst.ne[2] >= n_sel : heads == 1 && a.dst.ne[1] >= n_sel,
                "dst is smaller than the gathered rows"));
  return c.indices(a.ids, a.n_ids, src_rows, "row ids");
}

Status check(const Check& c, const BlockScoresOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.q, "q"));
  WT_TRY(c.floats(a.k, "k", /*kv_types_too=*/true));  // the KV cache's keys at decode
  WT_TRY(c.heads(a.q, a.k, Tensor{}));
  WT_TRY(c.that(a.block >= 1 && a.unit >= 1, "block and unit must be >= 1"));
  const int64_t keys = a.key_count();
  if (a.key_ids) WT_TRY(c.indices(a.key_ids, a.n_keys, a.k.ne[2], "key ids"));
  return c.that(a.dst.ne[0] >= (keys + a.block - 1) / a.block, "dst has fewer entries than blocks");
}

Status check(const Check& c, const KeyBoundsOp& a) {
  WT_TRY(c.halves(a.dst, "dst"));
  WT_TRY(c.floats(a.k, "k", /*kv_types_too=*/true));  // the KV cache's keys
  WT_TRY(c.that(a.block >= 1, "block must be >= 1"));
  WT_TRY(c.that(a.dst.data != a.k.data, "dst aliases k"));
  WT_TRY(c.that(a.dst.ne[0] == 2 * a.k.ne[0] && a.dst.ne[1] == a.k.ne[1],
                "dst must be [n_blocks, n_head_kv, 2 * head_dim] of k's heads"));
  const int64_t keys = a.key_count();
  if (a.key_ids) WT_TRY(c.indices(a.key_ids, a.n_keys, a.k.ne[2], "key ids"));
  return c.that(a.dst.ne[2] >= (keys + a.block - 1) / a.block, "dst has fewer rows than blocks");
}

Status check(const Check& c, const BoundScoresOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.q, "q"));
  WT_TRY(c.halves(a.bounds, "bounds"));
  WT_TRY(c.that(a.q.ne[2] >= 1, "q has no row"));
  WT_TRY(c.that(a.bounds.ne[0] == 2 * a.q.ne[0], "bounds rows must be 2 * head_dim"));
  WT_TRY(c.that(a.bounds.ne[1] >= 1 && a.q.ne[1] % a.bounds.ne[1] == 0, "q's heads are not a multiple of the bounds' KV heads"));
  return c.that(a.dst.ne[0] >= 1 && a.dst.ne[0] <= a.bounds.ne[2], "dst blocks must be in [1, bounds rows]");
}

Status check(const Check& c, const KvSimilarityOp& a) {
  WT_TRY(c.floats(a.dst, "dst"));
  WT_TRY(c.floats(a.k, "k"));
  WT_TRY(c.floats(a.v, "v"));
  WT_TRY(c.floats(a.anchors, "anchors"));
  WT_TRY(c.that(a.v.ne[0] == a.k.ne[0] && a.v.ne[1] == a.k.ne[1] && a.v.ne[2] >= a.k.ne[2], "k and v differ in shape"));
  WT_TRY(c.that(a.anchors.ne[0] == a.k.ne[0] && a.anchors.ne[1] == a.k.ne[1] && a.anchors.ne[2] >= 2,
                "anchors must be [2, n_head_kv, head_dim] of k's heads"));
  return c.that(a.dst.ne[0] >= 2 && a.dst.ne[1] >= a.k.ne[1] && a.dst.ne[2] >= a.k.ne[2], "dst is smaller than k's rows");
}

Status check(const Check& c, const ArgmaxOp& a) {
  WT_TRY(c.floats(a.x, "x"));
  WT_TRY(c.that(a.x.ne[0] >= 1, "empty row"));
  return c.that(a.out != nullptr, "out is missing");
}

}  // namespace

void rope_freqs(const RopeOp& r, double* freqs) {
  const float* div = r.freq_divisors.empty() ? nullptr : static_cast<const float*>(r.freq_divisors.data);
  for (int32_t i = 0; i < r.n_rot / 2; ++i) {
    double f = std::pow(static_cast<double>(r.theta_base), -2.0 * i / r.n_rot);
    if (div) f /= div[i];
    freqs[i] = f;
  }
}

void rope_angles(const RopeOp& r, const double* freqs, int32_t position, float* out) {
  const double pos = static_cast<double>(position) * r.position_scale;
  for (int32_t i = 0; i < r.n_rot / 2; ++i) {
    const double angle = pos * freqs[i];
    out[2 * i] = static_cast<float>(std::cos(angle)) * r.mscale;
    out[2 * i + 1] = static_cast<float>(std::sin(angle)) * r.mscale;
  }
}

bool op_needs_gemma_kernels(const OpCall& call) {
  switch (call.op) {
    case Op::embed: return call.get<EmbedOp>().scale != 1.0f;
    case Op::swiglu: return call.get<SwigluOp>().gelu;
    case Op::attention_prefill: return call.get<AttentionPrefillOp>().window > 0;
    case Op::attention_decode: return call.get<AttentionDecodeOp>().window > 0;
    default: return false;
  }
}

Status validate_op(const OpCall& call) {
  if (!call.holds_op_args())
    return error(WT_ERR_INVALID_ARGUMENT, std::string("op ") + op_name(call.op) + ": the call does not hold its arguments");
  const Check c(call.op);
  switch (call.op) {
#define WT_OP(name, Args) \
  case Op::name:          \
    return check(c, call.get<Args>());
#include "ops.def"
#undef WT_OP
    case Op::count:
      break;
  }
  return error(WT_ERR_INVALID_ARGUMENT, "unknown op");
}

OpHostArrays op_host_arrays(OpCall& call) {
  OpHostArrays h;
  switch (call.op) {
    case Op::embed: {
      EmbedOp& a = call.get<EmbedOp>();
      h.in = &a.ids, h.n_in = a.dst.n_rows();
      break;
    }
    case Op::rope: {
      RopeOp& a = call.get<RopeOp>();
      h.in = &a.positions, h.n_in = a.x.ne[2];
      break;
    }
    case Op::matmul: {  // a fused rope's position
      MatmulOp& a = call.get<MatmulOp>();
      if (!a.rope.x.empty()) h.in = &a.rope.positions, h.n_in = 1;
      break;
    }
    case Op::attention_prefill: {
      AttentionPrefillOp& a = call.get<AttentionPrefillOp>();
      h.in = &a.skip_rows, h.n_in = a.q.ne[2];
      break;
    }
    case Op::attention_decode: {
      AttentionDecodeOp& a = call.get<AttentionDecodeOp>();
      h.in = &a.key_rows, h.n_in = a.n_key_rows;
      break;
    }
    case Op::gather_rows: {
      GatherRowsOp& a = call.get<GatherRowsOp>();
      h.in = &a.ids, h.n_in = a.n_ids;
      break;
    }
    case Op::block_scores: {
      BlockScoresOp& a = call.get<BlockScoresOp>();
      h.in = &a.key_ids, h.n_in = a.n_keys;
      break;
    }
    case Op::key_bounds: {
      KeyBoundsOp& a = call.get<KeyBoundsOp>();
      h.in = &a.key_ids, h.n_in = a.n_keys;
      break;
    }
    case Op::topk: {
      TopkOp& a = call.get<TopkOp>();
      h.out = &a.out, h.n_out = a.k > 0 ? a.scores.n_rows() * a.k : 0;
      break;
    }
    case Op::argmax: {
      ArgmaxOp& a = call.get<ArgmaxOp>();
      h.out = &a.out, h.n_out = 1;
      break;
    }
    default:
      break;
  }
  return h;
}

}  // namespace wt
