// Params structs by layout. Each struct has a table of its layouts, oldest first; a layout
// is the group of fields one WT_API_VERSION appended. A caller's struct_size names its
// layout, and only that layout's fields (and the older ones') are read.
//
// Growing a params struct: append the fields at its end, add a layout to its table that
// begins at the first new field, raise WT_API_VERSION in whittle.h and say "since" next to
// the fields. The static_asserts below refuse a field appended without a table entry and a
// layout that could share its size with the one before it.
#include "params_abi.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <string>

namespace wt::api {

namespace {

struct Layout {
  int32_t api;   // the WT_API_VERSION that added these fields
  size_t begin;  // offset of the first field of the layout (0, struct_size, for the first)
  size_t end;    // end of its last field
};

// One struct's layouts. A struct_size s is layout k when end_k <= s <= begin_{k+1} (for the
// newest layout, s <= sizeof): sizeof in an older header is its last field's end rounded up
// to that struct's alignment, which the soundness check keeps below the next layout.
struct Abi {
  const char* name;
  const char* default_fn;
  std::span<const Layout> layouts;
  size_t size;  // sizeof the struct in this library
};

constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// (1) The first layout begins at struct_size; (2) each later one begins after the one before
// ends, at a multiple of the struct's alignment, so an older header's sizeof (at most that
// alignment) lies at or below it: no two layouts accept the same size; (3) the newest ends
// where the struct does, so a field appended without a layout of its own breaks the build;
// (4) versions rise and none is newer than WT_API_VERSION.
constexpr bool sound(std::span<const Layout> l, size_t size, size_t align) {
  if (l.empty() || l[0].begin != 0 || l[0].end == 0) return false;
  for (size_t k = 0; k < l.size(); ++k) {
    if (l[k].end <= l[k].begin || l[k].api < 1 || l[k].api > WT_API_VERSION) return false;
    if (k > 0 && (l[k].begin < l[k - 1].end || l[k].begin % align != 0 || l[k].api <= l[k - 1].api)) return false;
  }
  return round_up(l.back().end, align) == size;
}

constexpr Layout kModelLayouts[] = {
    {1, 0, offsetof(wt_model_params, progress_user) + sizeof(void*)},
};
constexpr Layout kTokenizeLayouts[] = {
    {1, 0, offsetof(wt_tokenize_params, parse_special) + sizeof(bool)},
};
constexpr Layout kPruneLayouts[] = {
    {1, 0, offsetof(wt_prune_params, record_ranking) + sizeof(int32_t)},
};
constexpr Layout kContextLayouts[] = {
    {1, 0, offsetof(wt_context_params, prune) + sizeof(wt_prune_params)},
    {2, offsetof(wt_context_params, memory_budget_bytes), offsetof(wt_context_params, memory_budget_bytes) + sizeof(uint64_t)},
    {3, offsetof(wt_context_params, max_new_tokens), offsetof(wt_context_params, kv_sync_swaps) + sizeof(bool)},
};
constexpr Layout kSamplerLayouts[] = {
    {1, 0, offsetof(wt_sampler_params, seed) + sizeof(uint64_t)},
};

static_assert(offsetof(wt_model_params, struct_size) == 0 && offsetof(wt_tokenize_params, struct_size) == 0 &&
              offsetof(wt_prune_params, struct_size) == 0 && offsetof(wt_context_params, struct_size) == 0 &&
              offsetof(wt_sampler_params, struct_size) == 0);
static_assert(sound(kModelLayouts, sizeof(wt_model_params), alignof(wt_model_params)), "kModelLayouts");
static_assert(sound(kTokenizeLayouts, sizeof(wt_tokenize_params), alignof(wt_tokenize_params)), "kTokenizeLayouts");
static_assert(sound(kPruneLayouts, sizeof(wt_prune_params), alignof(wt_prune_params)), "kPruneLayouts");
static_assert(sound(kContextLayouts, sizeof(wt_context_params), alignof(wt_context_params)), "kContextLayouts");
static_assert(sound(kSamplerLayouts, sizeof(wt_sampler_params), alignof(wt_sampler_params)), "kSamplerLayouts");
static_assert(std::max({std::end(kModelLayouts)[-1].api, std::end(kTokenizeLayouts)[-1].api,
                        std::end(kPruneLayouts)[-1].api, std::end(kContextLayouts)[-1].api,
                        std::end(kSamplerLayouts)[-1].api}) == WT_API_VERSION,
              "WT_API_VERSION is the version of the newest layout");
// wt_context_params holds a wt_prune_params by value, so a new prune layout moves every
// context field after `prune` for callers built with the older one: read_params(context)
// would then have to take those fields at offsetof(prune) + the caller's prune.struct_size.
static_assert(std::size(kPruneLayouts) == 1,
              "wt_prune_params grew: read the wt_context_params fields after prune at the caller's offsets");

constexpr Abi kModelAbi{"wt_model_params", "wt_model_default_params", kModelLayouts, sizeof(wt_model_params)};
constexpr Abi kTokenizeAbi{"wt_tokenize_params", "wt_tokenize_default_params", kTokenizeLayouts,
                           sizeof(wt_tokenize_params)};
constexpr Abi kPruneAbi{"wt_prune_params", "wt_prune_default_params", kPruneLayouts, sizeof(wt_prune_params)};
constexpr Abi kContextPruneAbi{"wt_context_params.prune", "wt_prune_default_params", kPruneLayouts,
                               sizeof(wt_prune_params)};
constexpr Abi kContextAbi{"wt_context_params", "wt_context_default_params", kContextLayouts,
                          sizeof(wt_context_params)};
constexpr Abi kSamplerAbi{"wt_sampler_params", "wt_sampler_default_params", kSamplerLayouts, sizeof(wt_sampler_params)};

size_t upper(const Abi& abi, size_t k) { return k + 1 < abi.layouts.size() ? abi.layouts[k + 1].begin : abi.size; }

std::string accepted(const Abi& abi) {
  std::string s;
  for (size_t k = 0; k < abi.layouts.size(); ++k) {
    const size_t lo = abi.layouts[k].end, hi = upper(abi, k);
    if (!s.empty()) s += ", ";
    s += std::to_string(lo) + (hi > lo ? ".." + std::to_string(hi) : std::string()) + " (API " +
         std::to_string(abi.layouts[k].api) + ")";
  }
  return s;
}

Status find_layout(const Abi& abi, size_t struct_size, const Layout** out) {
  for (size_t k = 0; k < abi.layouts.size(); ++k) {
    if (struct_size >= abi.layouts[k].end && struct_size <= upper(abi, k)) {
      *out = &abi.layouts[k];
      return Status::ok();
    }
  }
  std::string why;
  if (struct_size == 0) {
    why = "fill the struct with " + std::string(abi.default_fn) + "()";
  } else if (struct_size < abi.layouts[0].end) {
    why = "smaller than the oldest layout this library reads";
  } else if (struct_size > abi.size) {
    why = "larger than this library's: the application was built against a newer whittle.h than this library "
          "(API version " + std::to_string(WT_API_VERSION) + ")";
  } else {
    why = "no layout of the struct has this size";
  }
  return error(WT_ERR_INVALID_ARGUMENT, std::string(abi.name) + ".struct_size is " + std::to_string(struct_size) +
                                            ": " + why + "; this library reads struct_size " + accepted(abi));
}

template <typename T>
Status read_struct(const Abi& abi, const T* in, const T& defaults, T* out) {
  *out = defaults;
  if (!in) return Status::ok();
  size_t struct_size = 0;
  std::memcpy(&struct_size, in, sizeof struct_size);
  const Layout* layout = nullptr;
  WT_TRY(find_layout(abi, struct_size, &layout));
  std::memcpy(static_cast<void*>(out), in, layout->end);  // the caller's fields; the rest keep their defaults
  out->struct_size = sizeof(T);
  return Status::ok();
}

}  // namespace

Status read_params(const wt_model_params* in, wt_model_params* out) {
  return read_struct(kModelAbi, in, wt_model_default_params(), out);
}

Status read_params(const wt_tokenize_params* in, wt_tokenize_params* out) {
  return read_struct(kTokenizeAbi, in, wt_tokenize_default_params(), out);
}

Status read_params(const wt_prune_params* in, wt_prune_params* out) {
  return read_struct(kPruneAbi, in, wt_prune_default_params(), out);
}

Status read_params(const wt_context_params* in, wt_context_params* out) {
  WT_TRY(read_struct(kContextAbi, in, wt_context_default_params(), out));
  if (!in) return Status::ok();
  const wt_prune_params theirs = out->prune;  // part of every context layout
  return read_struct(kContextPruneAbi, &theirs, wt_prune_default_params(), &out->prune);
}

Status read_params(const wt_sampler_params* in, wt_sampler_params* out) {
  return read_struct(kSamplerAbi, in, wt_sampler_default_params(), out);
}

Status prune_params_extent(const wt_prune_params* p, size_t* out_bytes) {
  const Layout* layout = nullptr;
  WT_TRY(find_layout(kPruneAbi, p->struct_size, &layout));
  *out_bytes = layout->end;
  return Status::ok();
}

}  // namespace wt::api
