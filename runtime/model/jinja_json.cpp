#include "jinja_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "jinja_builtins.h"  // the limits of a template's values
#include "utf8_stream.h"

namespace wt {

namespace {

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : t_(text) {}

  Status read(JinjaValue* out) {
    if (t_.size() > kJinjaMaxBytes) return fail("more than 8 MiB of JSON");
    space();
    WT_TRY(value(0, out));
    space();
    if (i_ < t_.size()) return fail("text after the JSON value");
    return Status::ok();
  }
  // One value from byte *pos (after whitespace), leaving what follows it.
  Status read_at(size_t* pos, JinjaValue* out) {
    if (t_.size() > kJinjaMaxBytes) return fail("more than 8 MiB of JSON");
    i_ = std::min(*pos, t_.size());
    space();
    WT_TRY(value(0, out));
    *pos = i_;
    return Status::ok();
  }

 private:
  Status fail(const std::string& what) const { return fail_at(what, i_); }
  static Status fail_at(const std::string& what, size_t at) {
    return error(WT_ERR_INVALID_ARGUMENT, "JSON: " + what + " at byte " + std::to_string(at));
  }
  // The cost JinjaValue gives what is read (a unit a value and member, one per 16 bytes of a
  // string or name), counted as it is read: the whole value's cost, checked before the
  // values are made, not after (a million small values would be built first).
  Status charge(uint64_t units) {
    cost_ += units;
    if (cost_ > kJinjaMaxCost) return fail("more than a template's value may hold (about 16 MiB of strings)");
    return Status::ok();
  }
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool literal(std::string_view word) {
    if (t_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  Status value(uint32_t depth, JinjaValue* out) {
    if (i_ >= t_.size()) return fail("a value expected, the text ends");
    WT_TRY(charge(1));
    const char c = t_[i_];
    if (c == '{' || c == '[') {
      // Checked before reading deeper, so the recursion is as bounded as the nesting.
      if (depth >= kJinjaMaxNesting)
        return fail("arrays or objects nested more than " + std::to_string(kJinjaMaxNesting) + " deep");
      return c == '{' ? object(depth, out) : array(depth, out);
    }
    if (c == '"') {
      std::string s;
      WT_TRY(string(&s));
      WT_TRY(charge(s.size() / JinjaValue::kStringCostBytes));
      *out = JinjaValue::string(std::move(s));
      return Status::ok();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    if (literal("null")) *out = JinjaValue::none();
    else if (literal("true")) *out = JinjaValue::boolean(true);
    else if (literal("false")) *out = JinjaValue::boolean(false);
    else return fail("a value expected");
    return Status::ok();
  }

  Status array(uint32_t depth, JinjaValue* out) {
    ++i_;  // [
    JinjaList items;
    space();
    if (i_ < t_.size() && t_[i_] == ']') {
      ++i_;
      *out = JinjaValue::of_list(std::move(items));
      return Status::ok();
    }
    for (;;) {
      if (items.size() >= kJinjaMaxItems) return fail("an array of more than " + std::to_string(kJinjaMaxItems) + " items");
      space();
      JinjaValue v;
      WT_TRY(value(depth + 1, &v));
      items.push_back(std::move(v));
      space();
      if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
      if (i_ < t_.size() && t_[i_] == ']') { ++i_; break; }
      return fail("',' or ']' expected in an array");
    }
    *out = JinjaValue::of_list(std::move(items));
    return Status::ok();
  }

  Status object(uint32_t depth, JinjaValue* out) {
    const size_t start = i_++;  // {
    JinjaDict items;
    space();
    if (i_ < t_.size() && t_[i_] == '}') {
      ++i_;
      *out = JinjaValue::of_dict(std::move(items));
      return Status::ok();
    }
    for (;;) {
      if (items.size() >= kJinjaMaxItems)
        return fail("an object of more than " + std::to_string(kJinjaMaxItems) + " members");
      space();
      if (i_ >= t_.size() || t_[i_] != '"') return fail("a member name (a string) expected in an object");
      std::string name;
      WT_TRY(string(&name));
      WT_TRY(charge(1 + name.size() / JinjaValue::kStringCostBytes));
      space();
      if (i_ >= t_.size() || t_[i_] != ':') return fail("':' expected after a member name");
      ++i_;
      space();
      JinjaValue v;
      WT_TRY(value(depth + 1, &v));
      items.emplace_back(std::move(name), std::move(v));
      space();
      if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
      if (i_ < t_.size() && t_[i_] == '}') { ++i_; break; }
      return fail("',' or '}' expected in an object");
    }
    std::vector<const std::string*> names;
    names.reserve(items.size());
    for (const auto& item : items) names.push_back(&item.first);
    std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    for (size_t k = 1; k < names.size(); ++k)
      if (*names[k] == *names[k - 1]) return fail_at("the member " + shown(*names[k]) + " twice in the object", start);
    *out = JinjaValue::of_dict(std::move(items));
    return Status::ok();
  }

  Status hex4(uint32_t* out) {
    if (t_.size() - i_ < 4) return fail("\\u without four hex digits");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = t_[i_ + k];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return fail("\\u without four hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    i_ += 4;
    *out = v;
    return Status::ok();
  }

  Status string(std::string* out) {
    ++i_;  // "
    for (;;) {
      if (i_ >= t_.size()) return fail("a string not closed");
      const unsigned char c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') { ++i_; break; }
      if (c < 0x20) return fail("a control character inside a string (write it escaped)");
      if (c == '\\') {
        WT_TRY(escape(out));
      } else if (c < 0x80) {
        out->push_back(static_cast<char>(c));
        ++i_;
      } else {
        const Utf8Char u = utf8_decode(t_, i_);
        if (u.result != Utf8Result::ok) return fail("text that is not UTF-8");
        out->append(t_.substr(i_, u.n_bytes));
        i_ += u.n_bytes;
      }
      if (out->size() > kJinjaMaxBytes) return fail("a string of more than 8 MiB");
    }
    return Status::ok();
  }

  Status escape(std::string* out) {
    ++i_;  // backslash
    if (i_ >= t_.size()) return fail("a string not closed");
    const char c = t_[i_++];
    switch (c) {
      case '"': out->push_back('"'); return Status::ok();
      case '\\': out->push_back('\\'); return Status::ok();
      case '/': out->push_back('/'); return Status::ok();
      case 'b': out->push_back('\b'); return Status::ok();
      case 'f': out->push_back('\f'); return Status::ok();
      case 'n': out->push_back('\n'); return Status::ok();
      case 'r': out->push_back('\r'); return Status::ok();
      case 't': out->push_back('\t'); return Status::ok();
      case 'u': break;
      default: return fail_at("an unknown escape \\" + shown(std::string(1, c)), i_ - 2);
    }
    const size_t escape_at = i_ - 2;  // its backslash, which errors name
    uint32_t cp = 0;
    WT_TRY(hex4(&cp));
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail_at("a lone low surrogate escape", escape_at);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // A high surrogate takes the low one escaped right after it; alone, UTF-8 cannot hold it.
      uint32_t low = 0;
      if (t_.substr(i_, 2) != "\\u") return fail_at("a high surrogate escape without its low one", escape_at);
      i_ += 2;
      WT_TRY(hex4(&low));
      if (low < 0xDC00 || low > 0xDFFF) return fail_at("a high surrogate escape without its low one", escape_at);
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    utf8_append(cp, out);
    return Status::ok();
  }

  Status number(JinjaValue* out) {
    const size_t start = i_;
    auto digits = [&] {
      const size_t from = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      return i_ > from;
    };
    if (t_[i_] == '-') ++i_;
    if (i_ < t_.size() && t_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return fail("a digit expected in a number");
    }
    bool integral = true;
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_, integral = false;
      if (!digits()) return fail("a digit expected after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_, integral = false;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits()) return fail("a digit expected in an exponent");
    }
    const char* first = t_.data() + start;
    const char* last = t_.data() + i_;
    if (integral) {
      int64_t v = 0;
      const auto r = std::from_chars(first, last, v);
      if (r.ec != std::errc() || r.ptr != last) return fail_at("an integer outside 64 bits", start);
      *out = JinjaValue::integer(v);
    } else {
      double v = 0;
      const auto r = std::from_chars(first, last, v);  // locale-free, unlike strtod
      if (r.ec == std::errc::result_out_of_range && below_double(std::string_view(first, i_ - start))) {
        v = *first == '-' ? -0.0 : 0.0;  // as json.loads reads 1e-400
      } else if (r.ec != std::errc() || r.ptr != last || !std::isfinite(v)) {
        return fail_at("a number outside double's range", start);
      }
      *out = JinjaValue::number(v);
    }
    return Status::ok();
  }

  // Whether a JSON number's magnitude is below 1 (its first significant digit after the
  // point): an out-of-range one underflowed, not overflowed.
  static bool below_double(std::string_view num) {
    const size_t e = num.find_first_of("eE");
    const std::string_view mantissa = num.substr(0, e);
    int64_t exponent = 0;
    if (e != std::string_view::npos) {
      std::string_view ex = num.substr(e + 1);
      if (!ex.empty() && ex[0] == '+') ex.remove_prefix(1);
      if (std::from_chars(ex.data(), ex.data() + ex.size(), exponent).ec != std::errc())
        return !ex.empty() && ex[0] == '-';  // an exponent past int64: its sign says which
      // Past a few thousand either way it only says which; clamped, lead + exponent cannot overflow.
      exponent = std::clamp<int64_t>(exponent, -(int64_t{1} << 40), int64_t{1} << 40);
    }
    // The position of the first nonzero digit relative to the point: 0 for 1.x, -1 for 0.1.
    const size_t point = mantissa.find('.');
    const size_t int_end = point == std::string_view::npos ? mantissa.size() : point;
    int64_t lead = 0;
    bool found = false;
    for (size_t k = 0; k < mantissa.size() && !found; ++k) {
      const char c = mantissa[k];
      if (c < '1' || c > '9') continue;
      found = true;
      lead = k < int_end ? static_cast<int64_t>(int_end - k - 1) : -static_cast<int64_t>(k - int_end);
    }
    return !found || lead + exponent < 0;
  }

  // Text of the caller's shown in a message: at most 64 bytes, bytes outside printable ASCII
  // as \xNN, quoted.
  static std::string shown(const std::string& s) {
    static const char hex[] = "0123456789abcdef";
    std::string r = "\"";
    for (size_t k = 0; k < s.size() && k < 64; ++k) {
      const unsigned char c = static_cast<unsigned char>(s[k]);
      if (c >= 0x20 && c < 0x7F) {
        r += static_cast<char>(c);
      } else {
        r += "\\x";
        r += hex[c >> 4];
        r += hex[c & 15];
      }
    }
    return r + (s.size() > 64 ? "...\"" : "\"");
  }

  std::string_view t_;
  size_t i_ = 0;
  uint64_t cost_ = 0;
};

}  // namespace

Status jinja_from_json(std::string_view text, JinjaValue* out) {
  JinjaValue v;
  WT_TRY(JsonReader(text).read(&v));
  *out = std::move(v);
  return Status::ok();
}

Status jinja_from_json_at(std::string_view text, size_t* pos, JinjaValue* out) {
  JinjaValue v;
  WT_TRY(JsonReader(text).read_at(pos, &v));
  *out = std::move(v);
  return Status::ok();
}

}  // namespace wt
