// wt_prune_*: the pruning methods and their parameters, as the registry of runtime/prune/
// has them (registry.h).
#include <cstring>
#include <string>
#include <vector>

#include "handles.h"
#include "params_abi.h"
#include "runtime/prune/registry.h"

namespace {

// Every parameter in the order wt_prune_param_get gives them: shared, then each method's.
struct ParamEntry {
  const wt::PruneParamSpec* spec;
  int32_t method;     // -1: shared
  std::string range;  // static text for wt_prune_param_info.range
};

const std::vector<ParamEntry>& param_list() {
  static const std::vector<ParamEntry> list = [] {
    std::vector<ParamEntry> l;
    for (const wt::PruneParamSpec& s : wt::shared_prune_params()) l.push_back({&s, -1, wt::prune_range_interval(s)});
    for (const wt::PruneMethodSpec* m : wt::prune_methods())
      for (const wt::PruneParamSpec& s : m->params) l.push_back({&s, m->id, wt::prune_range_interval(s)});
    return l;
  }();
  return list;
}

wt_prune_param_type public_type(wt::PruneParamType t) {
  switch (t) {
    case wt::PruneParamType::f32: return WT_PRUNE_PARAM_FLOAT;
    case wt::PruneParamType::i32: return WT_PRUNE_PARAM_INT;
    case wt::PruneParamType::boolean: return WT_PRUNE_PARAM_BOOL;
    case wt::PruneParamType::pool: return WT_PRUNE_PARAM_POOL;
    case wt::PruneParamType::method: return WT_PRUNE_PARAM_METHOD;
  }
  return WT_PRUNE_PARAM_INT;
}

std::string known_methods() {
  std::string s;
  for (const wt::PruneMethodSpec* m : wt::prune_methods()) s += (s.empty() ? "" : ", ") + std::string(m->name);
  return s;
}

}  // namespace

extern "C" {

wt_prune_params wt_prune_default_params(void) { return wt::default_prune_params(); }

const char* wt_prune_method_name(wt_prune_method method) {
  const wt::PruneMethodSpec* m = wt::find_prune_method(wt::raw_value(method));
  return m ? m->name : "unknown";
}

const char* wt_prune_method_summary(wt_prune_method method) {
  const wt::PruneMethodSpec* m = wt::find_prune_method(wt::raw_value(method));
  return m ? m->summary : "";
}

int32_t wt_prune_method_count(void) { return static_cast<int32_t>(wt::prune_methods().size()); }

wt_status wt_prune_method_at(int32_t index, wt_prune_method* out_method) {
  return wt::api::guarded([&]() -> wt::Status {
    WT_TRY(wt::api::require(out_method, "out_method"));
    const auto methods = wt::prune_methods();
    if (index < 0 || static_cast<size_t>(index) >= methods.size())
      return wt::error(WT_ERR_INVALID_ARGUMENT, "method index " + std::to_string(index) + " is outside [0, " +
                                                    std::to_string(methods.size()) + ")");
    *out_method = static_cast<wt_prune_method>(methods[static_cast<size_t>(index)]->id);
    return wt::Status::ok();
  });
}

wt_status wt_prune_method_from_name(const char* name, wt_prune_method* out_method) {
  return wt::api::guarded([&]() -> wt::Status {
    WT_TRY(wt::api::require(name, "name"));
    WT_TRY(wt::api::require(out_method, "out_method"));
    const wt::PruneMethodSpec* m = wt::find_prune_method(name);
    if (!m)
      return wt::error(WT_ERR_INVALID_ARGUMENT,
                       std::string("unknown pruning method \"") + name + "\" (" + known_methods() + ")");
    *out_method = static_cast<wt_prune_method>(m->id);
    return wt::Status::ok();
  });
}

int32_t wt_prune_param_count(void) { return static_cast<int32_t>(param_list().size()); }

wt_status wt_prune_param_get(int32_t index, wt_prune_param_info* out_info) {
  return wt::api::guarded([&]() -> wt::Status {
    WT_TRY(wt::api::require(out_info, "out_info"));
    const auto& list = param_list();
    if (index < 0 || static_cast<size_t>(index) >= list.size())
      return wt::error(WT_ERR_INVALID_ARGUMENT, "parameter index " + std::to_string(index) + " is outside [0, " +
                                                    std::to_string(list.size()) + ")");
    const size_t size = out_info->struct_size;
    const size_t least = offsetof(wt_prune_param_info, name) + sizeof(const char*);
    if (size < least)
      return wt::error(WT_ERR_INVALID_ARGUMENT, "wt_prune_param_info.struct_size is " + std::to_string(size) +
                                                    ": set it to sizeof(wt_prune_param_info) (at least " +
                                                    std::to_string(least) + ")");
    const ParamEntry& e = list[static_cast<size_t>(index)];
    wt_prune_param_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.name = e.spec->name;
    info.type = public_type(e.spec->type);
    info.method = e.method;
    info.default_value = e.spec->default_value;
    info.range = e.range.c_str();
    info.help = e.spec->help;
    // An older caller's struct is a prefix of this one: no byte past its size.
    std::memcpy(static_cast<void*>(out_info), &info, std::min(size, sizeof info));
    out_info->struct_size = std::min(size, sizeof info);
    return wt::Status::ok();
  });
}

wt_status wt_prune_set_param(wt_prune_params* params, const char* key, const char* value) {
  return wt::api::guarded([&]() -> wt::Status {
    WT_TRY(wt::api::require(params, "params"));
    WT_TRY(wt::api::require(key, "key"));
    WT_TRY(wt::api::require(value, "value"));
    size_t extent = 0;
    WT_TRY(wt::api::prune_params_extent(params, &extent));
    return wt::set_prune_param(params, extent, key, value);
  });
}

}  // extern "C"
