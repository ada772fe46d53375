#include "jinja_builtins.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "jinja_parse.h"
#include "jinja_text.h"  // jinja_trim

namespace wt {

namespace {

using Kind = JinjaValue::Kind;

const char* const kFilters[] = {"abs",   "capitalize", "count",   "d",          "default", "e",       "escape",
                                "first", "float",      "int",     "items",      "join",    "last",    "length",
                                "list",  "lower",      "map",     "reject",     "rejectattr", "replace", "reverse",
                                "safe",  "select",     "selectattr", "string",  "title",   "tojson",  "trim",
                                "upper", "unique",     "sort"};
const char* const kTests[] = {"defined", "undefined", "none", "boolean", "false",    "true",   "integer", "float",
                              "number",  "string",    "mapping", "iterable", "sequence", "callable", "equalto",
                              "eq",      "==",        "ne",   "!=",      "lt",       "<",      "le",      "<=",
                              "gt",      ">",         "ge",   ">=",      "in",       "sameas", "divisibleby",
                              "even",    "odd",       "lower", "upper"};

std::string ascii_case(std::string s, bool upper) {
  for (char& c : s) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The items a value iterates over in a for loop or a filter: a list's items, a dict's
// keys, a string's characters; Undefined is empty, as jinja2's Undefined iterates.
Status items_of(const JinjaValue& x, JinjaList* out) {
  out->clear();
  switch (x.kind) {
    case Kind::undefined: return Status::ok();
    case Kind::list: *out = *x.list; return Status::ok();
    case Kind::dict:
      for (const auto& kv : *x.dict) out->push_back(JinjaValue::string(kv.first));
      return Status::ok();
    case Kind::string: {
      if (utf8_length(x.s, x.s.size()) > kJinjaMaxItems) return jinja_error("a string of more than 100000 characters as a list");
      const std::vector<size_t> at = utf8_offsets(x.s);
      for (size_t k = 0; k + 1 < at.size(); ++k) out->push_back(JinjaValue::string(x.s.substr(at[k], at[k + 1] - at[k])));
      return Status::ok();
    }
    default: return jinja_error("a " + std::string(x.kind == Kind::none ? "None" : "value") + " is not iterable");
  }
}

// What finding a needle in a haystack may cost (std::string::find is quadratic at worst),
// in the renderer's steps of 16 bytes.
uint64_t search_cost(size_t haystack, size_t needle) {
  return (haystack / JinjaValue::kStringCostBytes + 1) * (needle / JinjaValue::kStringCostBytes + 1);
}

// The attribute or item `name` ("a.b" walks) of a value, as jinja2's attribute filters read it.
JinjaValue attribute(const JinjaValue& x, const std::string& name) {
  JinjaValue v = x;
  for (size_t at = 0; at <= name.size();) {
    const size_t dot = std::min(name.find('.', at), name.size());
    const JinjaValue* f = v.find(name.substr(at, dot - at));
    v = f ? *f : JinjaValue();
    at = dot + 1;
  }
  return v;
}

// Python's str.strip family: `chars` null (or None) for whitespace.
std::string strip(const std::string& s, const JinjaValue* chars, bool left, bool right) {
  if (!chars || chars->kind == Kind::none) {
    size_t b = 0, e = s.size();
    for (size_t n; left && b < e && (n = jinja_space_at(s, b)) > 0;) b += n;
    if (right) {  // the end of the trimmed text, wherever its start is (rstrip keeps leading spaces)
      size_t first = b;
      for (size_t n; first < e && (n = jinja_space_at(s, first)) > 0;) first += n;
      e = first == e ? b : first + jinja_trim(s.substr(first)).size();
    }
    return s.substr(b, e - b);
  }
  const std::vector<size_t> at = utf8_offsets(s);
  const std::vector<size_t> cat = utf8_offsets(chars->s);
  const auto in_set = [&](size_t k) {
    for (size_t m = 0; m + 1 < cat.size(); ++m)
      if (at[k + 1] - at[k] == cat[m + 1] - cat[m] && s.compare(at[k], at[k + 1] - at[k], chars->s, cat[m], cat[m + 1] - cat[m]) == 0)
        return true;
    return false;
  };
  size_t b = 0, e = at.size() - 1;
  while (left && b < e && in_set(b)) ++b;
  while (right && e > b && in_set(e - 1)) --e;
  return s.substr(at[b], at[e] - at[b]);
}

Status replace(const std::string& s, const std::string& from, const std::string& to, int64_t count, std::string* out) {
  out->clear();
  if (from.empty()) {  // Python inserts `to` around every character
    const std::vector<size_t> at = utf8_offsets(s);
    for (size_t k = 0; k + 1 < at.size(); ++k) {
      if (count < 0 || static_cast<int64_t>(k) < count) *out += to;
      out->append(s, at[k], at[k + 1] - at[k]);
      if (out->size() > kJinjaMaxBytes) return jinja_error("a string too long");
    }
    if (count < 0 || static_cast<int64_t>(at.size()) - 1 < count) *out += to;
    return Status::ok();
  }
  size_t i = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t hit = s.find(from, i);
    if (hit == std::string::npos) break;
    out->append(s, i, hit - i);
    *out += to;
    i = hit + from.size();
    if (out->size() > kJinjaMaxBytes) return jinja_error("a string too long");
  }
  out->append(s, i, std::string::npos);
  return Status::ok();
}

Status split(const std::string& s, const JinjaValue* sep, int64_t maxsplit, const JinjaArgs& args, JinjaValue* out) {
  JinjaList parts;
  if (!sep || sep->kind == Kind::none) {  // runs of whitespace, no empty parts
    for (size_t i = 0, n;;) {
      while (i < s.size() && (n = jinja_space_at(s, i)) > 0) i += n;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.push_back(JinjaValue::string(s.substr(i)));
        break;
      }
      size_t k = i;  // a continuation byte is never a space's start, so bytes step safely
      while (k < s.size() && jinja_space_at(s, k) == 0) ++k;
      if (parts.size() >= kJinjaMaxItems) return jinja_error("a split into more than 100000 parts");
      parts.push_back(JinjaValue::string(s.substr(i, k - i)));
      i = k;
    }
  } else {
    if (sep->kind != Kind::string) return jinja_error("split's separator is not a string");
    if (sep->s.empty()) return jinja_error("split with an empty separator");
    WT_TRY(args.charge(search_cost(s.size(), sep->s.size())));
    size_t i = 0;
    for (;;) {
      const size_t hit = maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit ? std::string::npos : s.find(sep->s, i);
      if (hit == std::string::npos) {
        parts.push_back(JinjaValue::string(s.substr(i)));
        break;
      }
      if (parts.size() >= kJinjaMaxItems) return jinja_error("a split into more than 100000 parts");
      parts.push_back(JinjaValue::string(s.substr(i, hit - i)));
      i = hit + sep->s.size();
    }
  }
  *out = JinjaValue::of_list(std::move(parts));
  return Status::ok();
}

Status int_arg(const JinjaValue* v, int64_t fallback, int64_t* out) {
  if (!v || v->kind == Kind::none) {
    *out = fallback;
    return Status::ok();
  }
  if (v->kind != Kind::integer && v->kind != Kind::boolean) return jinja_error("an integer argument expected");
  *out = v->kind == Kind::integer ? v->i : v->b;
  return Status::ok();
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// select/reject/selectattr/rejectattr: keep the items whose test (or truth) is `keep`.
Status select(const JinjaValue& x, const JinjaArgs& args, bool by_attr, bool keep, JinjaValue* out) {
  JinjaList items, kept;
  WT_TRY(items_of(x, &items));
  size_t k = 0;
  std::string attr;
  if (by_attr) {
    if (args.pos.empty() || args.pos[0].kind != Kind::string) return jinja_error("selectattr needs an attribute name");
    attr = args.pos[k++].s;
  }
  std::string test;
  if (k < args.pos.size()) {
    if (args.pos[k].kind != Kind::string) return jinja_error("select's test is not a name");
    test = args.pos[k++].s;
    if (!jinja_known_test(test)) return jinja_error("the test '" + test + "', which Whittle's Jinja lacks");
  }
  const JinjaArgs rest = args.with_positional({args.pos.begin() + static_cast<std::ptrdiff_t>(k), args.pos.end()});
  uint64_t rest_cost = 0;
  for (const JinjaValue& a : rest.pos) rest_cost += a.cost;
  for (const JinjaValue& item : items) {
    const JinjaValue v = by_attr ? attribute(item, attr) : item;
    WT_TRY(args.charge(1 + v.cost + rest_cost));  // a test like `in` walks its argument
    bool pass = jinja_truthy(v);
    if (!test.empty()) WT_TRY(jinja_test(test, v, rest, &pass));
    if (pass == keep) kept.push_back(item);
  }
  *out = JinjaValue::of_list(std::move(kept));
  return Status::ok();
}

// jinja2's sort and unique compare by a key: the item or its attribute, a string in lower
// case unless case_sensitive.
JinjaValue sort_key(const JinjaValue& v, const JinjaValue* attr, bool case_sensitive) {
  JinjaValue k = attr && attr->kind == Kind::string ? attribute(v, attr->s) : v;
  if (k.kind == Kind::string && !case_sensitive) k.s = ascii_case(k.s, false);
  return k;
}

Status sort(const JinjaValue& x, const JinjaArgs& args, JinjaValue* out) {  // sort(reverse, case_sensitive, attribute)
  JinjaList items;
  WT_TRY(items_of(x, &items));
  const JinjaValue* rev = args.get(0, "reverse");
  const JinjaValue* cs = args.get(1, "case_sensitive");
  const JinjaValue* attr = args.get(2, "attribute");
  const bool reverse = rev && jinja_truthy(*rev), case_sensitive = cs && jinja_truthy(*cs);
  WT_TRY(args.charge(20 * x.cost));  // n log n comparisons, each walking what it compares
  std::vector<std::pair<JinjaValue, size_t>> keyed;
  for (size_t k = 0; k < items.size(); ++k) keyed.emplace_back(sort_key(items[k], attr, case_sensitive), k);
  bool ok = true;
  // Python's sorted(reverse=True): stable, equal keys keep their order.
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    bool good = true;
    const bool less = reverse ? jinja_less(b.first, a.first, &good) : jinja_less(a.first, b.first, &good);
    ok = ok && good;
    return less;
  });
  if (!ok) return jinja_error("sort of values that do not compare");
  JinjaList sorted;
  for (const auto& kv : keyed) sorted.push_back(items[kv.second]);
  *out = JinjaValue::of_list(std::move(sorted));
  return Status::ok();
}

}  // namespace

