// The three steps of bound_scores (bound_scores.cpp), one set per ISA build
// (bound_scores_impl.h): bound_scores.cpp picks a set at run time and runs the steps with a
// barrier between them.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace wt::cpu {

struct BoundScoreSteps {
  // Blocks [b0, b1): every head's bound of every block into u[head][block]; ws: the worker's
  // scratch (bound_dots_floats).
  void (*dots)(const Tensor& q, const Tensor& bounds, float scale, int64_t n_blocks, int64_t b0, int64_t b1,
               float* ws, float* u);
  // Heads [h0, h1): each head's row of u becomes its log-softmax over the blocks.
  void (*rows)(float* u, int64_t n_blocks, int64_t h0, int64_t h1);
  // Blocks [b0, b1): out[b] = log sum over heads of exp(u[h][b]).
  void (*blocks)(const float* u, float* out, int64_t n_head, int64_t n_blocks, int64_t b0, int64_t b1);
};

}  // namespace wt::cpu
