// wt_prune_params: defaults, names, text parsing (for tools), and the check that turns a
// user's parameters into a resolved, model-specific set before any policy is made.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "../api/handles.h"
#include "../api/params_abi.h"
#include "scored_policy.h"
#include "selection_math.h"

namespace {

const char* const kMethodNames[] = {"full", "streaming", "snapkv", "fastkv", "gemfilter",
                                    "asl",  "claa",      "sliminfer", "tokenfilter", "oracle"};
constexpr int kNumMethods = static_cast<int>(sizeof(kMethodNames) / sizeof(kMethodNames[0]));

// One table drives set_param: name, kind, field offset.
enum class Kind { f32, i32, boolean, pool, method };
struct Field {
  const char* name;
  Kind kind;
  size_t offset;
};
const Field kFields[] = {
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

size_t field_bytes(Kind k) { return k == Kind::boolean ? sizeof(bool) : sizeof(int32_t); }
static_assert(sizeof(float) == sizeof(int32_t) && sizeof(wt_pool_kind) == sizeof(int32_t) &&
              sizeof(wt_prune_method) == sizeof(int32_t));

bool parse_bool(const char* v, bool* out) {
  if (!std::strcmp(v, "1") || !std::strcmp(v, "true") || !std::strcmp(v, "on") || !std::strcmp(v, "yes")) {
    *out = true;
    return true;
  }
  if (!std::strcmp(v, "0") || !std::strcmp(v, "false") || !std::strcmp(v, "off") || !std::strcmp(v, "no")) {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace

namespace wt {

Status make_policy(const wt_prune_params& in, const PruneShape& s, wt_prune_params* out,
                   std::unique_ptr<PrunePolicy>* policy) {
  wt_prune_params p = in;
  const int32_t nl = s.n_layer;
  auto bad = [](const std::string& what) { return error(WT_ERR_INVALID_ARGUMENT, "prune." + what); };
  const int32_t method = wt::api::raw_enum(in.method), pool = wt::api::raw_enum(in.pool);
  if (method < WT_PRUNE_FULL || method > WT_PRUNE_ORACLE) return bad("method " + std::to_string(method) + " is unknown");
  if (pool < WT_POOL_DEFAULT || pool > WT_POOL_MAX) return bad("pool " + std::to_string(pool) + " is unknown");
  const wt_prune_method m = p.method;
  if (!(p.keep > 0.0f && p.keep <= 1.0f)) return bad("keep " + std::to_string(p.keep) + " is outside (0, 1]");
  if (p.budget < 0) return bad("budget must be >= 0 (0 = keep * L)");
  // Token counts first, before the defaults below compute with them (2 * budget).
  const std::pair<const char*, int32_t> counts[] = {
      {"budget", p.budget},       {"window", p.window},         {"pool_kernel", p.pool_kernel},
      {"fastkv_tsp_len", p.fastkv_tsp_len}, {"n_sink", p.n_sink}, {"slim_block", p.slim_block},
      {"slim_unit", p.slim_unit}, {"slim_query", p.slim_query}, {"oracle_tokens", p.oracle_tokens},
  };
  for (const auto& [name, v] : counts)
    if (v > kMaxContextTokens)
      return bad(std::string(name) + " " + std::to_string(v) + " is above " + std::to_string(kMaxContextTokens) +
                 ", the most tokens a context holds");
  // Model-depth defaults (METHODS.md: the 32-layer papers' layers scaled to the model).
  if (p.window == 0) {
    p.window = (m == WT_PRUNE_SNAPKV || m == WT_PRUNE_ASL) ? 32 : 8;
  }
  if (p.pool_kernel == 0) p.pool_kernel = m == WT_PRUNE_GEMFILTER ? 5 : (m == WT_PRUNE_ORACLE ? 13 : 7);
  if (p.pool == WT_POOL_DEFAULT) p.pool = (m == WT_PRUNE_SNAPKV || m == WT_PRUNE_FASTKV) ? WT_POOL_MAX : WT_POOL_AVG;
  if (p.layer < 0) p.layer = m == WT_PRUNE_GEMFILTER ? static_cast<int32_t>(std::lround(0.4 * nl)) : nl / 2;
  if (p.fastkv_tsp_rate == 0.0f) p.fastkv_tsp_rate = std::min(1.0f, 2.0f * p.keep);
  if (p.fastkv_tsp_len == 0) p.fastkv_tsp_len = 2 * p.budget;
  if (p.asl_min_layer < 0) p.asl_min_layer = nl / 3;
  if (p.asl_max_layer < 0) p.asl_max_layer = nl;  // never forced
  const int32_t slim_default[3] = {nl / 3, 2 * nl / 3, nl * 14 / 15};
  for (int i = 0; i < 3; ++i)
    if (p.slim_layers[i] < 0) p.slim_layers[i] = slim_default[i];

  // Ranges.
  if (p.window < 1) return bad("window must be >= 1");
  if (p.budget > 0 && p.budget < p.window)
    return bad("budget " + std::to_string(p.budget) + " is below the window " + std::to_string(p.window));
  if (p.pool_kernel < 1 || p.pool_kernel % 2 == 0) return bad("pool_kernel must be odd and >= 1");
  if (p.layer >= nl) return bad("layer " + std::to_string(p.layer) + " is beyond the model's " + std::to_string(nl) + " layers");
  if (!(p.fastkv_tsp_rate > 0.0f && p.fastkv_tsp_rate <= 1.0f)) return bad("fastkv_tsp_rate is outside (0, 1]");
  if (p.budget > 0 && p.fastkv_tsp_len < p.window) return bad("fastkv_tsp_len is below the window");
  if (!(p.asl_tau > 0.0f)) return bad("asl_tau must be > 0");
  const bool asl = m == WT_PRUNE_ASL, claa = m == WT_PRUNE_CLAA, slim = m == WT_PRUNE_SLIMINFER;
  if (asl && (p.asl_obs_layers < 1 || p.asl_obs_layers > nl)) return bad("asl_obs_layers must be in [1, n_layer]");
  if (asl && p.asl_min_layer >= nl) return bad("asl_min_layer is beyond the model's layers");
  if (asl && p.asl_max_layer > nl) return bad("asl_max_layer is beyond the model's layers");
  if (claa && (p.claa_n_layers < 1 || p.claa_n_layers > p.layer + 1)) return bad("claa_n_layers must be in [1, layer + 1]");
  if (claa && (p.claa_min_layer < 0 || p.claa_min_layer >= nl)) return bad("claa_min_layer must be in [0, n_layer)");
  if (slim && (p.slim_block < 1 || p.slim_unit < 1 || p.slim_block % p.slim_unit != 0))
    return bad("slim_block must be a positive multiple of slim_unit");
  if (slim && p.slim_query < 1) return bad("slim_query must be >= 1");
  for (int i = 0; slim && i < 3; ++i) {
    if (p.slim_layers[i] >= nl) return bad("slim_layers[" + std::to_string(i) + "] is beyond the model's layers");
    if (i > 0 && p.slim_layers[i] <= p.slim_layers[i - 1]) return bad("slim_layers must increase");
  }
  if (!(p.slim_gamma >= 0.0f && p.slim_gamma <= 1.0f)) return bad("slim_gamma is outside [0, 1]");
  if (!(p.slim_decode_keep > 0.0f && p.slim_decode_keep <= 1.0f)) return bad("slim_decode_keep is outside (0, 1]");
  if (!(p.tf_target > 0.0f && p.tf_target < 1.0f)) return bad("tf_target is outside (0, 1)");
  if (!(p.tf_start >= 0.0f && p.tf_start < 1.0f)) return bad("tf_start is outside [0, 1)");
  if (!(p.tf_anchor_decay >= 0.0f && p.tf_anchor_decay < 1.0f)) return bad("tf_anchor_decay is outside [0, 1)");
  if (!(p.tf_key_weight >= 0.0f && p.tf_key_weight <= 1.0f)) return bad("tf_key_weight is outside [0, 1]");
  if (p.tf_warmup < 0 || p.tf_warmup > SkipController::kMaxWarmup)
    return bad("tf_warmup must be in [0, " + std::to_string(SkipController::kMaxWarmup) + "]");
  if (p.n_sink < 0) return bad("n_sink must be >= 0");
  if (p.budget > 0 && m == WT_PRUNE_STREAMING && p.budget < p.n_sink + p.window)
    return bad("budget is below n_sink + window");
  if (p.oracle_tokens < 1) return bad("oracle_tokens must be >= 1");
  if (p.record_ranking != 0 && p.record_ranking != 1) return bad("record_ranking must be 0 or 1");

  *out = p;
  switch (m) {
    case WT_PRUNE_FULL: policy->reset(); break;
    case WT_PRUNE_STREAMING: *policy = make_streaming(p, s); break;
    case WT_PRUNE_SNAPKV: *policy = make_snapkv(p, s); break;
    case WT_PRUNE_FASTKV: *policy = make_fastkv(p, s); break;
    case WT_PRUNE_GEMFILTER: *policy = make_gemfilter(p, s); break;
    case WT_PRUNE_ASL: *policy = make_asl(p, s); break;
    case WT_PRUNE_CLAA: *policy = make_claa(p, s); break;
    case WT_PRUNE_SLIMINFER: *policy = make_sliminfer(p, s); break;
    case WT_PRUNE_TOKENFILTER: *policy = make_tokenfilter(p, s); break;
    case WT_PRUNE_ORACLE: *policy = make_oracle(p, s); break;
  }
  return Status::ok();
}

int32_t kv_capacity(const PrunePolicy* policy, int32_t layer, int32_t n_ctx, int32_t max_new) {
  if (!policy || max_new <= 0 || max_new >= n_ctx) return n_ctx;
  return std::min(n_ctx, policy->kv_peak(layer, n_ctx - max_new) + max_new);
}

}  // namespace wt

extern "C" {

wt_prune_params wt_prune_default_params(void) {
  wt_prune_params p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.method = WT_PRUNE_FULL;
  p.keep = 0.1f;
  p.pool = WT_POOL_DEFAULT;
  p.layer = -1;
  p.asl_tau = 0.3f;
  p.asl_min_layer = -1;
  p.asl_obs_layers = 8;
  p.asl_max_layer = -1;
  p.asl_kv_topk = true;
  p.claa_n_layers = 4;
  p.claa_min_layer = 4;
  p.slim_block = 64;
  p.slim_unit = 8;
  p.slim_query = 4;
  p.slim_layers[0] = p.slim_layers[1] = p.slim_layers[2] = -1;
  p.slim_gamma = 0.9f;
  p.slim_decode_keep = 1.0f;
  p.tf_target = 0.5f;
  p.tf_start = 0.5f;
  p.tf_anchor_decay = 0.9f;
  p.tf_key_weight = 0.5f;
  p.tf_warmup = 16;
  p.n_sink = 4;
  p.oracle_tokens = 32;
  p.record_ranking = 0;
  return p;
}

const char* wt_prune_method_name(wt_prune_method method) {
  const int32_t i = wt::api::raw_enum(method);
  return i >= 0 && i < kNumMethods ? kMethodNames[i] : "unknown";
}

wt_status wt_prune_method_from_name(const char* name, wt_prune_method* out_method) {
  return wt::api::guarded([&]() -> wt::Status {
    WT_TRY(wt::api::require(name, "name"));
    WT_TRY(wt::api::require(out_method, "out_method"));
    for (int i = 0; i < kNumMethods; ++i) {
      if (!std::strcmp(name, kMethodNames[i])) {
        *out_method = static_cast<wt_prune_method>(i);
        return wt::Status::ok();
      }
    }
    return wt::error(WT_ERR_INVALID_ARGUMENT, std::string("unknown pruning method \"") + name +
                                                  "\" (full, streaming, snapkv, fastkv, gemfilter, asl, claa, "
                                                  "sliminfer, tokenfilter, oracle)");
  });
}

wt_status wt_prune_set_param(wt_prune_params* params, const char* key, const char* value) {
  return wt::api::guarded([&]() -> wt::Status {
    WT_TRY(wt::api::require(params, "params"));
    WT_TRY(wt::api::require(key, "key"));
    WT_TRY(wt::api::require(value, "value"));
    size_t extent = 0;
    WT_TRY(wt::api::prune_params_extent(params, &extent));
    for (const Field& f : kFields) {
      if (std::strcmp(key, f.name) != 0) continue;
      if (f.offset + field_bytes(f.kind) > extent)
        return wt::error(WT_ERR_INVALID_ARGUMENT, std::string("prune parameter ") + key +
                                                      " is not in the caller's wt_prune_params (struct_size " +
                                                      std::to_string(params->struct_size) +
                                                      "): it was built against an older whittle.h");
      char* field = reinterpret_cast<char*>(params) + f.offset;
      char* end = nullptr;
      const auto unparsable = [&]() {
        return wt::error(WT_ERR_INVALID_ARGUMENT, std::string("prune parameter ") + key + ": cannot parse \"" + value + "\"");
      };
      switch (f.kind) {
        case Kind::f32: {
          const float v = std::strtof(value, &end);
          if (end == value || *end) return unparsable();
          std::memcpy(field, &v, sizeof v);
          break;
        }
        case Kind::i32: {
          const long v = std::strtol(value, &end, 10);
          if (end == value || *end || v < INT32_MIN || v > INT32_MAX) return unparsable();
          const int32_t i = static_cast<int32_t>(v);
          std::memcpy(field, &i, sizeof i);
          break;
        }
        case Kind::boolean: {
          bool b = false;
          if (!parse_bool(value, &b)) return unparsable();
          std::memcpy(field, &b, sizeof b);
          break;
        }
        case Kind::pool: {
          wt_pool_kind k = WT_POOL_DEFAULT;
          if (!std::strcmp(value, "avg")) k = WT_POOL_AVG;
          else if (!std::strcmp(value, "max")) k = WT_POOL_MAX;
          else if (std::strcmp(value, "default") != 0) return unparsable();
          std::memcpy(field, &k, sizeof k);
          break;
        }
        case Kind::method: {
          wt_prune_method m = WT_PRUNE_FULL;
          if (wt_prune_method_from_name(value, &m) != WT_OK) return unparsable();
          std::memcpy(field, &m, sizeof m);
          break;
        }
      }
      return wt::Status::ok();
    }
    return wt::error(WT_ERR_INVALID_ARGUMENT, std::string("unknown prune parameter \"") + key + "\"");
  });
}

}  // extern "C"
