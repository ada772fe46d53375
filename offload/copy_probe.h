// The host -> device copy bandwidth the pager's fetches can reach on a backend: one copy of
// `bytes` from pinned host memory to device memory on the copy stream, the pager's own path
// (issue 27: a pager's copy time is judged against this figure, measured in the same
// process). Timed on the host around copy_async and the copy stream's synchronize: one
// warm-up, then the best of three (a copy of that size outlasts the call and the wait).
#pragma once

#include <cstddef>

#include "backends/backend.h"

namespace wt {

// The two buffers are allocated for the call and freed before it returns.
// WT_ERR_INVALID_ARGUMENT: bytes outside [1 MiB, 1 GiB]; a backend's status otherwise
// (WT_ERR_OUT_OF_MEMORY when the buffers do not fit).
Status measure_copy_bandwidth(Backend& backend, size_t bytes, double* out_gbs);

}  // namespace wt
