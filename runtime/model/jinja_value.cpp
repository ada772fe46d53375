#include "jinja_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja_text.h"  // json_string

namespace wt {

namespace {

using Kind = JinjaValue::Kind;

// Python's repr of a float: the fewest digits that read back as the same double, in fixed
// notation for exponents -4 to 15, else as d.ddde+XX.
std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[40];
  int prec = 1;
  for (; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
  const std::string e(buf);
  const size_t epos = e.find('e');
  const bool neg = e[0] == '-';
  std::string digits;
  for (size_t k = neg ? 1 : 0; k < epos; ++k)
    if (e[k] != '.') digits += e[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exp = std::atoi(e.c_str() + epos + 1);
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    const size_t point = exp < 0 ? 0 : static_cast<size_t>(exp) + 1;  // digits before the point
    if (exp < 0) {
      out.append("0.").append(static_cast<size_t>(-exp - 1), '0').append(digits);
    } else if (point >= digits.size()) {
      out.append(digits).append(point - digits.size(), '0').append(".0");
    } else {
      out.append(digits, 0, point).append(1, '.').append(digits, point, std::string::npos);
    }
    return out;
  }
  out.append(digits, 0, 1);
  if (digits.size() > 1) out.append(1, '.').append(digits, 1, std::string::npos);
  char ex[16];
  std::snprintf(ex, sizeof ex, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + ex;
}

// Python's repr of a str: single quotes unless it holds one and no double quote.
std::string string_repr(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ch == q || ch == '\\') {
      out += '\\', out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + q;
}

void json_indent(int indent, int depth, std::string* out) {
  *out += '\n';
  out->append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

// json_string with ensure_ascii: every character past ASCII as \uXXXX, past the BMP as a
// surrogate pair, as Python writes them; a byte that starts no character as U+FFFD's escape
// (Python's strings hold no such byte).
std::string ascii_json_string(const std::string& s) {
  const std::string quoted = json_string(s);
  std::string out;
  const std::vector<size_t> at = utf8_offsets(quoted);
  for (size_t k = 0; k + 1 < at.size(); ++k) {
    const size_t n = at[k + 1] - at[k];
    const unsigned char c = static_cast<unsigned char>(quoted[at[k]]);
    if (c < 0x80) {
      out += quoted[at[k]];
      continue;
    }
    uint32_t cp = 0xFFFD;
    if (n > 1) {
      cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
      for (size_t m = 1; m < n; ++m) cp = (cp << 6) | (static_cast<unsigned char>(quoted[at[k] + m]) & 0x3F);
    }
    char buf[16];
    if (cp >= 0x10000) {
      cp -= 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    }
    out += buf;
  }
  return out;
}

bool json_into(const JinjaValue& v, const JinjaJsonStyle& st, int depth, std::string* out) {
  if (depth > 64 || out->size() > st.max_bytes) return false;  // values nest only as deep as the renderer lets them
  const auto str = [&](const std::string& s) { *out += st.ensure_ascii ? ascii_json_string(s) : json_string(s); };
  switch (v.kind) {
    case Kind::none: *out += "null"; return true;
    case Kind::boolean: *out += v.b ? "true" : "false"; return true;
    case Kind::integer: *out += std::to_string(v.i); return true;
    case Kind::number:
      if (!std::isfinite(v.f)) return false;
      *out += float_repr(v.f);
      return true;
    case Kind::string: str(v.s); return out->size() <= st.max_bytes;
    case Kind::list:
    case Kind::dict: {
      const bool is_list = v.kind == Kind::list;
      const size_t n = is_list ? v.list->size() : v.dict->size();
      std::vector<size_t> order(n);
      for (size_t k = 0; k < n; ++k) order[k] = k;
      if (!is_list && st.sort_keys)
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return (*v.dict)[a].first < (*v.dict)[b].first; });
      *out += is_list ? '[' : '{';
      for (size_t k = 0; k < n; ++k) {
        if (k > 0) *out += st.item_sep;
        if (st.indent >= 0) json_indent(st.indent, depth + 1, out);
        if (!is_list) {
          str((*v.dict)[order[k]].first);
          *out += st.key_sep;
        }
        if (!json_into(is_list ? (*v.list)[k] : (*v.dict)[order[k]].second, st, depth + 1, out)) return false;
      }
      if (n > 0 && st.indent >= 0) json_indent(st.indent, depth, out);
      *out += is_list ? ']' : '}';
      return out->size() <= st.max_bytes;
    }
    default: return false;
  }
}

}  // namespace

const JinjaValue* JinjaValue::find(const std::string& key) const {
  if ((kind != Kind::dict && kind != Kind::ns) || !dict) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

bool jinja_truthy(const JinjaValue& v) {
  switch (v.kind) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return v.b;
    case Kind::integer: return v.i != 0;
    case Kind::number: return v.f != 0;
    case Kind::string: return !v.s.empty();
    case Kind::list: return !v.list->empty();
    case Kind::dict: return !v.dict->empty();
    default: return true;
  }
}

std::string jinja_str(const JinjaValue& v) {
  switch (v.kind) {
    case Kind::undefined: return "";
    case Kind::string: return v.s;
    default: return jinja_repr(v);
  }
}

std::string jinja_repr(const JinjaValue& v) {
  switch (v.kind) {
    case Kind::undefined: return "";
    case Kind::none: return "None";
    case Kind::boolean: return v.b ? "True" : "False";
    case Kind::integer: return std::to_string(v.i);
    case Kind::number: return float_repr(v.f);
    case Kind::string: return string_repr(v.s);
    case Kind::list: {
      std::string out = v.tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + jinja_repr((*v.list)[k]);
      if (v.tuple && v.list->size() == 1) out += ",";
      return out + (v.tuple ? ")" : "]");
    }
    case Kind::dict: {
      std::string out = "{";
      for (size_t k = 0; k < v.dict->size(); ++k)
        out += (k ? ", " : "") + string_repr((*v.dict)[k].first) + ": " + jinja_repr((*v.dict)[k].second);
      return out + "}";
    }
    case Kind::ns: return "<Namespace>";
    default: return "<function " + v.s + ">";
  }
}

double jinja_number(const JinjaValue& v) {
  if (v.kind == Kind::boolean) return v.b ? 1 : 0;
  if (v.kind == Kind::integer) return static_cast<double>(v.i);
  return v.f;
}

bool jinja_equal(const JinjaValue& a, const JinjaValue& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.kind != Kind::number && b.kind != Kind::number)
      return (a.kind == Kind::integer ? a.i : a.b) == (b.kind == Kind::integer ? b.i : b.b);
    return jinja_number(a) == jinja_number(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::undefined:
    case Kind::none: return true;
    case Kind::string: return a.s == b.s;
    case Kind::list:
      if (a.tuple != b.tuple || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!jinja_equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Kind::dict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [key, value] : *a.dict) {
        const JinjaValue* other = b.find(key);
        if (!other || !jinja_equal(value, *other)) return false;
      }
      return true;
    case Kind::ns: return a.dict == b.dict;
    case Kind::function: return a.s == b.s;
    default: return a.macro == b.macro;
  }
}

