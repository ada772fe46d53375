#include "api_params.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <limits>
#include <string>

#include "fuzz_support.h"

namespace wt::fuzz {

namespace {

enum class Kind { f32, i32, boolean, pool, method };
struct PruneField {
  const char* name;
  Kind kind;
  size_t offset;
};
// The names wt_prune_set_param takes (whittle.h: the field names of wt_prune_params).
const PruneField kPruneFields[] = {
    {"method", Kind::method, offsetof(wt_prune_params, method)},
    {"keep", Kind::f32, offsetof(wt_prune_params, keep)},
    {"budget", Kind::i32, offsetof(wt_prune_params, budget)},
    {"window", Kind::i32, offsetof(wt_prune_params, window)},
    {"pool_kernel", Kind::i32, offsetof(wt_prune_params, pool_kernel)},
    {"pool", Kind::pool, offsetof(wt_prune_params, pool)},
    {"layer", Kind::i32, offsetof(wt_prune_params, layer)},
    {"fastkv_tsp_rate", Kind::f32, offsetof(wt_prune_params, fastkv_tsp_rate)},
    {"fastkv_tsp_len", Kind::i32, offsetof(wt_prune_params, fastkv_tsp_len)},
    {"gemfilter_original_positions", Kind::boolean, offsetof(wt_prune_params, gemfilter_original_positions)},
    {"gemfilter_keep_window", Kind::boolean, offsetof(wt_prune_params, gemfilter_keep_window)},
    {"asl_tau", Kind::f32, offsetof(wt_prune_params, asl_tau)},
    {"asl_min_layer", Kind::i32, offsetof(wt_prune_params, asl_min_layer)},
    {"asl_obs_layers", Kind::i32, offsetof(wt_prune_params, asl_obs_layers)},
    {"asl_max_layer", Kind::i32, offsetof(wt_prune_params, asl_max_layer)},
    {"asl_two_pass", Kind::boolean, offsetof(wt_prune_params, asl_two_pass)},
    {"asl_kv_topk", Kind::boolean, offsetof(wt_prune_params, asl_kv_topk)},
    {"claa_n_layers", Kind::i32, offsetof(wt_prune_params, claa_n_layers)},
    {"claa_min_layer", Kind::i32, offsetof(wt_prune_params, claa_min_layer)},
    {"slim_block", Kind::i32, offsetof(wt_prune_params, slim_block)},
    {"slim_unit", Kind::i32, offsetof(wt_prune_params, slim_unit)},
    {"slim_query", Kind::i32, offsetof(wt_prune_params, slim_query)},
    {"slim_layer0", Kind::i32, offsetof(wt_prune_params, slim_layers)},
    {"slim_layer1", Kind::i32, offsetof(wt_prune_params, slim_layers) + sizeof(int32_t)},
    {"slim_layer2", Kind::i32, offsetof(wt_prune_params, slim_layers) + 2 * sizeof(int32_t)},
    {"slim_gamma", Kind::f32, offsetof(wt_prune_params, slim_gamma)},
    {"slim_decode_keep", Kind::f32, offsetof(wt_prune_params, slim_decode_keep)},
    {"tf_target", Kind::f32, offsetof(wt_prune_params, tf_target)},
    {"tf_start", Kind::f32, offsetof(wt_prune_params, tf_start)},
    {"tf_anchor_decay", Kind::f32, offsetof(wt_prune_params, tf_anchor_decay)},
    {"tf_key_weight", Kind::f32, offsetof(wt_prune_params, tf_key_weight)},
    {"tf_warmup", Kind::i32, offsetof(wt_prune_params, tf_warmup)},
    {"n_sink", Kind::i32, offsetof(wt_prune_params, n_sink)},
    {"oracle_tokens", Kind::i32, offsetof(wt_prune_params, oracle_tokens)},
    {"record_ranking", Kind::i32, offsetof(wt_prune_params, record_ranking)},
};
constexpr size_t kNumPruneFields = sizeof(kPruneFields) / sizeof(kPruneFields[0]);

// Values that parse for each kind; their edges (NaN, infinities, int32 limits, 2^30 + 1 whose
// double overflows) are the point.
const char* const kFloatText[] = {"0.5", "1", "0.1", "0", "-1", "2", "nan", "inf", "-inf", "1e-45", "1e38", "-0"};
const char* const kIntText[] = {"0", "1", "2", "4", "7", "8", "16", "33", "-1", "-2", "2147483647", "-2147483648",
                                "1073741824", "1073741825", "65536"};
const char* const kBoolText[] = {"1", "0", "true", "false", "on", "off", "yes", "no"};
const char* const kPoolText[] = {"avg", "max", "default"};
const char* const kMethodText[] = {"full", "streaming", "snapkv", "fastkv", "gemfilter",
                                   "asl", "claa", "sliminfer", "tokenfilter", "oracle"};
// Text that parses as no kind.
const char* const kBadText[] = {"", "x", "1x", "--1", "maxx", "nan(", "1.5.", "true1"};

template <size_t N>
const char* pick(FuzzedDataProvider& fdp, const char* const (&list)[N]) {
  return list[fdp.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

const char* good_value(FuzzedDataProvider& fdp, Kind kind) {
  switch (kind) {
    case Kind::f32: return pick(fdp, kFloatText);
    case Kind::i32: return pick(fdp, kIntText);
    case Kind::boolean: return pick(fdp, kBoolText);
    case Kind::pool: return pick(fdp, kPoolText);
    case Kind::method: return pick(fdp, kMethodText);
  }
  return "";
}

}  // namespace

std::vector<SizeRange> model_params_sizes() {
  return {{offsetof(wt_model_params, progress_user) + sizeof(void*), sizeof(wt_model_params)}};
}
std::vector<SizeRange> tokenize_params_sizes() {
  return {{offsetof(wt_tokenize_params, parse_special) + sizeof(bool), sizeof(wt_tokenize_params)}};
}
std::vector<SizeRange> prune_params_sizes() {
  return {{offsetof(wt_prune_params, record_ranking) + sizeof(int32_t), sizeof(wt_prune_params)}};
}
std::vector<SizeRange> context_params_sizes() {
  // API 1 ends after prune, API 2 after memory_budget_bytes, API 3 (this header) at the end.
  return {{offsetof(wt_context_params, prune) + sizeof(wt_prune_params), offsetof(wt_context_params, memory_budget_bytes)},
          {offsetof(wt_context_params, memory_budget_bytes) + sizeof(uint64_t), offsetof(wt_context_params, max_new_tokens)},
          {offsetof(wt_context_params, kv_sync_swaps) + sizeof(bool), sizeof(wt_context_params)}};
}
std::vector<SizeRange> sampler_params_sizes() {
  return {{offsetof(wt_sampler_params, seed) + sizeof(uint64_t), sizeof(wt_sampler_params)}};
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
  const int n_ops = fdp.ConsumeIntegralInRange<int>(0, 6);
  for (int op = 0; op < n_ops; ++op) {
    const PruneField& f = kPruneFields[fdp.ConsumeIntegralInRange<size_t>(0, kNumPruneFields - 1)];
    switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: {  // a known name with a value of its kind
        const wt_status st = wt_prune_set_param(caller.get(), f.name, good_value(fdp, f.kind));
        expect_status(st, {accepted ? WT_OK : WT_ERR_INVALID_ARGUMENT}, "wt_prune_set_param(known name, parsable value)");
        break;
      }
      case 1: {  // a known name with text that does not parse
        expect_status(wt_prune_set_param(caller.get(), f.name, pick(fdp, kBadText)), {WT_ERR_INVALID_ARGUMENT},
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
        if (f.offset + sizeof(int32_t) > caller.bytes()) break;
        unsigned char* field = reinterpret_cast<unsigned char*>(caller.get()) + f.offset;
        if (f.kind == Kind::boolean) {
          const bool b = fdp.ConsumeBool();
          std::memcpy(field, &b, sizeof b);
        } else if (f.kind == Kind::f32) {
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
