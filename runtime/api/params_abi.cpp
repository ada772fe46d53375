// Params structs and output structs by layout. Each struct has a table of its layouts,
// oldest first; a layout is the group of fields one WT_API_VERSION appended. A caller's
// struct_size names its layout, and only that layout's fields (and the older ones') are
// read from a params struct or written to an output struct.
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

// One struct's layouts. A struct_size s is layout k when end_k <= s <= begin_{k+1} (for the
// newest layout, s <= sizeof): sizeof in an older header is its last field's end rounded up
// to that struct's alignment, which the soundness check keeps below the next layout.
struct Abi {
  const char* name;
  const char* default_fn;
  std::span<const Layout> layouts;
  size_t size;   // sizeof the struct in this library
  size_t align;  // and its alignof
  // A params struct held by value (wt_context_params.prune): its older layouts shorten this
  // struct, every field after it sitting earlier by the difference.
  const Abi* nested = nullptr;
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
    {13, offsetof(wt_model_params, rope_scaling), offsetof(wt_model_params, rope_orig_ctx) + sizeof(int32_t)},
};
constexpr Layout kTokenizeLayouts[] = {
    {1, 0, offsetof(wt_tokenize_params, parse_special) + sizeof(bool)},
};
constexpr Layout kPruneLayouts[] = {
    {1, 0, offsetof(wt_prune_params, record_ranking) + sizeof(int32_t)},
    {4, offsetof(wt_prune_params, extra), offsetof(wt_prune_params, extra) + sizeof(wt_prune_params::extra)},
};
constexpr Layout kContextLayouts[] = {
    {1, 0, offsetof(wt_context_params, prune) + sizeof(wt_prune_params)},
    {2, offsetof(wt_context_params, memory_budget_bytes), offsetof(wt_context_params, memory_budget_bytes) + sizeof(uint64_t)},
    {3, offsetof(wt_context_params, max_new_tokens), offsetof(wt_context_params, kv_sync_swaps) + sizeof(bool)},
    {6, offsetof(wt_context_params, kv_type), offsetof(wt_context_params, kv_type) + sizeof(wt_kv_type)},
    {8, offsetof(wt_context_params, kv_pager_flags), offsetof(wt_context_params, kv_pager_flags) + sizeof(uint64_t)},
    {10, offsetof(wt_context_params, n_batch_rows), offsetof(wt_context_params, n_batch_rows) + sizeof(int32_t)},
    {14, offsetof(wt_context_params, cpu_flags), offsetof(wt_context_params, cpu_flags) + sizeof(uint64_t)},
};
constexpr Layout kSamplerLayouts[] = {
    {1, 0, offsetof(wt_sampler_params, seed) + sizeof(uint64_t)},
    {12, offsetof(wt_sampler_params, min_p), offsetof(wt_sampler_params, penalty_last_n) + sizeof(int32_t)},
};
// The structs the library fills: struct_size since API 5, which is their first layout.
constexpr Layout kModelInfoLayouts[] = {
    {5, 0, offsetof(wt_model_info, device) + sizeof(const char*)},
};
constexpr Layout kPlanInfoLayouts[] = {
    {5, 0, offsetof(wt_context_plan_info, driver_bytes) + sizeof(uint64_t)},
    {11, offsetof(wt_context_plan_info, batch_rows), offsetof(wt_context_plan_info, batch_rows) + sizeof(int32_t)},
};
constexpr Layout kContextStatsLayouts[] = {
    {5, 0, offsetof(wt_context_stats, pager_wait_ms) + sizeof(double)},
    {9, offsetof(wt_context_stats, pager_transfers), offsetof(wt_context_stats, pager_transfers) + sizeof(int64_t)},
    {11, offsetof(wt_context_stats, batch_rows), offsetof(wt_context_stats, batch_rows) + sizeof(int32_t)},
    {14, offsetof(wt_context_stats, threads_per_op), offsetof(wt_context_stats, threads_per_op) + sizeof(double)},
};
constexpr Layout kPruneStatsLayouts[] = {
    {5, 0, offsetof(wt_prune_stats, prefill_ms) + sizeof(double)},
    {7, offsetof(wt_prune_stats, asl_ratios), offsetof(wt_prune_stats, asl_ratios) + sizeof(const double*)},
};

