// The reader for what json.cpp writes (and any other valid JSON): --resume reads the
// records of an earlier, interrupted run back. Recursive descent with a depth limit, so a
// hostile file cannot exhaust the stack.
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "json.h"

namespace bench {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  bool document(Json* out, std::string* error) {
    if (!value(out, 0)) return fail_to(error);
    ws();
    if (i_ != s_.size()) return bad("trailing characters"), fail_to(error);
    return true;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool bad(const char* what) {
    if (what_.empty()) what_ = std::string(what) + " at byte " + std::to_string(i_);
    return false;
  }
  bool fail_to(std::string* error) {
    *error = what_;
    return false;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return bad("invalid literal");
    i_ += w.size();
    return true;
  }

  bool value(Json* out, int depth) {
    if (depth > kMaxDepth) return bad("nesting too deep");
    ws();
    if (i_ >= s_.size()) return bad("unexpected end");
    const char c = s_[i_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      std::string str;
      if (!string(&str)) return false;
      *out = Json(std::move(str));
      return true;
    }
    if (c == 't') return literal("true") && (*out = Json(true), true);
    if (c == 'f') return literal("false") && (*out = Json(false), true);
    if (c == 'n') return literal("null") && (*out = Json(), true);
    return number(out);
  }

  bool number(Json* out) {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    auto digits = [&] {
      const size_t d0 = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ > d0;
    };
    if (!digits()) return bad("invalid number");
    bool integral = true;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      integral = false;
      if (!digits()) return bad("invalid number");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      integral = false;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return bad("invalid number");
    }
    const std::string text = s_.substr(start, i_ - start);
    errno = 0;
    if (integral) {
      const long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno != ERANGE) {
        *out = Json(static_cast<int64_t>(v));
        return true;
      }
    }
    *out = Json(std::strtod(text.c_str(), nullptr));
    return true;
  }

  bool hex4(uint32_t* v) {
    if (i_ + 4 > s_.size()) return bad("short \\u escape");
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      *v <<= 4;
      if (c >= '0' && c <= '9') *v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') *v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') *v |= static_cast<uint32_t>(c - 'A' + 10);
      else return bad("invalid \\u escape");
    }
    return true;
  }

  static void put_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool string(std::string* out) {
    ++i_;  // the opening quote
    while (true) {
      if (i_ >= s_.size()) return bad("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return bad("control character in string");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (i_ >= s_.size()) return bad("unterminated string");
      const char e = s_[i_++];
      switch (e) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair spells one code point
            uint32_t lo = 0;
            if (s_.compare(i_, 2, "\\u") != 0) return bad("lone surrogate");
            i_ += 2;
            if (!hex4(&lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return bad("lone surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return bad("lone surrogate");
          }
          put_utf8(cp, out);
          break;
        }
        default: return bad("invalid escape");
      }
    }
  }

  bool array(Json* out, int depth) {
    ++i_;
    *out = Json::array();
    ws();
    if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
    while (true) {
      Json v;
      if (!value(&v, depth + 1)) return false;
      out->push(std::move(v));
      ws();
      if (i_ >= s_.size()) return bad("unterminated array");
      const char c = s_[i_++];
      if (c == ']') return true;
      if (c != ',') return --i_, bad("expected , or ]");
    }
  }

  bool object(Json* out, int depth) {
    ++i_;
    *out = Json::object();
    ws();
    if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
    while (true) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') return bad("expected a key");
      std::string key;
      if (!string(&key)) return false;
      ws();
      if (i_ >= s_.size() || s_[i_] != ':') return bad("expected :");
      ++i_;
      Json v;
      if (!value(&v, depth + 1)) return false;
      out->set(key, std::move(v));
      ws();
      if (i_ >= s_.size()) return bad("unterminated object");
      const char c = s_[i_++];
      if (c == '}') return true;
      if (c != ',') return --i_, bad("expected , or }");
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  std::string what_;
};

}  // namespace

bool parse_json(const std::string& text, Json* out, std::string* error) {
  return Parser(text).document(out, error);
}

bool read_json_file(const std::string& path, Json* out, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = "cannot read " + path;
    return false;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  if (!parse_json(ss.str(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

}  // namespace bench
