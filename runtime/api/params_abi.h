// The binary layouts of the public params and output structs, and the one way an entry
// point reads a caller's params struct or fills its output struct: by its struct_size
// (include/whittle.h, "Binary compatibility").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "base/raw_value.h"
#include "base/status.h"

namespace wt::api {

// The fields one WT_API_VERSION appended to a struct.
struct Layout {
  int32_t api;   // the WT_API_VERSION that added these fields
  size_t begin;  // offset of the first field of the layout (0, struct_size, for the first)
  size_t end;    // end of its last field
};

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

// Writes `filled` (every field set; its struct_size is ignored) into the caller's output
// struct *out as far as out->struct_size reaches, and sets out->struct_size to the bytes
// written: the library's size when the caller's is larger. WT_ERR_INVALID_ARGUMENT, nothing
// written: a struct_size below the oldest layout (0: not set) or between two layouts.
Status write_output(const wt_model_info& filled, wt_model_info* out);
Status write_output(const wt_context_plan_info& filled, wt_context_plan_info* out);
Status write_output(const wt_context_stats& filled, wt_context_stats* out);
Status write_output(const wt_prune_stats& filled, wt_prune_stats* out);

// The writer behind write_output over any sound layout table (a struct of `size` bytes and
// `align`, struct_size first): the tests give it a struct with an older layout than its own.
Status write_output_bytes(const char* name, std::span<const Layout> layouts, size_t size, size_t align, const void* filled,
                          void* out);

// The end of the caller's wt_prune_params layout in bytes: the fields wholly before it are
// the ones that struct has (wt_prune_set_param writes no field beyond it). Errors as above.
Status prune_params_extent(const wt_prune_params* p, size_t* out_bytes);

using wt::raw_value;  // base/raw_value.h

}  // namespace wt::api
