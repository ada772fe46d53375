#include "api_params.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <limits>
#include <string>

#include "fuzz_support.h"
#include "runtime/prune/registry.h"

namespace wt::fuzz {

namespace {

// The names wt_prune_set_param takes and their types, as the library lists them
// (wt_prune_param_get); where each lives (a field's offset, or wt_prune_params.extra) from
// the registry behind that list, for the raw stores a C caller may make.
struct PruneField {
  std::string name;
  wt_prune_param_type type;
  const wt::PruneParamSpec* spec;
};

const std::vector<PruneField>& prune_fields() {
  static const std::vector<PruneField> fields = [] {
    std::vector<PruneField> f;
    for (int32_t i = 0; i < wt_prune_param_count(); ++i) {
      wt_prune_param_info info;
      info.struct_size = sizeof info;
      if (wt_prune_param_get(i, &info) != WT_OK) fail("wt_prune_param_get(%d): %s", i, wt_last_error());
      f.push_back({info.name, info.type, wt::find_prune_param(info.name)});
      if (!f.back().spec) fail("wt_prune_param_get lists %s, which the registry does not know", info.name);
    }
    return f;
  }();
  return fields;
}

// Values that parse for each kind; their edges (NaN, infinities, int32 limits, 2^30 + 1 whose
// double overflows) are the point.
const char* const kFloatText[] = {"0.5", "1", "0.1", "0", "-1", "2", "nan", "inf", "-inf", "1e-45", "1e38", "-0"};
const char* const kIntText[] = {"0", "1", "2", "4", "7", "8", "16", "33", "-1", "-2", "2147483647", "-2147483648",
                                "1073741824", "1073741825", "65536"};
const char* const kBoolText[] = {"1", "0", "true", "false", "on", "off", "yes", "no"};
const char* const kPoolText[] = {"avg", "max", "default"};
// Text that parses as no kind.
const char* const kBadText[] = {"", "x", "1x", "--1", "maxx", "nan(", "1.5.", "true1"};

template <size_t N>
const char* pick(FuzzedDataProvider& fdp, const char* const (&list)[N]) {
  return list[fdp.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

// A method name the library lists, now and then one it does not.
std::string method_text(FuzzedDataProvider& fdp) {
  const int32_t n = wt_prune_method_count();
  wt_prune_method m = WT_PRUNE_FULL;
  if (wt_prune_method_at(fdp.ConsumeIntegralInRange<int32_t>(0, n - 1), &m) != WT_OK) fail("wt_prune_method_at");
  return wt_prune_method_name(m);
}

std::string good_value(FuzzedDataProvider& fdp, wt_prune_param_type type) {
  switch (type) {
    case WT_PRUNE_PARAM_FLOAT: return pick(fdp, kFloatText);
    case WT_PRUNE_PARAM_INT: return pick(fdp, kIntText);
    case WT_PRUNE_PARAM_BOOL: return pick(fdp, kBoolText);
    case WT_PRUNE_PARAM_POOL: return pick(fdp, kPoolText);
    case WT_PRUNE_PARAM_METHOD: return method_text(fdp);
  }
  return "";
}

}  // namespace

std::vector<SizeRange> model_params_sizes() {
  // API 1 ends after progress_user, API 13 after rope_orig_ctx (its padding accepted).
  return {{offsetof(wt_model_params, progress_user) + sizeof(void*), offsetof(wt_model_params, rope_scaling)},
          {offsetof(wt_model_params, rope_orig_ctx) + sizeof(int32_t), sizeof(wt_model_params)}};
}
std::vector<SizeRange> tokenize_params_sizes() {
  return {{offsetof(wt_tokenize_params, parse_special) + sizeof(bool), sizeof(wt_tokenize_params)}};
}
std::vector<SizeRange> prune_params_sizes() {
  // API 1-3 end after record_ranking, API 4 (this header) after extra.
  return {{offsetof(wt_prune_params, record_ranking) + sizeof(int32_t), offsetof(wt_prune_params, extra)},
          {sizeof(wt_prune_params), sizeof(wt_prune_params)}};
}
size_t prune_shift(size_t prune_struct_size) {
  const std::vector<SizeRange> r = prune_params_sizes();
  if (prune_struct_size < r[0].lo || prune_struct_size > r[0].hi) return 0;
  return sizeof(wt_prune_params) - offsetof(wt_prune_params, extra);  // sizeof the API 1-3 struct
}
std::vector<SizeRange> context_params_sizes(size_t shift) {
  // API 1 ends after prune, API 2 after memory_budget_bytes, API 3 (and 4, 5) after
  // kv_sync_swaps, API 6 (and 7) after kv_type, API 8 (and 9) after kv_pager_flags, API 10 (to
  // 13) after n_batch_rows, API 14 at the end; a caller's older prune layout makes each
  // `shift` bytes shorter.
  std::vector<SizeRange> r = {
      {offsetof(wt_context_params, prune) + sizeof(wt_prune_params), offsetof(wt_context_params, memory_budget_bytes)},
      {offsetof(wt_context_params, memory_budget_bytes) + sizeof(uint64_t), offsetof(wt_context_params, max_new_tokens)},
      {offsetof(wt_context_params, kv_sync_swaps) + sizeof(bool), offsetof(wt_context_params, kv_type)},
      {offsetof(wt_context_params, kv_type) + sizeof(wt_kv_type), offsetof(wt_context_params, kv_pager_flags)},
      {offsetof(wt_context_params, kv_pager_flags) + sizeof(uint64_t), offsetof(wt_context_params, n_batch_rows)},
      {offsetof(wt_context_params, n_batch_rows) + sizeof(int32_t), offsetof(wt_context_params, cpu_flags)},
      {sizeof(wt_context_params), sizeof(wt_context_params)}};
  for (SizeRange& x : r) x.lo -= shift, x.hi -= shift;
  return r;
}
std::vector<SizeRange> sampler_params_sizes() {
  // API 1 ends after seed, API 12 after penalty_last_n (its padding accepted: an API 12
  // header's sizeof).
  return {{offsetof(wt_sampler_params, seed) + sizeof(uint64_t), offsetof(wt_sampler_params, min_p)},
          {offsetof(wt_sampler_params, penalty_last_n) + sizeof(int32_t), sizeof(wt_sampler_params)}};
}

std::vector<SizeRange> context_stats_sizes() {
  // API 5 ends after pager_wait_ms, API 9 (and 10) after pager_transfers, API 11 (to 13)
  // after batch_rows (its padding accepted too: an API 11 header's sizeof), API 14 at the end.
  return {{offsetof(wt_context_stats, pager_wait_ms) + sizeof(double), offsetof(wt_context_stats, pager_transfers)},
          {offsetof(wt_context_stats, pager_transfers) + sizeof(int64_t), offsetof(wt_context_stats, batch_rows)},
          {offsetof(wt_context_stats, batch_rows) + sizeof(int32_t), offsetof(wt_context_stats, threads_per_op)},
          {sizeof(wt_context_stats), sizeof(wt_context_stats)}};
}

bool size_accepted(const std::vector<SizeRange>& ranges, size_t size) {
  for (const SizeRange& r : ranges)
    if (size >= r.lo && size <= r.hi) return true;
  return false;
}

size_t pick_struct_size(FuzzedDataProvider& fdp, const std::vector<SizeRange>& ranges, size_t full) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
    case 4: {
      const SizeRange& r = ranges[fdp.ConsumeIntegralInRange<size_t>(0, ranges.size() - 1)];
      return fdp.ConsumeBool() ? r.lo : r.hi;
    }
    case 5: return 0;
    case 6: return full + static_cast<size_t>(fdp.ConsumeIntegralInRange<int>(-16, 16));
    case 7: return fdp.ConsumeIntegral<size_t>();
    default: return full;
  }
}

float pick_float(FuzzedDataProvider& fdp) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::numeric_limits<float>::infinity();
    case 2: return -std::numeric_limits<float>::infinity();
    case 3: return std::numeric_limits<float>::denorm_min();
    case 4: return FLT_MAX;
    case 5: {
      const uint32_t bits = fdp.ConsumeIntegral<uint32_t>();
      float f = 0;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: return fdp.ConsumeFloatingPointInRange<float>(-2.0f, 2.0f);
  }
}

