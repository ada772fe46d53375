// pool1d: one thread per output element, a grid-stride loop over rows x columns. Column j
// pools x[j - k/2, j - k/2 + k) clipped to the row, taps in order from the left as the CPU
// adds them; average divides by k always (zero padding), max ignores the padding and keeps
// the CPU's comparison (a NaN tap is kept only where the CPU keeps it).
#include "pool1d.cuh"

#include "warp.cuh"
#include "pdl.cuh"

namespace wt::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) pool1d_kernel(RowView dst, int64_t dst_ne1, RowView x, int64_t x_ne1,
                                                          int64_t n, int64_t n_rows, int kernel, bool max) {
  kernel_prologue();
  const int64_t half = kernel / 2;
  const float inv_k = 1.0f / static_cast<float>(kernel);
  const int64_t total = n * n_rows;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = e / n, j = e - r * n;
    const float* in = row_at(x.data, x.nb1, x.nb2, r % x_ne1, r / x_ne1);
    const int64_t lo = j - half > 0 ? j - half : 0;
    const int64_t hi = j - half + kernel < n ? j - half + kernel : n;
    float acc = in[lo];
    for (int64_t t = lo + 1; t < hi; ++t) {
      const float v = in[t];
      acc = max ? (v > acc ? v : acc) : acc + v;
    }
    row_at(dst.data, dst.nb1, dst.nb2, r % dst_ne1, r / dst_ne1)[j] = max ? acc : acc * inv_k;
  }
}

}  // namespace

size_t pool1d_workspace_bytes(const OpCall&) { return 0; }

Status pool1d(const OpCall& c, const Launch& l) {
  const Pool1dOp& a = c.get<Pool1dOp>();
  const Tensor& x = a.src;
  const int64_t n = x.ne[0], n_rows = x.n_rows();
  if (n <= 0 || n_rows <= 0) return Status::ok();
  const int64_t blocks_needed = (n * n_rows + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(blocks_needed < (1 << 20) ? blocks_needed : (1 << 20));
  return launch_kernel("pool1d_kernel", l, pool1d_kernel, blocks, kThreads, 0, view_of(a.dst), a.dst.ne[1], view_of(x),
                       x.ne[1], n, n_rows, a.kernel, a.max);
}

}  // namespace wt::cuda
