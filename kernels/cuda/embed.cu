// embed on CUDA (embed.cuh): one thread per output element, grid-stride; each decodes its
// own weight (embed is one row per token, never the hot op) and multiplies it by the op's
// scale (Gemma 3's sqrt(n_embd); 1 otherwise).
#include <string>

#include "common.cuh"
#include "embed.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

template <typename W>
__global__ void embed_kernel(float* dst, size_t dst_nb1, const uint8_t* table, size_t t_nb1, int64_t n_vocab,
                             const int32_t* ids, int64_t d, int64_t n, float scale) {
  kernel_prologue();
  const int64_t total = d * n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / d, i = idx % d;
    const int64_t id = ids[r];
    row_at<float>(dst, r, dst_nb1)[i] = id >= 0 && id < n_vocab ? W::load1(table + id * t_nb1, i) * scale : 0.0f;
  }
}

template <typename W>
Status run(const EmbedOp& a, const Launch& l, int64_t d, int64_t n) {
  return launch_kernel("embed", l, embed_kernel<W>, grid_for(d * n, l), kBlock, 0, static_cast<float*>(a.dst.data),
                       a.dst.nb[1], static_cast<const uint8_t*>(a.table.data), a.table.nb[1], a.table.ne[1], a.ids, d,
                       n, a.scale);
}

}  // namespace

Status embed(const OpCall& c, const Launch& l) {
  const EmbedOp& a = c.get<EmbedOp>();
  const Tensor& t = a.table;
  if (!weight_type_ok(t.type))
    return unread_weight_type("embed", t.type);
  const int64_t d = a.dst.ne[0], n = a.dst.ne[1];
  if (d * n == 0) return Status::ok();
  switch (t.type) {
    case DType::f32: return run<WF32>(a, l, d, n);
    case DType::f16: return run<WF16>(a, l, d, n);
    case DType::q8_0: return run<WQ8_0>(a, l, d, n);
    case DType::q4_0: return run<WQ4_0>(a, l, d, n);
    case DType::q4_1: return run<WQ4_1>(a, l, d, n);
    case DType::q5_0: return run<WQ5_0>(a, l, d, n);
    case DType::q5_1: return run<WQ5_1>(a, l, d, n);
    case DType::bf16: return run<WBF16>(a, l, d, n);
    case DType::q4_k: return run<WQ4_K>(a, l, d, n);
    case DType::q5_k: return run<WQ5_K>(a, l, d, n);
    default: return run<WQ6_K>(a, l, d, n);
  }
}

size_t embed_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
