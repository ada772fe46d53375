// The registry (registry.h): the shared parameters, lookups over the methods' own tables,
// defaults, text parsing for wt_prune_set_param, and the check that turns a user's
// parameters into a resolved, model-specific set before the method's policy is made.
#include "registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "base/raw_value.h"

namespace wt {

namespace {

constexpr double kInf = kUnbounded;

const PruneParamSpec kShared[] = {
    {"method", PruneParamType::method, offsetof(wt_prune_params, method), WT_PRUNE_FULL, {}, false,
     "the pruning method (full = no pruning)"},
    {"keep", PruneParamType::f32, offsetof(wt_prune_params, keep), 0.1, {0, 1, true, false}, false,
     "fraction of the prompt kept: sets every proportional budget"},
    {"budget", PruneParamType::i32, offsetof(wt_prune_params, budget), 0, {0, kInf}, true,
     "> 0: a constant budget in tokens instead of keep * L (0 = keep * L)"},
    {"window", PruneParamType::i32, offsetof(wt_prune_params, window), 0, {1, kInf}, true,
     "W, the observation window in tokens; 0 = the method's default (SnapKV, FastKV, CLAA, ASL, GemFilter: at most half the budget)"},
    {"pool_kernel", PruneParamType::i32, offsetof(wt_prune_params, pool_kernel), 0, {1, kInf}, true,
     "odd pooling kernel over the scores; 0 = the method's default"},
    {"pool", PruneParamType::pool, offsetof(wt_prune_params, pool), WT_POOL_DEFAULT, {}, false,
     "avg, max or default (the method's)"},
    {"layer", PruneParamType::i32, offsetof(wt_prune_params, layer), -1, {-1, kInf}, false,
     "the selection / filter layer of FastKV, CLAA, GemFilter; -1 = half the depth (FastKV, CLAA: the "
     "paper's 15 of 32), 0.6 of it (GemFilter)"},
    {"record_ranking", PruneParamType::i32, offsetof(wt_prune_params, record_ranking), 0, {0, 1}, false,
     "1: keep each layer's token ranking (wt_context_get_token_ranking) and a decode step's attended rows "
     "(wt_context_get_attended_rows)"},
};

// Integral values in full ("2147483647"), others as %g.
std::string num(double v) {
  if (v == kInf) return "inf";
  if (v == -kInf) return "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, v == std::floor(v) && std::fabs(v) < 1e15 ? "%.0f" : "%g", v);
  return buf;
}

bool in_range(double v, const PruneRange& r) {
  if (std::isnan(v)) return false;
  const bool lo_ok = r.lo_open ? v > r.lo : v >= r.lo;
  const bool hi_ok = r.hi_open ? v < r.hi : v <= r.hi;
  return lo_ok && hi_ok;
}

// "is outside (0, 1]", "must be >= 1", "must be in [0, 256]".
std::string range_text(const PruneParamSpec& spec) {
  const PruneRange& r = spec.range;
  const std::string interval = prune_range_interval(spec);
  if (r.lo == -kInf || r.hi == kInf) return "must be " + interval;
  return spec.type == PruneParamType::f32 ? "is outside " + interval : "must be in " + interval;
}

bool parse_bool(const char* v, bool* out) {
  for (const char* t : {"1", "true", "on", "yes"})
    if (!std::strcmp(v, t)) return *out = true, true;
  for (const char* f : {"0", "false", "off", "no"})
    if (!std::strcmp(v, f)) return *out = false, true;
  return false;
}

// Every method, sorted by id once.
struct Methods {
  std::vector<const PruneMethodSpec*> sorted;
  Methods() {
    const auto files = registered_prune_method_files();
    sorted.assign(files.begin(), files.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
  }
};

const Methods& methods() {
  static const Methods m;
  return m;
}

void store(wt_prune_params* p, const PruneParamSpec& spec, double v) {
  char* field = reinterpret_cast<char*>(p) + spec.offset;
  switch (spec.type) {
    case PruneParamType::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(field, &f, sizeof f);
      break;
    }
    case PruneParamType::boolean: {
      const bool b = v != 0;
      std::memcpy(field, &b, sizeof b);
      break;
    }
    case PruneParamType::i32:
    case PruneParamType::pool:
    case PruneParamType::method: {
      const int32_t i = static_cast<int32_t>(v);
      std::memcpy(field, &i, sizeof i);
      break;
    }
  }
}

size_t value_bytes(const PruneParamSpec& spec) {
  return spec.offset == kPruneExtra ? sizeof(wt_prune_params::extra)
                                    : (spec.type == PruneParamType::boolean ? sizeof(bool) : sizeof(int32_t));
}

Status bad(const std::string& what) { return error(WT_ERR_INVALID_ARGUMENT, "prune." + what); }

// The parameters a method reads: the shared ones and its own.
template <typename F>
Status for_params(const PruneMethodSpec& m, F&& f) {
  for (const PruneParamSpec& s : kShared) WT_TRY(f(s));
  for (const PruneParamSpec& s : m.params) WT_TRY(f(s));
  return Status::ok();
}

}  // namespace

std::string prune_range_interval(const PruneParamSpec& spec) {
  const PruneRange& r = spec.range;
  std::string s;
  if (r.lo == -kInf && r.hi == kInf) return s;
  if (r.hi == kInf) return s.append(r.lo_open ? "> " : ">= ").append(num(r.lo));
  if (r.lo == -kInf) return s.append(r.hi_open ? "< " : "<= ").append(num(r.hi));
  return s.append(r.lo_open ? "(" : "[").append(num(r.lo)).append(", ").append(num(r.hi)).append(r.hi_open ? ")" : "]");
}

std::span<const PruneMethodSpec* const> prune_methods() { return methods().sorted; }

std::span<const PruneParamSpec> shared_prune_params() { return kShared; }

const PruneMethodSpec* find_prune_method(int32_t id) {
  for (const PruneMethodSpec* m : prune_methods())
    if (m->id == id) return m;
  return nullptr;
}

const PruneMethodSpec* find_prune_method(const char* name) {
  for (const PruneMethodSpec* m : prune_methods())
    if (!std::strcmp(m->name, name)) return m;
  return nullptr;
}

const PruneParamSpec* find_prune_param(const char* name, const PruneMethodSpec** owner) {
  if (owner) *owner = nullptr;
  for (const PruneParamSpec& s : kShared)
    if (!std::strcmp(s.name, name)) return &s;
  for (const PruneMethodSpec* m : prune_methods()) {
    for (const PruneParamSpec& s : m->params) {
      if (std::strcmp(s.name, name) != 0) continue;
      if (owner) *owner = m;
      return &s;
    }
  }
  return nullptr;
}

uint32_t prune_extra_key(const char* name) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return h == 0 ? 1 : h;
}