static_assert(offsetof(wt_model_params, struct_size) == 0 && offsetof(wt_tokenize_params, struct_size) == 0 &&
              offsetof(wt_prune_params, struct_size) == 0 && offsetof(wt_context_params, struct_size) == 0 &&
              offsetof(wt_sampler_params, struct_size) == 0);
static_assert(sound(kModelLayouts, sizeof(wt_model_params), alignof(wt_model_params)), "kModelLayouts");
static_assert(sound(kTokenizeLayouts, sizeof(wt_tokenize_params), alignof(wt_tokenize_params)), "kTokenizeLayouts");
static_assert(sound(kPruneLayouts, sizeof(wt_prune_params), alignof(wt_prune_params)), "kPruneLayouts");
static_assert(sound(kContextLayouts, sizeof(wt_context_params), alignof(wt_context_params)), "kContextLayouts");
static_assert(sound(kSamplerLayouts, sizeof(wt_sampler_params), alignof(wt_sampler_params)), "kSamplerLayouts");
static_assert(offsetof(wt_model_info, struct_size) == 0 && offsetof(wt_context_plan_info, struct_size) == 0 &&
              offsetof(wt_context_stats, struct_size) == 0 && offsetof(wt_prune_stats, struct_size) == 0);
static_assert(sound(kModelInfoLayouts, sizeof(wt_model_info), alignof(wt_model_info)), "kModelInfoLayouts");
static_assert(sound(kPlanInfoLayouts, sizeof(wt_context_plan_info), alignof(wt_context_plan_info)), "kPlanInfoLayouts");
static_assert(sound(kContextStatsLayouts, sizeof(wt_context_stats), alignof(wt_context_stats)), "kContextStatsLayouts");
static_assert(sound(kPruneStatsLayouts, sizeof(wt_prune_stats), alignof(wt_prune_stats)), "kPruneStatsLayouts");
static_assert(std::max({std::end(kModelLayouts)[-1].api, std::end(kTokenizeLayouts)[-1].api,
                        std::end(kPruneLayouts)[-1].api, std::end(kContextLayouts)[-1].api,
                        std::end(kSamplerLayouts)[-1].api, std::end(kModelInfoLayouts)[-1].api,
                        std::end(kPlanInfoLayouts)[-1].api, std::end(kContextStatsLayouts)[-1].api,
                        std::end(kPruneStatsLayouts)[-1].api}) == WT_API_VERSION,
              "WT_API_VERSION is the version of the newest layout");
// wt_context_params holds a wt_prune_params by value, so a prune layout of another size moves
// every context field after `prune`: read_params(context) takes them at offsetof(prune) +
// the caller's prune size. That is a plain shift only while the prune struct's alignment is
// the largest of those fields'.
static_assert(alignof(wt_prune_params) >= alignof(uint64_t) && alignof(wt_prune_params) >= alignof(void*),
              "the context fields after prune would not shift by the prune size difference");

constexpr Abi kModelAbi{"wt_model_params", "wt_model_default_params", kModelLayouts, sizeof(wt_model_params), alignof(wt_model_params)};
constexpr Abi kTokenizeAbi{"wt_tokenize_params", "wt_tokenize_default_params", kTokenizeLayouts,
                           sizeof(wt_tokenize_params), alignof(wt_tokenize_params)};
constexpr Abi kPruneAbi{"wt_prune_params", "wt_prune_default_params", kPruneLayouts, sizeof(wt_prune_params), alignof(wt_prune_params)};
constexpr Abi kContextPruneAbi{"wt_context_params.prune", "wt_prune_default_params", kPruneLayouts,
                               sizeof(wt_prune_params), alignof(wt_prune_params)};
