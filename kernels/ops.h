// One op call: what the engine asks a backend to run. Op semantics and slot usage are in
// ops.def next to each op's name.
#pragma once

#include <cstdint>

#include "tensor.h"

namespace wt {

enum class Op : uint32_t {
#define WT_OP(name) name,
#include "ops.def"
#undef WT_OP
  count
};

const char* op_name(Op op);

struct OpCall {
  Op op = Op::count;
  Tensor dst;
  Tensor src[3];
  const int32_t* ids = nullptr;
  int32_t n_ids = 0;
  int32_t i[4] = {0, 0, 0, 0};
  float f[4] = {0, 0, 0, 0};
  int32_t* out_i = nullptr;  // host result for reductions (argmax)
};

}  // namespace wt
