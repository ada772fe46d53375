// The registry of pruning methods (runtime/prune/registry.h) and the C API that lists it:
// every method and parameter is named once, the lists the C API gives are the registry's,
// the defaults are the specs', and a later method's parameters (kept in
// wt_prune_params.extra) are stored, read and refused as whittle.h says.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "runtime/prune/registry.h"
#include "whittle.h"

TEST_CASE("prune registry: ids, names and parameter names are unique, and every entry says what it is") {
  std::set<int32_t> ids;
  std::set<std::string> names, params;
  std::set<uint32_t> extra_keys;
  for (const wt::PruneParamSpec& s : wt::shared_prune_params()) {
    CHECK(params.insert(s.name).second);
    CHECK(std::strlen(s.help) > 0);
  }
  int32_t last_id = -1;
  for (const wt::PruneMethodSpec* m : wt::prune_methods()) {
    CAPTURE(m->name);
    CHECK(m->id > last_id);  // ordered by id
    last_id = m->id;
    CHECK(ids.insert(m->id).second);
    CHECK(names.insert(m->name).second);
    CHECK(std::strlen(m->summary) > 0);
    CHECK(m->window >= 1);
    CHECK(m->pool_kernel % 2 == 1);
    CHECK((m->pool == WT_POOL_AVG || m->pool == WT_POOL_MAX));
    for (const wt::PruneParamSpec& s : m->params) {
      CAPTURE(s.name);
      CHECK(params.insert(s.name).second);
      CHECK(std::strlen(s.help) > 0);
      if (s.offset == wt::kPruneExtra) {
        CHECK(extra_keys.insert(wt::prune_extra_key(s.name)).second);
      } else {
        CHECK(s.offset + sizeof(int32_t) <= offsetof(wt_prune_params, extra));  // an API 1 field
      }
    }
  }
  // The ten methods of API 1 keep their enum values and names.
  const std::pair<wt_prune_method, const char*> api1[] = {
      {WT_PRUNE_FULL, "full"},           {WT_PRUNE_STREAMING, "streaming"}, {WT_PRUNE_SNAPKV, "snapkv"},
      {WT_PRUNE_FASTKV, "fastkv"},       {WT_PRUNE_GEMFILTER, "gemfilter"}, {WT_PRUNE_ASL, "asl"},
      {WT_PRUNE_CLAA, "claa"},           {WT_PRUNE_SLIMINFER, "sliminfer"}, {WT_PRUNE_TOKENFILTER, "tokenfilter"},
      {WT_PRUNE_ORACLE, "oracle"}};
  for (const auto& [id, name] : api1) {
    const wt::PruneMethodSpec* m = wt::find_prune_method(static_cast<int32_t>(id));
    REQUIRE(m != nullptr);
    CHECK(std::string(m->name) == name);
  }
  for (const wt::PruneMethodSpec* m : wt::prune_methods())
    if (m->id > WT_PRUNE_ORACLE) CHECK(m->id >= WT_PRUNE_FIRST_EXTENSION);
}