double prune_param_value(const wt_prune_params& p, const PruneParamSpec& spec) {
  if (spec.offset == kPruneExtra) {
    const uint32_t key = prune_extra_key(spec.name);
    for (const wt_prune_extra_param& e : p.extra)
      if (e.key == key) return e.value;
    return spec.default_value;
  }
  const char* field = reinterpret_cast<const char*>(&p) + spec.offset;
  switch (spec.type) {
    case PruneParamType::f32: {
      float f = 0;
      std::memcpy(&f, field, sizeof f);
      return f;
    }
    case PruneParamType::boolean: {
      bool b = false;
      std::memcpy(&b, field, sizeof b);
      return b ? 1 : 0;
    }
    default: {
      int32_t i = 0;
      std::memcpy(&i, field, sizeof i);
      return i;
    }
  }
}

wt_prune_params default_prune_params() {
  wt_prune_params p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  for (const PruneParamSpec& s : kShared) store(&p, s, s.default_value);
  for (const PruneMethodSpec* m : prune_methods())
    for (const PruneParamSpec& s : m->params)
      if (s.offset != kPruneExtra) store(&p, s, s.default_value);
  return p;
}

Status set_prune_param(wt_prune_params* p, size_t extent, const char* key, const char* value) {
  const PruneParamSpec* spec = find_prune_param(key);
  if (!spec) return error(WT_ERR_INVALID_ARGUMENT, std::string("unknown prune parameter \"") + key + "\"");
  return set_prune_param(p, extent, *spec, value);
}

Status set_prune_param(wt_prune_params* p, size_t extent, const PruneParamSpec& param, const char* value) {
  const PruneParamSpec* spec = &param;
  const char* key = spec->name;
  const size_t at = spec->offset == kPruneExtra ? offsetof(wt_prune_params, extra) : spec->offset;
  if (at + value_bytes(*spec) > extent)
    return error(WT_ERR_INVALID_ARGUMENT, std::string("prune parameter ") + key +
                                              " is not in the caller's wt_prune_params (struct_size " +
                                              std::to_string(p->struct_size) + "): it was built against an older whittle.h");
  const auto unparsable = [&]() {
    return error(WT_ERR_INVALID_ARGUMENT, std::string("prune parameter ") + key + ": cannot parse \"" + value + "\"");
  };
  char* end = nullptr;
  double v = 0;
  switch (spec->type) {
    case PruneParamType::f32: {
      const float f = std::strtof(value, &end);
      if (end == value || *end) return unparsable();
      v = f;
      break;
    }
    case PruneParamType::i32: {
      const long i = std::strtol(value, &end, 10);
      if (end == value || *end || i < INT32_MIN || i > INT32_MAX) return unparsable();
      v = static_cast<double>(i);
      break;
    }
    case PruneParamType::boolean: {
      bool b = false;
      if (!parse_bool(value, &b)) return unparsable();
      v = b ? 1 : 0;
      break;
    }
    case PruneParamType::pool: {
      if (!std::strcmp(value, "avg")) v = WT_POOL_AVG;
      else if (!std::strcmp(value, "max")) v = WT_POOL_MAX;
      else if (!std::strcmp(value, "default")) v = WT_POOL_DEFAULT;
      else return unparsable();
      break;
    }
    case PruneParamType::method: {
      const PruneMethodSpec* m = find_prune_method(value);
      if (!m) return unparsable();
      v = m->id;
      break;
    }
  }
  if (spec->offset != kPruneExtra) {
    store(p, *spec, v);
    return Status::ok();
  }
  const uint32_t k = prune_extra_key(spec->name);
  wt_prune_extra_param* slot = nullptr;
  for (wt_prune_extra_param& e : p->extra) {
    if (e.key == k) {
      slot = &e;
      break;
    }
    if (e.key == 0 && !slot) slot = &e;
  }
  if (!slot)
    return error(WT_ERR_INVALID_ARGUMENT, std::string("prune parameter ") + key + ": wt_prune_params.extra already holds " +
                                              std::to_string(WT_PRUNE_MAX_EXTRA) + " other parameters");
  slot->key = k;
  slot->value = v;
  return Status::ok();
}