const JinjaValue* JinjaArgs::get(size_t index, const char* name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return index < pos.size() ? &pos[index] : nullptr;
}

Status JinjaArgs::charge(uint64_t n) const {
  if (!steps) return Status::ok();
  *steps += n;
  if (*steps > max_steps) return jinja_error("the template runs too long");
  return Status::ok();
}

JinjaArgs JinjaArgs::with_positional(std::vector<JinjaValue> p) const {
  JinjaArgs a;
  a.pos = std::move(p);
  a.steps = steps, a.max_steps = max_steps;
  return a;
}

Status jinja_error(const std::string& what) { return error(WT_ERR_UNSUPPORTED, "chat template: " + what); }

bool jinja_known_filter(const std::string& name) {
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

bool jinja_known_test(const std::string& name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

Status jinja_filter(const std::string& name, const JinjaValue& x, const JinjaArgs& args, JinjaValue* out) {
  if (name == "safe") {
    *out = x;
  } else if (name == "string") {
    *out = JinjaValue::string(jinja_str(x));
  } else if (name == "length" || name == "count") {
    if (x.kind == Kind::string) *out = JinjaValue::integer(static_cast<int64_t>(utf8_length(x.s, x.s.size())));
    else if (x.kind == Kind::list) *out = JinjaValue::integer(static_cast<int64_t>(x.list->size()));
    else if (x.kind == Kind::dict) *out = JinjaValue::integer(static_cast<int64_t>(x.dict->size()));
    else if (x.kind == Kind::undefined) *out = JinjaValue::integer(0);
    else return jinja_error("length of a value that has none");
  } else if (name == "default" || name == "d") {
    const JinjaValue* fallback = args.get(0, "default_value");
    const JinjaValue* boolean = args.get(1, "boolean");
    const bool use = x.kind == Kind::undefined || (boolean && jinja_truthy(*boolean) && !jinja_truthy(x));
    *out = use ? (fallback ? *fallback : JinjaValue::string("")) : x;
  } else if (name == "trim") {
    // jinja2 trims str(value): a None content (a turn of tool calls) trims to "None".
    std::string shown;
    if (x.kind != Kind::string) shown = jinja_str(x);
    const std::string& text = x.kind == Kind::string ? x.s : shown;
    if (const JinjaValue* chars = args.get(0, "chars"); chars && chars->kind == Kind::string)
      WT_TRY(args.charge(search_cost(text.size(), chars->s.size())));
    *out = JinjaValue::string(strip(text, args.get(0, "chars"), true, true));
  } else if (name == "lower" || name == "upper") {
    *out = JinjaValue::string(ascii_case(jinja_str(x), name == "upper"));
  } else if (name == "capitalize") {
    std::string t = ascii_case(jinja_str(x), false);
    if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
    *out = JinjaValue::string(std::move(t));
  } else if (name == "title") {  // jinja2's: a word starts after a space, '-', '(', '{', '[' or '<'
    std::string t = jinja_str(x);
    bool start = true;
    for (char& c : t) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (std::isspace(u) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<') {
        start = true;
        continue;
      }
      c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
      start = false;
    }
    *out = JinjaValue::string(std::move(t));
  } else if (name == "replace") {
    const JinjaValue* from = args.get(0, "old");
    const JinjaValue* to = args.get(1, "new");
    if (!from || !to || from->kind != Kind::string || to->kind != Kind::string)
      return jinja_error("replace needs two strings");
    int64_t count = -1;
    WT_TRY(int_arg(args.get(2, "count"), -1, &count));
    WT_TRY(args.charge(search_cost(jinja_str(x).size(), from->s.size())));
    std::string s;
    WT_TRY(replace(jinja_str(x), from->s, to->s, count, &s));
    *out = JinjaValue::string(std::move(s));
  } else if (name == "e" || name == "escape") {
    *out = JinjaValue::string(html_escape(jinja_str(x)));
  } else if (name == "tojson") {  // transformers': tojson(x, ensure_ascii, indent, separators, sort_keys)
    JinjaJsonStyle st;
    st.max_bytes = kJinjaMaxBytes;
    const JinjaValue* ascii = args.get(0, "ensure_ascii");
    const JinjaValue* seps = args.get(2, "separators");
    const JinjaValue* sort_keys = args.get(3, "sort_keys");
    int64_t indent = -1;
    WT_TRY(int_arg(args.get(1, "indent"), -1, &indent));
    if (indent > 64) return jinja_error("tojson with an indent over 64");
    const bool indented = args.get(1, "indent") && args.get(1, "indent")->kind != Kind::none;
    st.indent = indented ? static_cast<int>(std::max<int64_t>(indent, 0)) : -1;  // Python: a negative indent is 0
    if (indented) st.item_sep = ",";
    if (seps && seps->kind != Kind::none) {
      if (seps->kind != Kind::list || seps->list->size() != 2 || (*seps->list)[0].kind != Kind::string ||
          (*seps->list)[1].kind != Kind::string)
        return jinja_error("tojson's separators are not two strings");
      st.item_sep = (*seps->list)[0].s, st.key_sep = (*seps->list)[1].s;
    }
    st.sort_keys = sort_keys && jinja_truthy(*sort_keys);
    st.ensure_ascii = ascii && jinja_truthy(*ascii);
    std::string s;
    if (!jinja_json(x, st, &s)) return jinja_error("tojson of a value JSON cannot hold, or past 8 MiB");
    *out = JinjaValue::string(std::move(s));
  } else if (name == "int" || name == "float") {
    const JinjaValue* fallback = args.get(0, "default");
    double v = 0;
    bool ok = true;
    if (x.is_numeric()) {
      v = jinja_number(x);
    } else if (x.kind == Kind::string) {
      const std::string t = jinja_trim(x.s);
      char* end = nullptr;
      v = std::strtod(t.c_str(), &end);
      ok = !t.empty() && end == t.c_str() + t.size();
    } else {
      ok = false;
    }
    if (name == "int") {
      if (x.kind == Kind::integer) *out = x;
      else if (ok && v > -9.2e18 && v < 9.2e18) *out = JinjaValue::integer(static_cast<int64_t>(v));
      else *out = fallback ? *fallback : JinjaValue::integer(0);
    } else {
      *out = ok ? JinjaValue::number(v) : fallback ? *fallback : JinjaValue::number(0);
    }
  } else if (name == "abs") {
    if (x.kind == Kind::integer) *out = JinjaValue::integer(x.i < 0 ? -x.i : x.i);
    else if (x.is_numeric()) *out = JinjaValue::number(std::abs(jinja_number(x)));
    else return jinja_error("abs of a non-number");
  } else if (name == "first" || name == "last") {
    JinjaList items;
    WT_TRY(items_of(x, &items));
    *out = items.empty() ? JinjaValue() : name == "first" ? items.front() : items.back();
  } else if (name == "list") {
    JinjaList items;
    WT_TRY(items_of(x, &items));
    *out = JinjaValue::of_list(std::move(items));
  } else if (name == "reverse") {
    if (x.kind == Kind::string) {
      const std::vector<size_t> at = utf8_offsets(x.s);
      std::string s;
      for (size_t k = at.size() - 1; k > 0; --k) s.append(x.s, at[k - 1], at[k] - at[k - 1]);
      *out = JinjaValue::string(std::move(s));
    } else {
      JinjaList items;
      WT_TRY(items_of(x, &items));
      std::reverse(items.begin(), items.end());
      *out = JinjaValue::of_list(std::move(items));
    }
  } else if (name == "items") {
    JinjaList pairs;
    if (x.kind == Kind::dict) {
      for (const auto& [k, v] : *x.dict) pairs.push_back(JinjaValue::of_list({JinjaValue::string(k), v}, true));
    } else if (x.kind != Kind::undefined) {
      return jinja_error("items of a non-mapping");
    }
    *out = JinjaValue::of_list(std::move(pairs));
  } else if (name == "join") {
    JinjaList items;
    WT_TRY(items_of(x, &items));
    const JinjaValue* sep = args.get(0, "d");
    const JinjaValue* attr = args.get(1, "attribute");
    std::string s;
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0 && sep) s += jinja_str(*sep);
      s += jinja_str(attr && attr->kind == Kind::string ? attribute(items[k], attr->s) : items[k]);
      if (s.size() > kJinjaMaxBytes) return jinja_error("a string too long");
    }
    *out = JinjaValue::string(std::move(s));
  } else if (name == "map") {
    JinjaList items, mapped;
    WT_TRY(items_of(x, &items));
    const JinjaValue* attr = args.get(99, "attribute");
    if (attr) {
      const JinjaValue* fallback = args.get(99, "default");
      for (const JinjaValue& item : items) {
        JinjaValue v = attribute(item, jinja_str(*attr));
        if (v.kind == Kind::undefined && fallback) v = *fallback;
        WT_TRY(args.charge(v.cost));  // a copy of it, before it is made
        mapped.push_back(std::move(v));
      }
    } else {
      if (args.pos.empty() || args.pos[0].kind != Kind::string) return jinja_error("map needs a filter or an attribute");
      const std::string filter = args.pos[0].s;
      if (!jinja_known_filter(filter) || filter == "map") return jinja_error("map with the filter '" + filter + "'");
      const JinjaArgs rest = args.with_positional({args.pos.begin() + 1, args.pos.end()});
      for (const JinjaValue& item : items) {
        WT_TRY(args.charge(item.cost));
        mapped.emplace_back();
        WT_TRY(jinja_filter(filter, item, rest, &mapped.back()));
      }
    }
    *out = JinjaValue::of_list(std::move(mapped));
  } else if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    return select(x, args, name.size() > 6, name[0] == 's', out);
  } else if (name == "unique") {  // unique(case_sensitive, attribute): the first of each key
    JinjaList items, kept;
    std::vector<JinjaValue> keys;
    WT_TRY(items_of(x, &items));
    const JinjaValue* cs = args.get(0, "case_sensitive");
    const JinjaValue* attr = args.get(1, "attribute");
    for (const JinjaValue& item : items) {
      WT_TRY(args.charge(1 + keys.size() * item.cost));  // compared with every key kept so far
      JinjaValue key = sort_key(item, attr, cs && jinja_truthy(*cs));
      if (std::any_of(keys.begin(), keys.end(), [&](const JinjaValue& k) { return jinja_equal(k, key); })) continue;
      keys.push_back(std::move(key));
      kept.push_back(item);
    }
    *out = JinjaValue::of_list(std::move(kept));
  } else if (name == "sort") {
    return sort(x, args, out);
  } else {
    return jinja_error("the filter '" + name + "'");
  }
  return Status::ok();
}

