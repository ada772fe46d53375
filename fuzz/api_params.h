// Params structs for fuzz_api as a caller could hand them over: every field from the fuzz
// input (enum fields as raw integers, floats as raw bit patterns: NaN, infinities, denormals),
// struct_size usually right but also 0, an older layout's size, off by a little or anything,
// and the struct in a heap block of exactly the size it claims (down to its struct_size
// field), so ASan catches the library reading past what the caller's layout has.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "whittle.h"

namespace wt::fuzz {

// One accepted struct_size range [lo, hi]: a layout's end up to where the next begins.
struct SizeRange {
  size_t lo, hi;
};

// The struct_size ranges whittle.h ("Binary compatibility") says each struct accepts.
std::vector<SizeRange> model_params_sizes();
std::vector<SizeRange> tokenize_params_sizes();
std::vector<SizeRange> prune_params_sizes();
// A caller's wt_context_params holds its own layout of wt_prune_params: one of API 1-3 makes
// the context struct shorter, every field after prune sitting that many bytes earlier.
// prune_shift: that difference for a prune struct_size (0 for this header's or a size no
// layout has, which the library refuses anyway).
size_t prune_shift(size_t prune_struct_size);
std::vector<SizeRange> context_params_sizes(size_t shift = 0);
std::vector<SizeRange> sampler_params_sizes();
// An output struct (API 5) accepts these and any size above its own: the library then
// writes its own fields only.
std::vector<SizeRange> context_stats_sizes();
bool size_accepted(const std::vector<SizeRange>& ranges, size_t size);

// A struct_size for a struct of `full` bytes: mostly `full`, else an accepted older size, 0,
// off by a few bytes, or any value.
size_t pick_struct_size(FuzzedDataProvider& fdp, const std::vector<SizeRange>& ranges, size_t full);

// A caller's struct: `value` (already filled) stored in a block of the size its struct_size
// claims, clamped to [sizeof(size_t), sizeof(T)].
template <typename T>
class CallerStruct {
 public:
  explicit CallerStruct(const T& value) {
    size_t claimed = 0;
    std::memcpy(&claimed, &value, sizeof claimed);
    bytes_ = claimed < sizeof(size_t) ? sizeof(size_t) : (claimed > sizeof(T) ? sizeof(T) : claimed);
    block_.reset(new unsigned char[bytes_]);
    std::memcpy(block_.get(), &value, bytes_);
  }
  T* get() { return reinterpret_cast<T*>(block_.get()); }
  size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<unsigned char[]> block_;
  size_t bytes_ = 0;
};

// A caller's wt_context_params packed as its layout has it: the fields before prune, the
// prune struct of prune.struct_size (its API 1-3 layout is shorter), then the later fields,
// in a block of the size its struct_size claims (clamped as CallerStruct does).
class CallerContext {
 public:
  explicit CallerContext(const wt_context_params& value) {
    const size_t shift = prune_shift(value.prune.struct_size);
    constexpr size_t kPruneAt = offsetof(wt_context_params, prune), kTailAt = kPruneAt + sizeof(wt_prune_params);
    std::vector<unsigned char> packed(sizeof value - shift);
    const auto* v = reinterpret_cast<const unsigned char*>(&value);
    std::memcpy(packed.data(), v, kTailAt - shift);
    std::memcpy(packed.data() + kTailAt - shift, v + kTailAt, sizeof value - kTailAt);
    const size_t claimed = value.struct_size;
    bytes_ = claimed < sizeof(size_t) ? sizeof(size_t) : (claimed > packed.size() ? packed.size() : claimed);
    block_.reset(new unsigned char[bytes_]);
    std::memcpy(block_.get(), packed.data(), bytes_);
  }
  const wt_context_params* get() const { return reinterpret_cast<const wt_context_params*>(block_.get()); }

 private:
  std::unique_ptr<unsigned char[]> block_;
  size_t bytes_ = 0;
};

// A float that is often special: NaN, ±inf, ±0, a denormal, huge, or any bit pattern.
float pick_float(FuzzedDataProvider& fdp);
// An int32 that is often at an edge: small, negative, INT32_MIN/MAX, or anything.
int32_t pick_int(FuzzedDataProvider& fdp, int32_t small_max);
// Stores a raw integer into an enum field the way a C caller may (any int value).
template <typename E>
void set_raw_enum(E* field, int32_t v) {
  static_assert(sizeof(E) == sizeof(int32_t));
  std::memcpy(field, &v, sizeof v);
}

// Prune parameters: the defaults, then fuzzed wt_prune_set_param calls (known names with
// edge values, or arbitrary text) and raw field writes. Checks each call's status.
wt_prune_params fuzz_prune_params(FuzzedDataProvider& fdp);

}  // namespace wt::fuzz
