// The registry of pruning methods: each method is one file of runtime/prune/methods/ that
// describes itself — its id and name, a one-line summary, its parameters (name, type,
// default, range, help), how it fills the model-dependent defaults, the checks that need
// the model, and its policy's factory. The build lists the files (runtime/CMakeLists.txt
// generates the table), so adding a method adds one file: the C API (wt_prune_method_count,
// wt_prune_param_get, wt_prune_set_param, ...) and through it every tool read the registry.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "policy.h"
#include "whittle.h"

namespace wt {

enum class PruneParamType { f32, i32, boolean, pool, method };

// Where a value lives: a field of wt_prune_params (the parameters of the methods it names,
// part of its ABI since API version 1), or, for methods added since, an entry of
// wt_prune_params.extra keyed by a hash of the name, so such a method needs no new field.
inline constexpr size_t kPruneExtra = ~size_t{0};

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// An inclusive or open bound; infinite: none.
struct PruneRange {
  double lo = -kUnbounded;
  double hi = kUnbounded;
  bool lo_open = false;
  bool hi_open = false;
};

struct PruneParamSpec {
  const char* name;
  PruneParamType type;
  size_t offset;          // offsetof(wt_prune_params, field), or kPruneExtra
  double default_value;   // what wt_prune_default_params() holds (-1 / 0 often mean "the
                          // method's default for the model", which resolve() fills in)
  PruneRange range;       // of the resolved value, checked when the method runs
  bool token_count;       // a count of tokens: at most kMaxContextTokens, checked first
                          // (before defaults are derived from it)
  const char* help;
};

// A method's description. Shared parameters (keep, budget, window, pool_kernel, pool, layer,
// record_ranking: registry.cpp) are every method's; params are the method's own.
struct PruneMethodSpec {
  int32_t id;           // its wt_prune_method value, unique: WT_PRUNE_FIRST_EXTENSION (10) and up
                        // for methods without an enumerator (10..15 fit the C++ enum's range)
  const char* name;     // unique; what wt_prune_method_from_name takes
  const char* summary;  // one line
  std::span<const PruneParamSpec> params;
  // Defaults of the shared parameters for this method: window 0, pool_kernel 0 and pool
  // WT_POOL_DEFAULT become these; layer < 0 becomes n_layer / 2 unless resolve sets it.
  int32_t window;
  int32_t pool_kernel;
  wt_pool_kind pool;
  // Fills this method's model-dependent defaults into *p (may be null).
  void (*resolve)(wt_prune_params* p, const PruneShape& s);
  // The checks that need the model or relate parameters, after the ranges (may be null).
  Status (*check)(const wt_prune_params& p, const PruneShape& s);
  // The policy; null for a method that needs none (full KV).
  std::unique_ptr<PrunePolicy> (*make)(const wt_prune_params& p, const PruneShape& s);
};

// The factory of a method whose policy class takes (params, shape).
template <typename Policy>
std::unique_ptr<PrunePolicy> make_policy_of(const wt_prune_params& p, const PruneShape& s) {
  return std::make_unique<Policy>(p, s);
}

// Every registered method, ordered by id.
std::span<const PruneMethodSpec* const> prune_methods();
// The parameters every method reads.
std::span<const PruneParamSpec> shared_prune_params();
// A method by id or by name; null when there is none.
const PruneMethodSpec* find_prune_method(int32_t id);
const PruneMethodSpec* find_prune_method(const char* name);
// A parameter by name, shared or any method's (*owner: its method, null for a shared one).
const PruneParamSpec* find_prune_param(const char* name, const PruneMethodSpec** owner = nullptr);

// The static range as text ("(0, 1]", ">= 1", "[0, 256]"); "" where only the method's
// checks against the model apply.
std::string prune_range_interval(const PruneParamSpec& spec);

// The value of a parameter in p (an extra parameter that was never set: its default).
double prune_param_value(const wt_prune_params& p, const PruneParamSpec& spec);
// The key of an extra parameter in wt_prune_params.extra (never 0).
uint32_t prune_extra_key(const char* name);

// wt_prune_default_params(): every parameter at its spec's default.
wt_prune_params default_prune_params();
// Parses `value` as the parameter's type and stores it; extent: the bytes of the caller's
// layout (a field past it, or the extra entries when the layout has none, are refused).
Status set_prune_param(wt_prune_params* p, size_t extent, const char* key, const char* value);
// The same for a parameter already looked up.
Status set_prune_param(wt_prune_params* p, size_t extent, const PruneParamSpec& spec, const char* value);

// Checks params against the model shape, fills the model-dependent defaults into *resolved
// and makes the policy (nullptr for a method without one, full KV).
Status make_policy(const wt_prune_params& params, const PruneShape& shape, wt_prune_params* resolved,
                   std::unique_ptr<PrunePolicy>* out);

// The KV rows layer `layer` is sized for (the plan's figure): a prompt of n_ctx - max_new
// pruned by the policy (its peak), then max_new generated rows; n_ctx without a policy or
// a bound (max_new 0).
int32_t kv_capacity(const PrunePolicy* policy, int32_t layer, int32_t n_ctx, int32_t max_new);

// The methods' files (runtime/prune/methods/<stem>.cpp) each define
// `const PruneMethodSpec& wt::prune_methods_registry::<stem>()`; the generated table of the
// build lists them all.
std::span<const PruneMethodSpec* const> registered_prune_method_files();

}  // namespace wt
