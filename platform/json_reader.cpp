// The planner's JSON reader (json_reader.h): a recursive-descent parser over a string.
#include "json_reader.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

namespace wt {

namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  Status document(JsonValue* out) {
    WT_TRY(value(out, 0));
    skip_space();
    if (i_ != s_.size()) return fail("unexpected text after the value");
    return Status::ok();
  }

 private:
  Status fail(const std::string& msg) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return error(WT_ERR_FORMAT, what_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool literal(const char* word) {
    size_t n = 0;
    while (word[n]) ++n;
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }

  Status value(JsonValue* out, int depth) {
    if (depth > 64) return fail("nested too deeply");
    skip_space();
    if (i_ >= s_.size()) return fail("unexpected end of input");
    const char c = s_[i_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out->kind = JsonValue::Kind::string;
      return string(&out->string);
    }
    if (literal("true") || literal("false")) {
      out->kind = JsonValue::Kind::boolean;
      out->boolean = c == 't';
      return Status::ok();
    }
    if (literal("null")) {
      out->kind = JsonValue::Kind::null;
      return Status::ok();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    return fail(std::string("unexpected character '") + c + "'");
  }

  Status number(JsonValue* out) {
    const size_t start = i_;
    while (i_ < s_.size() && (std::string_view("+-.eE0123456789").find(s_[i_]) != std::string_view::npos)) ++i_;
    const std::string text = s_.substr(start, i_ - start);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
      i_ = start;
      return fail("malformed number '" + text + "'");
    }
    out->kind = JsonValue::Kind::number;
    out->number = v;
    return Status::ok();
  }

  Status string(std::string* out) {
    ++i_;  // the opening quote
    out->clear();
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return Status::ok();
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case 'r': out->push_back('\r'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'u': {
          if (i_ + 4 > s_.size()) return fail("short \\u escape");
          const unsigned cp = static_cast<unsigned>(std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16));
          i_ += 4;
          // Basic plane only (the data files are ASCII); UTF-8 encode.
          if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default: return fail(std::string("unknown escape '\\") + e + "'");
      }
    }
    return fail("unterminated string");
  }

  Status array(JsonValue* out, int depth) {
    ++i_;
    out->kind = JsonValue::Kind::array;
    skip_space();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return Status::ok();
    }
    for (;;) {
      out->array.emplace_back();
      WT_TRY(value(&out->array.back(), depth + 1));
      skip_space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return Status::ok();
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  Status object(JsonValue* out, int depth) {
    ++i_;
    out->kind = JsonValue::Kind::object;
    skip_space();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return Status::ok();
    }
    for (;;) {
      skip_space();
      if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a quoted member name");
      std::string key;
      WT_TRY(string(&key));
      skip_space();
      if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':' after \"" + key + "\"");
      ++i_;
      out->object.push_back(JsonMember{std::move(key), JsonValue{}});
      WT_TRY(value(&out->object.back().value, depth + 1));
      skip_space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return Status::ok();
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  const std::string& s_;
  const std::string& what_;
  size_t i_ = 0;
};

}  // namespace

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

Status parse_json(const std::string& text, const std::string& what, JsonValue* out) {
  *out = JsonValue{};
  return Parser(text, what).document(out);
}

Status read_text_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(WT_ERR_IO, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return error(WT_ERR_IO, "cannot read '" + path + "'");
  *out = ss.str();
  return Status::ok();
}

}  // namespace wt