int32_t pick_int(FuzzedDataProvider& fdp, int32_t small_max) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return INT32_MIN;
    case 1: return INT32_MAX;
    case 2: return fdp.ConsumeIntegral<int32_t>();
    case 3: return -fdp.ConsumeIntegralInRange<int32_t>(1, 8);
    default: return fdp.ConsumeIntegralInRange<int32_t>(0, small_max);
  }
}

wt_prune_params fuzz_prune_params(FuzzedDataProvider& fdp) {
  wt_prune_params value = wt_prune_default_params();
  value.struct_size = pick_struct_size(fdp, prune_params_sizes(), sizeof(wt_prune_params));
  const bool accepted = size_accepted(prune_params_sizes(), value.struct_size);
  CallerStruct<wt_prune_params> caller(value);
  const std::vector<PruneField>& fields = prune_fields();
  const int n_ops = fdp.ConsumeIntegralInRange<int>(0, 6);
  for (int op = 0; op < n_ops; ++op) {
    const PruneField& f = fields[fdp.ConsumeIntegralInRange<size_t>(0, fields.size() - 1)];
    const bool extra = f.spec->offset == wt::kPruneExtra;
    const size_t at = extra ? offsetof(wt_prune_params, extra) : f.spec->offset;
    switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: {  // a known name with a value of its kind
        const wt_status st = wt_prune_set_param(caller.get(), f.name.c_str(), good_value(fdp, f.type).c_str());
        // A parameter kept in extra needs the API 4 layout; the extra entries may be full.
        const bool fits = at + (extra ? sizeof(wt_prune_params::extra) : sizeof(int32_t)) <= caller.bytes();
        if (!accepted || !fits) {
          expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_prune_set_param(known name, a layout without it)");
        } else {
          expect_status(st, extra ? std::initializer_list<wt_status>{WT_OK, WT_ERR_INVALID_ARGUMENT}
                                  : std::initializer_list<wt_status>{WT_OK},
                        "wt_prune_set_param(known name, parsable value)");
        }
        break;
      }
      case 1: {  // a known name with text that does not parse
        expect_status(wt_prune_set_param(caller.get(), f.name.c_str(), pick(fdp, kBadText)), {WT_ERR_INVALID_ARGUMENT},
                      "wt_prune_set_param(known name, unparsable value)");
        break;
      }
      case 2: {  // arbitrary text for both
        const std::string key = fdp.ConsumeRandomLengthString(32), text = fdp.ConsumeRandomLengthString(32);
        expect_status(wt_prune_set_param(caller.get(), key.c_str(), text.c_str()), {WT_OK, WT_ERR_INVALID_ARGUMENT},
                      "wt_prune_set_param(any text)");
        break;
      }
      case 3: {  // a raw store, as a C caller may write the field (enums: any int)
        unsigned char* base = reinterpret_cast<unsigned char*>(caller.get());
        if (extra) {
          // Any entry of extra: the parameter's key (or any key) and any value.
          if (offsetof(wt_prune_params, extra) + sizeof(wt_prune_params::extra) > caller.bytes()) break;
          wt_prune_extra_param e{fdp.ConsumeBool() ? wt::prune_extra_key(f.name.c_str()) : fdp.ConsumeIntegral<uint32_t>(),
                                 0, static_cast<double>(fdp.ConsumeBool() ? pick_float(fdp) : pick_int(fdp, 40))};
          const size_t slot = fdp.ConsumeIntegralInRange<size_t>(0, WT_PRUNE_MAX_EXTRA - 1);
          std::memcpy(base + offsetof(wt_prune_params, extra) + slot * sizeof e, &e, sizeof e);
          break;
        }
        if (at + sizeof(int32_t) > caller.bytes()) break;
        unsigned char* field = base + at;
        if (f.type == WT_PRUNE_PARAM_BOOL) {
          const bool b = fdp.ConsumeBool();
          std::memcpy(field, &b, sizeof b);
        } else if (f.type == WT_PRUNE_PARAM_FLOAT) {
          const float v = pick_float(fdp);
          std::memcpy(field, &v, sizeof v);
        } else {
          const int32_t v = pick_int(fdp, 40);
          std::memcpy(field, &v, sizeof v);
        }
        break;
      }
    }
  }
  // What the caller now holds, in a full struct (the bytes its layout does not have are the
  // defaults'): context params embed it whole.
  wt_prune_params out = wt_prune_default_params();
  std::memcpy(&out, caller.get(), caller.bytes());
  return out;
}

}  // namespace wt::fuzz
