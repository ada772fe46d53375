// The values a Jinja template computes with (jinja.h runs templates): Python's None, bool,
// int, float, str, list and dict, Jinja's Undefined and namespace(), and the functions a
// template may call. Strings are UTF-8; lists and dicts are shared and never changed once
// built (transformers renders templates in an immutable sandbox), except a namespace's
// attributes, which `{% set ns.x = ... %}` exists to change.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wt {

struct JinjaMacro;  // jinja_parse.h
struct JinjaValue;
using JinjaList = std::vector<JinjaValue>;
using JinjaDict = std::vector<std::pair<std::string, JinjaValue>>;  // in insertion order, as Python's

struct JinjaValue {
  static constexpr size_t kStringCostBytes = 16;
  enum class Kind : uint8_t { undefined, none, boolean, integer, number, string, list, dict, ns, function, macro };
  Kind kind = Kind::undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                         // a string; a function's name
  std::shared_ptr<const JinjaList> list;  // list (and tuple)
  std::shared_ptr<JinjaDict> dict;        // dict or namespace (only a namespace is ever changed)
  const JinjaMacro* macro = nullptr;
  bool tuple = false;  // a list that Python would hold as a tuple: written (a, b)
  // How deeply lists and dicts nest in it, and what walking or copying all of it costs (a
  // unit per value and per 16 bytes of string, a list shared twice counted twice): the
  // renderer bounds both and charges the cost of what it walks and copies, so printing,
  // comparing and serialising a value recurse only so far, and a template's time and the
  // bytes it allocates are bounded by its step budget.
  uint32_t depth = 0;
  uint64_t cost = 1;
  bool holds_ns = false;  // a list or dict with a namespace inside, which the renderer refuses

  static JinjaValue none() { return with(Kind::none); }
  static JinjaValue boolean(bool v) { auto x = with(Kind::boolean); x.b = v; return x; }
  static JinjaValue integer(int64_t v) { auto x = with(Kind::integer); x.i = v; return x; }
  static JinjaValue number(double v) { auto x = with(Kind::number); x.f = v; return x; }
  static JinjaValue string(std::string v) {
    auto x = with(Kind::string);
    x.cost = 1 + v.size() / kStringCostBytes;
    x.s = std::move(v);
    return x;
  }
  static JinjaValue of_list(JinjaList v, bool tuple = false) {
    auto x = with(Kind::list);
    x.tuple = tuple;
    for (const JinjaValue& item : v) {
      x.depth = std::max(x.depth, item.depth + 1), x.cost += item.cost;
      x.holds_ns = x.holds_ns || item.holds_ns || item.kind == Kind::ns;
    }
    x.list = std::make_shared<const JinjaList>(std::move(v));
    return x;
  }
  static JinjaValue of_dict(JinjaDict v, Kind kind = Kind::dict) {
    auto x = with(kind);
    for (const auto& item : v) {  // a namespace is never walked (printed, compared): no depth, no cost
      if (kind != Kind::dict) continue;
      x.depth = std::max(x.depth, item.second.depth + 1);
      x.cost += item.second.cost + 1 + item.first.size() / kStringCostBytes;
      x.holds_ns = x.holds_ns || item.second.holds_ns || item.second.kind == Kind::ns;
    }
    x.dict = std::make_shared<JinjaDict>(std::move(v));
    return x;
  }
  static JinjaValue function(std::string name) { auto x = with(Kind::function); x.s = std::move(name); return x; }

  bool is(Kind k) const { return kind == k; }
  bool is_numeric() const { return kind == Kind::boolean || kind == Kind::integer || kind == Kind::number; }
  // The item of a dict or namespace with this key, or null.
  const JinjaValue* find(const std::string& key) const;

 private:
  static JinjaValue with(Kind k) { JinjaValue x; x.kind = k; return x; }
};

// Python's truth of a value (Undefined is false).
bool jinja_truthy(const JinjaValue& v);
// Python's str() of a value, as `{{ }}` writes it (Undefined writes nothing).
std::string jinja_str(const JinjaValue& v);
// Python's repr(), which str() of a list or dict writes its items with.
std::string jinja_repr(const JinjaValue& v);
// Python's == (1 == 1.0 == True; lists and dicts item by item, a tuple never a list;
// Undefined equals Undefined).
bool jinja_equal(const JinjaValue& a, const JinjaValue& b);
// Python's <: numbers with numbers, strings by code point, lists item by item. False with
// *ok false where Python raises.
bool jinja_less(const JinjaValue& a, const JinjaValue& b, bool* ok);
// Python's float(x) of a number.
double jinja_number(const JinjaValue& v);
// transformers' `tojson`: Python's json.dumps with these arguments (its defaults but
// ensure_ascii off). False for what JSON cannot hold (Undefined, a namespace, a function, a
// non-finite float) and for a text past max_bytes.
struct JinjaJsonStyle {
  int indent = -1;  // none; 0 and up: newlines and that many spaces a level
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // non-ASCII characters as \uXXXX escapes
  size_t max_bytes = size_t{8} << 20;
};
bool jinja_json(const JinjaValue& v, const JinjaJsonStyle& style, std::string* out);

// Strings as Python sees them, by code point: the UTF-8 characters' byte offsets (and the
// string's size last), so an index into the characters is one into the offsets. A byte
// that starts no well-formed character is a character of its own.
std::vector<size_t> utf8_offsets(const std::string& s);
// The number of those characters in s[0, bytes).
size_t utf8_length(const std::string& s, size_t bytes);

}  // namespace wt