TEST_CASE("prune registry: the C API lists exactly the registry's methods and parameters") {
  const auto methods = wt::prune_methods();
  REQUIRE(wt_prune_method_count() == static_cast<int32_t>(methods.size()));
  for (int32_t i = 0; i < wt_prune_method_count(); ++i) {
    wt_prune_method m = WT_PRUNE_FULL;
    REQUIRE(wt_prune_method_at(i, &m) == WT_OK);
    CHECK(static_cast<int32_t>(m) == methods[static_cast<size_t>(i)]->id);
    wt_prune_method back = WT_PRUNE_FULL;
    REQUIRE(wt_prune_method_from_name(wt_prune_method_name(m), &back) == WT_OK);
    CHECK(back == m);
    CHECK(std::string(wt_prune_method_summary(m)) == methods[static_cast<size_t>(i)]->summary);
  }
  wt_prune_method m = WT_PRUNE_FULL;
  CHECK(wt_prune_method_at(-1, &m) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_method_at(wt_prune_method_count(), &m) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_method_at(0, nullptr) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_prune_method_summary(static_cast<wt_prune_method>(15))).empty());
  // The unknown-name message lists every method.
  CHECK(wt_prune_method_from_name("nope", &m) == WT_ERR_INVALID_ARGUMENT);
  for (const wt::PruneMethodSpec* s : methods) CHECK(std::string(wt_last_error()).find(s->name) != std::string::npos);

  // Parameters: shared first, then each method's own, each once; each one wt_prune_set_param takes.
  size_t n_registry = wt::shared_prune_params().size();
  for (const wt::PruneMethodSpec* s : methods) n_registry += s->params.size();
  REQUIRE(wt_prune_param_count() == static_cast<int32_t>(n_registry));
  const wt_prune_params defaults = wt_prune_default_params();
  for (int32_t i = 0; i < wt_prune_param_count(); ++i) {
    wt_prune_param_info info;
    info.struct_size = sizeof info;
    REQUIRE(wt_prune_param_get(i, &info) == WT_OK);
    CAPTURE(info.name);
    const wt::PruneMethodSpec* owner = nullptr;
    const wt::PruneParamSpec* spec = wt::find_prune_param(info.name, &owner);
    REQUIRE(spec != nullptr);
    CHECK(info.method == (owner ? owner->id : -1));
    const bool shared = i < static_cast<int32_t>(wt::shared_prune_params().size());
    CHECK((shared ? info.method == -1 : info.method >= 0));
    CHECK(info.default_value == spec->default_value);
    // wt_prune_default_params holds every default.
    CHECK(wt::prune_param_value(defaults, *spec) == static_cast<double>(static_cast<float>(spec->default_value)));
    wt_prune_params p = wt_prune_default_params();
    const char* text = info.type == WT_PRUNE_PARAM_POOL ? "max" : (info.type == WT_PRUNE_PARAM_METHOD ? "asl" : "1");
    CHECK(wt_prune_set_param(&p, info.name, text) == WT_OK);
  }
  wt_prune_param_info info;
  info.struct_size = sizeof info;
  CHECK(wt_prune_param_get(wt_prune_param_count(), &info) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_prune_param_get(0, nullptr) == WT_ERR_INVALID_ARGUMENT);
  info.struct_size = 0;
  CHECK(wt_prune_param_get(0, &info) == WT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("prune registry: wt_prune_param_get writes no byte beyond the caller's struct_size") {
  // An older caller's struct ends after `name`: the bytes after it must stay as they are.
  struct Older {
    size_t struct_size;
    const char* name;
  };
  unsigned char block[sizeof(wt_prune_param_info) + 16];
  std::memset(block, 0xAB, sizeof block);
  Older o{sizeof(Older), nullptr};
  std::memcpy(block, &o, sizeof o);
  REQUIRE(wt_prune_param_get(0, reinterpret_cast<wt_prune_param_info*>(block)) == WT_OK);
  std::memcpy(&o, block, sizeof o);
  CHECK(std::string(o.name) == "method");
  CHECK(o.struct_size == sizeof(Older));
  for (size_t i = sizeof(Older); i < sizeof block; ++i) CHECK(block[i] == 0xAB);
}

TEST_CASE("prune registry: a later method's parameters live in wt_prune_params.extra, by name") {
  // As a method added after API 3 would declare it.
  const wt::PruneParamSpec seed{"test_seed", wt::PruneParamType::i32, wt::kPruneExtra, 7, {0, 100}, false, "a seed"};
  const wt::PruneParamSpec rate{"test_rate", wt::PruneParamType::f32, wt::kPruneExtra, 0.5, {0, 1}, false, "a rate"};
  wt_prune_params p = wt_prune_default_params();
  const size_t all = sizeof p;
  CHECK(wt::prune_param_value(p, seed) == 7);  // not set: its default
  REQUIRE(wt::set_prune_param(&p, all, seed, "42").is_ok());
  REQUIRE(wt::set_prune_param(&p, all, rate, "0.25").is_ok());
  CHECK(wt::prune_param_value(p, seed) == 42);
  CHECK(wt::prune_param_value(p, rate) == 0.25);
  REQUIRE(wt::set_prune_param(&p, all, seed, "43").is_ok());  // set again: the same entry
  CHECK(wt::prune_param_value(p, seed) == 43);
  int used = 0;
  for (const wt_prune_extra_param& e : p.extra) used += e.key != 0;
  CHECK(used == 2);
  CHECK(!wt::set_prune_param(&p, all, seed, "4x").is_ok());
  // A caller built against API 3 has no extra entries: refused, naming the parameter.
  const wt::Status old = wt::set_prune_param(&p, offsetof(wt_prune_params, extra), seed, "1");
  CHECK(old.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(old.message().find("test_seed") != std::string::npos);
  // At most WT_PRUNE_MAX_EXTRA different parameters at once.
  wt_prune_params q = wt_prune_default_params();
  std::string names[WT_PRUNE_MAX_EXTRA + 1];
  for (int i = 0; i <= WT_PRUNE_MAX_EXTRA; ++i) {
    names[i] = "test_param_" + std::to_string(i);
    const wt::PruneParamSpec s{names[i].c_str(), wt::PruneParamType::boolean, wt::kPruneExtra, 0, {}, false, "x"};
    const wt::Status st = wt::set_prune_param(&q, all, s, "1");
    CHECK(st.is_ok() == (i < WT_PRUNE_MAX_EXTRA));
  }
}
