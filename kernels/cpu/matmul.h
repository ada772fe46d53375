// Matrix multiply with quantized weights: the op that dominates prefill and decode.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/tensor.h"
#include "thread_ctx.h"

namespace wt::cpu {

// Bytes of scratch matmul() needs for activations x of n_rows rows of k elements against
// weights of type wtype (quantized activations, per-thread tiles). Never zero-sized calls.
size_t matmul_workspace_bytes(DType wtype, int64_t k, int64_t n_rows);

// y[n_rows, n_out] = x[n_rows, k] (f32) · W[n_out, k]^T, W of any supported DType.
// Called by every worker of a launch with the same arguments; uses tc.sync() between its
// phases. workspace holds matmul_workspace_bytes(...) bytes (64-byte aligned).
// Rows of x and y may be strided (x.nb[1], y.nb[1]).
void matmul(const ThreadCtx& tc, const Tensor& y, const Tensor& w, const Tensor& x,
            void* workspace);

// The same product with f32 activations: weight tiles are dequantized to f32 and
// multiplied in f32, so only the weights' own quantization remains. Slower; used to check
// the model against float references and to measure what int8 activations cost.
size_t matmul_f32_workspace_bytes(int64_t k, int n_threads);
void matmul_f32(const ThreadCtx& tc, const Tensor& y, const Tensor& w, const Tensor& x, void* workspace);

// Dequantizes row `row` of w (w.ne[0] elements) into dst as f32. Used by embed and tests.
void dequantize_row(const Tensor& w, int64_t row, float* dst);

// Which SIMD path matmul picked at run time ("avx512-vnni", "avx2", "neon", "scalar").
const char* matmul_isa();

}  // namespace wt::cpu
