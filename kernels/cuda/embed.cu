// embed on CUDA (embed.cuh): one thread per output element, grid-stride; each decodes its
// own weight (embed is one row per token, never the hot op).
#include "common.cuh"
#include "embed.cuh"

namespace wt::cuda {
namespace {

template <typename W>
__global__ void embed_kernel(float* dst, size_t dst_nb1, const uint8_t* table, size_t t_nb1, int64_t n_vocab,
                             const int32_t* ids, int64_t d, int64_t n) {
  const int64_t total = d * n;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / d, i = idx % d;
    const int64_t id = ids[r];
    row_at<float>(dst, r, dst_nb1)[i] = id >= 0 && id < n_vocab ? W::load1(table + id * t_nb1, i) : 0.0f;
  }
}

template <typename W>
Status run(const OpCall& c, const Launch& l, int64_t d, int64_t n) {
  embed_kernel<W><<<grid_for(d * n, l), kBlock, 0, l.stream>>>(static_cast<float*>(c.dst.data), c.dst.nb[1],
                                                               static_cast<const uint8_t*>(c.src[0].data),
                                                               c.src[0].nb[1], c.src[0].ne[1], c.ids, d, n);
  return launch_status("embed");
}

}  // namespace

Status embed(const OpCall& c, const Launch& l) {
  WT_TRY(check_f32(c.dst, "embed", "dst"));
  const Tensor& t = c.src[0];
  if (t.empty()) return bad_arg("embed", "table is missing");
  if (!weight_type_ok(t.type))
    return error(WT_ERR_UNSUPPORTED, std::string("cuda: embed of ") + dtype_name(t.type) +
                                         " weights is not implemented yet (K-quants, bf16: a later step)");
  size_t row_bytes = 0;
  if (!dtype_row_bytes(t.type, t.ne[0], &row_bytes)) return bad_arg("embed", "table rows are not whole blocks");
  const int64_t d = c.dst.ne[0], n = c.dst.ne[1];
  if (d > t.ne[0]) return bad_arg("embed", "dst rows are longer than table rows");
  if (d * n == 0) return Status::ok();
  if (!c.ids) return bad_arg("embed", "needs ids");
  switch (t.type) {
    case DType::f32: return run<WF32>(c, l, d, n);
    case DType::f16: return run<WF16>(c, l, d, n);
    case DType::q8_0: return run<WQ8_0>(c, l, d, n);
    case DType::q4_0: return run<WQ4_0>(c, l, d, n);
    default: return run<WQ4_1>(c, l, d, n);
  }
}

size_t embed_workspace_bytes(const OpCall&) { return 0; }

}  // namespace wt::cuda