Status jinja_test(const std::string& name, const JinjaValue& x, const JinjaArgs& args, bool* out) {
  const JinjaValue* other = args.get(0, "value");
  const auto need = [&]() -> Status {
    if (!other) return jinja_error("the test '" + name + "' needs an argument");
    return Status::ok();
  };
  if (name == "defined") *out = x.kind != Kind::undefined;
  else if (name == "undefined") *out = x.kind == Kind::undefined;
  else if (name == "none") *out = x.kind == Kind::none;
  else if (name == "boolean") *out = x.kind == Kind::boolean;
  else if (name == "true") *out = x.kind == Kind::boolean && x.b;
  else if (name == "false") *out = x.kind == Kind::boolean && !x.b;
  else if (name == "integer") *out = x.kind == Kind::integer;
  else if (name == "float") *out = x.kind == Kind::number;
  else if (name == "number") *out = x.is_numeric();
  else if (name == "string") *out = x.kind == Kind::string;
  else if (name == "mapping") *out = x.kind == Kind::dict;
  else if (name == "iterable" || name == "sequence")
    *out = x.kind == Kind::undefined || x.kind == Kind::list || x.kind == Kind::dict || x.kind == Kind::string;
  else if (name == "callable") *out = x.kind == Kind::function || x.kind == Kind::macro;
  else if (name == "lower" || name == "upper") {
    const std::string s = jinja_str(x);
    bool cased = false, all = true;
    for (const char c : s) {
      if (!std::isalpha(static_cast<unsigned char>(c))) continue;
      cased = true;
      all = all && (name == "lower" ? std::islower(static_cast<unsigned char>(c)) : std::isupper(static_cast<unsigned char>(c)));
    }
    *out = cased && all;
  } else if (name == "even" || name == "odd" || name == "divisibleby") {
    if (x.kind != Kind::integer && x.kind != Kind::boolean) return jinja_error("the test '" + name + "' of a non-integer");
    const int64_t v = x.kind == Kind::integer ? x.i : x.b;
    int64_t d = 2;
    if (name == "divisibleby") {
      WT_TRY(need());
      WT_TRY(int_arg(other, 1, &d));
      if (d == 0) return jinja_error("divisibleby 0");
    }
    const int64_t r = d == -1 ? 0 : v % d;
    *out = name == "odd" ? r != 0 : r == 0;
  } else {
    WT_TRY(need());
    if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") {
      *out = jinja_equal(x, *other);
    } else if (name == "ne" || name == "!=") {
      *out = !jinja_equal(x, *other);
    } else if (name == "in") {
      if (other->kind == Kind::string && x.kind == Kind::string) {
        WT_TRY(args.charge(search_cost(other->s.size(), x.s.size())));
        *out = other->s.find(x.s) != std::string::npos;
      } else if (other->kind == Kind::list) {
        *out = std::any_of(other->list->begin(), other->list->end(), [&](const JinjaValue& v) { return jinja_equal(v, x); });
      } else if (other->kind == Kind::dict) {
        *out = x.kind == Kind::string && other->find(x.s) != nullptr;
      } else if (other->kind == Kind::undefined) {
        *out = false;  // Python's `in` falls back to iterating, and Undefined iterates empty
      } else {
        return jinja_error("'in' of a value that holds none");
      }
    } else {
      bool ok = true;
      const bool lt = jinja_less(x, *other, &ok), gt = jinja_less(*other, x, &ok);
      if (!ok) return jinja_error("a comparison of values that do not compare");
      if (name == "lt" || name == "<") *out = lt;
      else if (name == "le" || name == "<=") *out = !gt;
      else if (name == "gt" || name == ">") *out = gt;
      else *out = !lt;
    }
  }
  return Status::ok();
}