bool jinja_less(const JinjaValue& a, const JinjaValue& b, bool* ok) {
  *ok = true;
  if (a.is_numeric() && b.is_numeric()) {
    if (a.kind == Kind::integer && b.kind == Kind::integer) return a.i < b.i;
    return jinja_number(a) < jinja_number(b);
  }
  if (a.kind == Kind::string && b.kind == Kind::string) return a.s < b.s;  // UTF-8 bytes sort as code points
  if (a.kind == Kind::list && b.kind == Kind::list) {
    for (size_t k = 0; k < a.list->size() && k < b.list->size(); ++k) {
      if (jinja_equal((*a.list)[k], (*b.list)[k])) continue;
      return jinja_less((*a.list)[k], (*b.list)[k], ok);
    }
    return a.list->size() < b.list->size();
  }
  *ok = false;
  return false;
}

bool jinja_json(const JinjaValue& v, const JinjaJsonStyle& style, std::string* out) {
  out->clear();
  return json_into(v, style, 0, out);
}

namespace {

// The length of the character that starts at s[i] (1 for a byte that starts none).
size_t char_length(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 1;
  if (i + n > s.size()) n = 1;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) n = 1;
  return n;
}

}  // namespace

std::vector<size_t> utf8_offsets(const std::string& s) {
  std::vector<size_t> out;
  out.reserve(utf8_length(s, s.size()) + 1);
  for (size_t i = 0; i < s.size(); i += char_length(s, i)) out.push_back(i);
  out.push_back(s.size());
  return out;
}

size_t utf8_length(const std::string& s, size_t bytes) {
  size_t n = 0;
  for (size_t i = 0; i < bytes && i < s.size(); i += char_length(s, i)) ++n;
  return n;
}

}  // namespace wt