Status make_policy(const wt_prune_params& in, const PruneShape& s, wt_prune_params* out,
                   std::unique_ptr<PrunePolicy>* policy) {
  wt_prune_params p = in;
  const int32_t method = raw_value(in.method), pool = raw_value(in.pool);
  const PruneMethodSpec* m = find_prune_method(method);
  if (!m) return bad("method " + std::to_string(method) + " is unknown");
  if (pool < WT_POOL_DEFAULT || pool > WT_POOL_MAX) return bad("pool " + std::to_string(pool) + " is unknown");
  // Token counts past the longest context mean nothing, and the policies add them up
  // (n_sink + window, 2 * budget): refused before any default is derived from them.
  WT_TRY(for_params(*m, [&](const PruneParamSpec& spec) -> Status {
    const double v = prune_param_value(p, spec);
    if (spec.token_count && v > kMaxContextTokens)
      return bad(std::string(spec.name) + " " + num(v) + " is above the limit of " + std::to_string(kMaxContextTokens) +
                 " tokens");
    // A layer whose -1 means the method's default: checked before resolve() replaces
    // every negative value with that default, so that -7 is refused, not read as -1.
    if (spec.default_value == -1 && !in_range(v, spec.range))
      return bad(std::string(spec.name) + " " + num(v) + " " + range_text(spec) + " (-1: the method's default)");
    return Status::ok();
  }));
  if (!(p.keep > 0.0f && p.keep <= 1.0f)) return bad("keep " + std::to_string(p.keep) + " is outside (0, 1]");
  if (p.budget < 0) return bad("budget must be >= 0 (0 = keep * L)");

  // Model-depth defaults (METHODS.md: the 32-layer papers' layers scaled to the model).
  if (m->resolve) m->resolve(&p, s);
  if (p.window == 0) p.window = m->window;
  if (p.pool_kernel == 0) p.pool_kernel = m->pool_kernel;
  if (p.pool == WT_POOL_DEFAULT) p.pool = m->pool;
  if (p.layer < 0) p.layer = s.n_layer / 2;

  // Ranges, then what relates parameters or needs the model.
  WT_TRY(for_params(*m, [&](const PruneParamSpec& spec) -> Status {
    const double v = prune_param_value(p, spec);
    if (spec.type == PruneParamType::f32 || spec.type == PruneParamType::i32)
      if (!in_range(v, spec.range)) return bad(std::string(spec.name) + " " + num(v) + " " + range_text(spec));
    // An integer kept in `extra` (a float) must be one: the policies convert it to int32.
    if (spec.type == PruneParamType::i32 && !(v == std::floor(v) && v >= INT32_MIN && v <= INT32_MAX))
      return bad(std::string(spec.name) + " " + num(v) + " is not a whole number in the int32 range");
    return Status::ok();
  }));
  if (p.budget > 0 && p.budget < p.window)
    return bad("budget " + std::to_string(p.budget) + " is below the window " + std::to_string(p.window));
  if (p.pool_kernel % 2 == 0) return bad("pool_kernel must be odd and >= 1");
  if (p.layer >= s.n_layer)
    return bad("layer " + std::to_string(p.layer) + " is beyond the model's " + std::to_string(s.n_layer) + " layers");
  if (m->check) WT_TRY(m->check(p, s));

  *out = p;
  if (m->make) {
    *policy = m->make(p, s);
  } else {
    policy->reset();
  }
  return Status::ok();
}

int32_t kv_capacity(const PrunePolicy* policy, int32_t layer, int32_t n_ctx, int32_t max_new) {
  if (!policy || max_new <= 0 || max_new >= n_ctx) return n_ctx;
  return std::min(n_ctx, policy->kv_peak(layer, n_ctx - max_new) + max_new);
}

}  // namespace wt