bool jinja_has_method(const JinjaValue& self, const std::string& name) {
  static const char* const kString[] = {"strip",  "lstrip",     "rstrip", "split",      "startswith", "endswith",
                                        "upper",  "lower",      "title",  "capitalize", "replace",    "find",
                                        "count",  "join"};
  static const char* const kDict[] = {"items", "keys", "values", "get"};
  if (self.kind == Kind::string) return std::find(std::begin(kString), std::end(kString), name) != std::end(kString);
  if (self.kind == Kind::dict) return std::find(std::begin(kDict), std::end(kDict), name) != std::end(kDict);
  return false;
}

Status jinja_method(const JinjaValue& self, const std::string& name, const JinjaArgs& args, JinjaValue* out) {
  if (self.kind == Kind::dict) {
    if (name == "get") {
      const JinjaValue* key = args.get(0, "key");
      const JinjaValue* fallback = args.get(1, "default");
      const JinjaValue* v = key && key->kind == Kind::string ? self.find(key->s) : nullptr;
      *out = v ? *v : fallback ? *fallback : JinjaValue::none();
      return Status::ok();
    }
    JinjaList items;
    for (const auto& [k, v] : *self.dict) {
      if (name == "keys") items.push_back(JinjaValue::string(k));
      else if (name == "values") items.push_back(v);
      else items.push_back(JinjaValue::of_list({JinjaValue::string(k), v}, true));
    }
    *out = JinjaValue::of_list(std::move(items));
    return Status::ok();
  }
  const std::string& s = self.s;
  const JinjaValue* a0 = args.get(0, "");
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    if (a0 && a0->kind != Kind::string && a0->kind != Kind::none) return jinja_error(name + "'s argument is not a string");
    if (a0 && a0->kind == Kind::string) WT_TRY(args.charge(search_cost(s.size(), a0->s.size())));
    *out = JinjaValue::string(strip(s, a0, name[0] != 'r', name[0] != 'l'));
  } else if (name == "split") {
    int64_t maxsplit = -1;
    WT_TRY(int_arg(args.get(1, "maxsplit"), -1, &maxsplit));
    return split(s, args.get(0, "sep"), maxsplit, args, out);
  } else if (name == "startswith" || name == "endswith") {
    if (!a0) return jinja_error(name + " needs an argument");
    JinjaList options;
    if (a0->kind == Kind::list) options = *a0->list;
    else options.push_back(*a0);
    bool hit = false;
    for (const JinjaValue& o : options) {
      if (o.kind != Kind::string) return jinja_error(name + "'s argument is not a string");
      hit = hit || (o.s.size() <= s.size() &&
                    s.compare(name[0] == 's' ? 0 : s.size() - o.s.size(), o.s.size(), o.s) == 0);
    }
    *out = JinjaValue::boolean(hit);
  } else if (name == "title") {  // Python's str.title: a letter after a non-letter starts a word
    std::string t = s;
    bool prev_letter = false;
    for (char& c : t) {
      const unsigned char u = static_cast<unsigned char>(c);
      const bool letter = std::isalpha(u) != 0;
      if (letter) c = static_cast<char>(prev_letter ? std::tolower(u) : std::toupper(u));
      prev_letter = letter;
    }
    *out = JinjaValue::string(std::move(t));
  } else if (name == "upper" || name == "lower" || name == "capitalize") {
    return jinja_filter(name, self, JinjaArgs{}, out);
  } else if (name == "replace") {
    return jinja_filter("replace", self, args, out);
  } else if (name == "find" || name == "count") {
    if (!a0 || a0->kind != Kind::string) return jinja_error(name + " needs a string");
    WT_TRY(args.charge(search_cost(s.size(), a0->s.size())));
    if (name == "find") {
      const size_t hit = s.find(a0->s);
      *out = JinjaValue::integer(hit == std::string::npos ? -1 : static_cast<int64_t>(utf8_length(s, hit)));
    } else {
      int64_t n = 0;
      if (a0->s.empty()) n = static_cast<int64_t>(utf8_length(s, s.size()) + 1);
      else
        for (size_t at = s.find(a0->s); at != std::string::npos; at = s.find(a0->s, at + a0->s.size())) ++n;
      *out = JinjaValue::integer(n);
    }
  } else if (name == "join") {
    if (!a0) return jinja_error("join needs an argument");
    JinjaList items;
    WT_TRY(items_of(*a0, &items));
    std::string r;
    for (size_t k = 0; k < items.size(); ++k) {
      if (items[k].kind != Kind::string) return jinja_error("join of a non-string");
      if (k > 0) r += s;
      r += items[k].s;
      if (r.size() > kJinjaMaxBytes) return jinja_error("a string too long");
    }
    *out = JinjaValue::string(std::move(r));
  } else {
    return jinja_error("the method '" + name + "'");
  }
  return Status::ok();
}

}  // namespace wt
