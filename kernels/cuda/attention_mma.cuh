// attention_prefill's tensor-core kernel (attention_mma.cu), which attention.cu launches
// where tensor_core_paths.h's prefill_on_tensor_cores holds: the rows, skip flags and packed
// kept rows as the f32 kernel takes them (attention_rows.cuh).
#pragma once

#include "attention_rows.cuh"
#include "launch.cuh"

namespace wt::cuda {

Status attention_prefill_mma(const AttnArgs& a, int64_t n_head_kv, const Launch& l);

}  // namespace wt::cuda
