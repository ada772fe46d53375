// The binary layouts of the public params structs, and the one way an entry point reads a
// caller's struct: by its struct_size (include/whittle.h, "Binary compatibility").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/raw_value.h"
#include "base/status.h"

namespace wt::api {

// Reads the caller's *in (NULL: the defaults) into *out, in this library's layout: the
// fields of the caller's layout are copied, the later ones keep their defaults, and
// out->struct_size is sizeof the current struct. WT_ERR_INVALID_ARGUMENT: a struct_size no
// layout has (too small, too large, or between two layouts; the message names the struct,
// the size and the sizes accepted). The context params' prune struct is checked too.
Status read_params(const wt_model_params* in, wt_model_params* out);
Status read_params(const wt_tokenize_params* in, wt_tokenize_params* out);
Status read_params(const wt_prune_params* in, wt_prune_params* out);
Status read_params(const wt_context_params* in, wt_context_params* out);
Status read_params(const wt_sampler_params* in, wt_sampler_params* out);

// The end of the caller's wt_prune_params layout in bytes: the fields wholly before it are
// the ones that struct has (wt_prune_set_param writes no field beyond it). Errors as above.
Status prune_params_extent(const wt_prune_params* p, size_t* out_bytes);

using wt::raw_value;  // base/raw_value.h

}  // namespace wt::api