constexpr Abi kContextAbi{"wt_context_params", "wt_context_default_params", kContextLayouts,
                          sizeof(wt_context_params), alignof(wt_context_params), &kContextPruneAbi};
constexpr Abi kModelInfoAbi{"wt_model_info", nullptr, kModelInfoLayouts, sizeof(wt_model_info), alignof(wt_model_info)};
constexpr Abi kPlanInfoAbi{"wt_context_plan_info", nullptr, kPlanInfoLayouts, sizeof(wt_context_plan_info),
                           alignof(wt_context_plan_info)};
constexpr Abi kContextStatsAbi{"wt_context_stats", nullptr, kContextStatsLayouts, sizeof(wt_context_stats),
                               alignof(wt_context_stats)};
constexpr Abi kPruneStatsAbi{"wt_prune_stats", nullptr, kPruneStatsLayouts, sizeof(wt_prune_stats), alignof(wt_prune_stats)};
constexpr Abi kSamplerAbi{"wt_sampler_params", "wt_sampler_default_params", kSamplerLayouts, sizeof(wt_sampler_params), alignof(wt_sampler_params)};

size_t upper(const Abi& abi, size_t k) { return k + 1 < abi.layouts.size() ? abi.layouts[k + 1].begin : abi.size; }

std::string sizes(size_t lo, size_t hi) { return std::to_string(lo) + (hi > lo ? ".." + std::to_string(hi) : ""); }

// The bytes a nested struct of layout k (as sizeof gives it) is shorter than this library's.
size_t nested_shift(const Abi& nested, size_t k) {
  return nested.size - round_up(nested.layouts[k].end, nested.align);
}

std::string accepted(const Abi& abi, size_t shift = 0) {
  std::string s;
  for (size_t k = 0; k < abi.layouts.size(); ++k) {
    const size_t lo = abi.layouts[k].end - shift, hi = upper(abi, k) - shift;
    if (!s.empty()) s += ", ";
    s += sizes(lo, hi) + " (API " + std::to_string(abi.layouts[k].api) + ")";
  }
  return s;
}

// With a nested struct: the sizes for each of its layouts, newest first.
std::string accepted_all(const Abi& abi) {
  if (!abi.nested) return accepted(abi);
  std::string s;
  const Abi& n = *abi.nested;
  for (size_t k = n.layouts.size(); k-- > 0;) {
    if (!s.empty()) s += "; ";
    s += accepted(abi, nested_shift(n, k)) + " with " + n.name + ".struct_size " +
         sizes(n.layouts[k].end, upper(n, k)) + " (API " + std::to_string(n.layouts[k].api) + ")";
  }
  return s;
}

// shift: the caller's nested struct is that much shorter than this library's (its size is
// looked up as struct_size + shift; the message names struct_size).
Status find_layout(const Abi& abi, size_t struct_size, const Layout** out, size_t shift = 0) {
  for (size_t k = 0; k < abi.layouts.size(); ++k) {
    const size_t size = struct_size + shift;
    if (size >= abi.layouts[k].end && size <= upper(abi, k)) {
      *out = &abi.layouts[k];
      return Status::ok();
    }
  }
  std::string why;
  if (struct_size == 0 && abi.default_fn) {
    why = "fill the struct with " + std::string(abi.default_fn) + "()";
  } else if (struct_size == 0) {
    why = "set it to sizeof(" + std::string(abi.name) + ") before the call";
  } else if (struct_size + shift < abi.layouts[0].end) {
    why = "smaller than the oldest layout this library reads";
  } else if (struct_size + shift > abi.size) {
    why = "larger than this library's: the application was built against a newer whittle.h than this library "
          "(API version " + std::to_string(WT_API_VERSION) + ")";
  } else {
    why = "no layout of the struct has this size";
  }
  return error(WT_ERR_INVALID_ARGUMENT, std::string(abi.name) + ".struct_size is " + std::to_string(struct_size) +
                                            ": " + why + "; this library reads struct_size " + accepted_all(abi));
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

// An output struct: the caller's struct_size (at least the oldest layout, not between two)
// bounds what is written; a size above the library's takes the library's fields. Writes
// `filled` with struct_size set to the bytes written.
Status write_struct(const Abi& abi, const void* filled, void* out) {
  size_t struct_size = 0;
  std::memcpy(&struct_size, out, sizeof struct_size);
  const size_t n = std::min(struct_size, abi.size);
  if (struct_size < abi.size) {
    const Layout* layout = nullptr;
    WT_TRY(find_layout(abi, struct_size, &layout));
  }
  // Bytes between the caller's last field and n are its padding (or the library's, when n
  // is the library's size).
  std::memcpy(out, filled, n);
  std::memcpy(out, &n, sizeof n);
  return Status::ok();
}

}  // namespace

