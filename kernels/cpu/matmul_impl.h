// Internal interface between matmul.cpp (validation, threading, workspace) and the
// per-ISA kernels in matmul_{scalar,avx2,avx512,neon}. Not part of the kernel API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/tensor.h"
#include "quant.h"

namespace wt::cpu::mm {

// Row r of a tensor with up to three row dimensions (ne[1..3]) and any byte strides.
struct Rows {
  char* base;
  int64_t ne1, ne2;
  size_t nb1, nb2, nb3;
  char* row(int64_t r) const {
    const int64_t i1 = r % ne1, i23 = r / ne1;
    return base + i1 * nb1 + (i23 % ne2) * nb2 + (i23 / ne2) * nb3;
  }
};
inline Rows rows_of(const Tensor& t) {
  return Rows{static_cast<char*>(t.data), t.ne[1], t.ne[2], t.nb[1], t.nb[2], t.nb[3]};
}

// One matmul resolved for the kernels: y[j][i] = sum_e W[i][e] x[j][e], for weight rows
// i in [0, n_out) and activation rows j in [0, n_rows).
struct Job {
  DType wtype;
  int64_t k, n_out, n_rows;
  const uint8_t* w;     // weight row i at w + i * w_stride
  size_t w_stride;
  const uint8_t* xq;    // quantized activation row j at xq + j * xq_stride (quant types)
  size_t xq_stride;
  Rows x;               // f32 activations (float weight types)
  Rows y;               // f32 outputs
};

// The f32-activation matmul's blocking, one loop for every ISA: column panels of x that
// stay in a 512 KiB cache, weight rows by tiles of up to mr_max, x rows by tiles of up to
// nr_max; tiles[(mr - 1) * nr_max + (nr - 1)] is the ISA's register kernel for an mr x nr
// tile, which computes y[j][i] for its weight rows w[i] and x rows x[j] over k.
using FTileFn = void (*)(const uint8_t* const* w, const float* const* x, float* const* y, int64_t k);
void fmatmul_tiled(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1, const FTileFn* tiles, int mr_max,
                   int nr_max);

// A SIMD path. qmatmul / fmatmul compute the outputs of weight rows [i0, i1) for
// activation rows [j0, j1); every output's summation order depends only on k (never on
// the ranges), which keeps results independent of the thread split.
struct Kernels {
  const char* name;
  void (*quantize_row)(const float* x, int64_t k, ActKind kind, uint8_t* dst);  // quant.h layout
  void (*qmatmul)(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
  void (*fmatmul)(const Job& job, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
  // The weight unpack, exposed for tests: chunk c of a row of quantized type t, in the
  // chunk layout with the path's offsets: weight_chunk_ref(t, row, l, c, fill_offset(t),
  // dst) gives the same vectors and scale values. Null where a path unpacks block by block.
  void (*fill_chunk)(DType t, const uint8_t* row, const ActLayout& l, int64_t c, uint8_t* dst);
  int (*fill_offset)(DType t);
};

extern const Kernels kScalarKernels;
#if defined(__x86_64__)
extern const Kernels kAvx2Kernels;
extern const Kernels kAvx512Kernels;
#endif
#if defined(__aarch64__)
extern const Kernels kNeonKernels;     // plain NEON (widening multiplies)
extern const Kernels kNeonDotKernels;  // ARMv8.2 dot product (sdot)
#endif

// The path named `name` if this CPU can run it, else nullptr (tests, benchmarks).
const Kernels* find_kernels(const char* name);

}  // namespace wt::cpu::mm

namespace wt::cpu {

// Tests and benchmarks: force a path by name ("scalar", "avx2", "avx512-vnni", "neon",
// "neon-dot"); nullptr restores the automatic choice. Returns false (and changes nothing)
// if the name is unknown or this CPU cannot run it. Not thread-safe: call between runs.
bool set_matmul_isa_for_testing(const char* name);

// Every path this CPU can run, best first, as names for set_matmul_isa_for_testing.
int matmul_isa_list(const char** out_names, int max_names);

}  // namespace wt::cpu
