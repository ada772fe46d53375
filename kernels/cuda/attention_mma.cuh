// attention_prefill's tensor-core kernel (attention_mma.cu), which attention.cu launches
// where tensor_core_paths.h's prefill_on_tensor_cores holds: the rows, skip flags and packed
// kept rows as the f32 kernel takes them (attention_rows.cuh), over a cache of kv_type (f32,
// f16 or q8_0: kv_read.cuh).
#pragma once

#include "attention_rows.cuh"
#include "kernels/dtype.h"
#include "launch.cuh"

namespace wt::cuda {

Status attention_prefill_mma(const AttnArgs& a, DType kv_type, int64_t n_head_kv, const Launch& l);

}  // namespace wt::cuda