Status write_output(const wt_model_info& filled, wt_model_info* out) { return write_struct(kModelInfoAbi, &filled, out); }
Status write_output(const wt_context_plan_info& filled, wt_context_plan_info* out) {
  return write_struct(kPlanInfoAbi, &filled, out);
}
Status write_output(const wt_context_stats& filled, wt_context_stats* out) {
  return write_struct(kContextStatsAbi, &filled, out);
}
Status write_output(const wt_prune_stats& filled, wt_prune_stats* out) {
  return write_struct(kPruneStatsAbi, &filled, out);
}

Status write_output_bytes(const char* name, std::span<const Layout> layouts, size_t size, size_t align, const void* filled,
                          void* out) {
  if (!sound(layouts, size, align)) return error(WT_ERR_INTERNAL, std::string(name) + ": the layout table is not sound");
  return write_struct(Abi{name, nullptr, layouts, size, align}, filled, out);
}

Status read_params(const wt_model_params* in, wt_model_params* out) {
  return read_struct(kModelAbi, in, wt_model_default_params(), out);
}

Status read_params(const wt_tokenize_params* in, wt_tokenize_params* out) {
  return read_struct(kTokenizeAbi, in, wt_tokenize_default_params(), out);
}

Status read_params(const wt_prune_params* in, wt_prune_params* out) {
  return read_struct(kPruneAbi, in, wt_prune_default_params(), out);
}

// A caller's wt_context_params holds its own wt_prune_params, which may be an older (smaller)
// layout: the context fields after it then sit earlier by the difference. Its struct_size
// is this library's layout size less that difference.
Status read_params(const wt_context_params* in, wt_context_params* out) {
  *out = wt_context_default_params();
  if (!in) return Status::ok();
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  size_t struct_size = 0, prune_size = 0;
  std::memcpy(&struct_size, bytes, sizeof struct_size);
  constexpr size_t kPruneAt = offsetof(wt_context_params, prune);
  const Layout* layout = nullptr;
  if (struct_size < kPruneAt + sizeof(size_t)) return find_layout(kContextAbi, struct_size, &layout);  // no prune
  std::memcpy(&prune_size, bytes + kPruneAt, sizeof prune_size);
  const Layout* prune_layout = nullptr;
  WT_TRY(find_layout(kContextPruneAbi, prune_size, &prune_layout));
  const size_t their_prune = round_up(prune_size, alignof(wt_prune_params));
  const size_t shift = sizeof(wt_prune_params) - their_prune;
  WT_TRY(find_layout(kContextAbi, struct_size, &layout, shift));
  std::memcpy(static_cast<void*>(out), bytes, kPruneAt);
  std::memcpy(static_cast<void*>(&out->prune), bytes + kPruneAt, prune_layout->end);
  out->prune.struct_size = sizeof(wt_prune_params);
  constexpr size_t kTailAt = kPruneAt + sizeof(wt_prune_params);  // the fields after prune
  if (layout->end > kTailAt)
    std::memcpy(reinterpret_cast<unsigned char*>(out) + kTailAt, bytes + kPruneAt + their_prune, layout->end - kTailAt);
  out->struct_size = sizeof(wt_context_params);
  return Status::ok();
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
