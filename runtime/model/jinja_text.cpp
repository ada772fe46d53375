#include "jinja_text.h"

namespace wt {

std::string unix_newlines(const std::string& j) {
  if (j.find('\r') == std::string::npos) return j;
  std::string out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (j[i] != '\r') {
      out += j[i];
      continue;
    }
    out += '\n';
    if (i + 1 < j.size() && j[i + 1] == '\n') ++i;
  }
  return out;
}

size_t jinja_space_at(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = b(0), c1 = b(1), c2 = b(2);  // 0 past the end: no character matches it
  if ((c >= 9 && c <= 13) || (c >= 28 && c <= 32)) return 1;
  if (c == 0xC2 && (c1 == 0x85 || c1 == 0xA0)) return 2;
  if (c == 0xE1 && c1 == 0x9A && c2 == 0x80) return 3;
  if (c == 0xE2 && c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF)) return 3;
  if (c == 0xE2 && c1 == 0x81 && c2 == 0x9F) return 3;
  if (c == 0xE3 && c1 == 0x80 && c2 == 0x80) return 3;
  return 0;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4], out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string jinja_trim(const std::string& s) {
  size_t begin = 0, end = s.size();
  for (size_t n; begin < end && (n = jinja_space_at(s, begin)) > 0;) begin += n;
  // From the end: the character that ends there starts at most 3 bytes before.
  for (bool more = true; more && end > begin;) {
    more = false;
    for (size_t len = 1; len <= 3 && len <= end - begin; ++len)
      if (jinja_space_at(s, end - len) == len) {
        end -= len;
        more = true;
        break;
      }
  }
  return s.substr(begin, end - begin);
}

}  // namespace wt
