#include "jinja_text.h"

#include <algorithm>
#include <cctype>

namespace wt {

namespace {

}  // namespace

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

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where the tag that opens at j[open] ("{{", "{%" or "{#") closes: the index of its closing
// pair, string literals skipped inside expressions and statements; npos when unclosed.
size_t tag_close(const std::string& j, size_t open) {
  const char kind = j[open + 1];
  const char end = kind == '{' ? '}' : kind;
  for (size_t i = open + 2; i + 1 < j.size();) {
    if (kind != '#' && (j[i] == '\'' || j[i] == '"')) {
      i = literal_end(j, i);
      if (i == std::string::npos) return i;
      continue;
    }
    if (j[i] == end && j[i + 1] == '}') return i;
    ++i;
  }
  return std::string::npos;
}

// The next tag's opening "{{", "{%" or "{#" at or after `from`, or npos.
size_t next_tag(const std::string& j, size_t from) {
  for (size_t at = j.find('{', from); at != std::string::npos; at = j.find('{', at + 1))
    if (at + 1 < j.size() && (j[at + 1] == '{' || j[at + 1] == '%' || j[at + 1] == '#')) return at;
  return std::string::npos;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The literal j[quote, end) spelled one way whatever way the template spells it: its value's
// newlines, tabs, returns and backslashes as escapes, in single quotes unless the value holds
// one (then double quotes, and a double quote in it escaped). So a real newline in the
// template's literal (Phi-3.5's GGUF) and the escape \n (Phi-3's) compare equal. A literal
// with an escape jinja_literal does not resolve stays as written.
std::string canonical_literal(const std::string& j, size_t quote, size_t end) {
  std::string value;
  if (!jinja_literal(j, quote, &value)) return j.substr(quote, end - quote);
  const char q = value.find('\'') == std::string::npos ? '\'' : '"';
  std::string out(1, q);
  for (const char c : value) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c == q) out += '\\';
        out += c;
    }
  }
  return out + q;
}

// The inside [begin, end) of an expression or statement tag, appended compacted: the
// whitespace between tokens dropped (one space kept between two words), literals canonical.
void compact_tag(const std::string& j, size_t begin, size_t end, std::string* out) {
  bool space = false;
  for (size_t i = begin; i < end;) {
    const char c = j[i];
    if (is_space(c)) {
      space = true, ++i;
      continue;
    }
    if (space && !out->empty() && word_char(out->back()) && word_char(c)) *out += ' ';
    space = false;
    if (c != '\'' && c != '"') {
      *out += c, ++i;
      continue;
    }
    const size_t lit = literal_end(j, i);  // closed before `end`: tag_close skipped it
    *out += canonical_literal(j, i, lit);
    i = lit;
  }
}

}  // namespace

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

bool jinja_literal(const std::string& jinja, size_t quote, std::string* out) {
  const char q = jinja[quote];
  out->clear();
  for (size_t i = quote + 1; i < jinja.size(); ++i) {
    const char c = jinja[i];
    if (c == q) return true;
    if (c != '\\' || i + 1 == jinja.size()) {
      out->push_back(c);
      continue;
    }
    const char e = jinja[++i];
    switch (e) {
      case 'n': out->push_back('\n'); break;
      case 't': out->push_back('\t'); break;
      case 'r': out->push_back('\r'); break;
      case '\\': case '\'': case '"': out->push_back(e); break;
      default: return false;
    }
  }
  return false;
}

size_t literal_end(const std::string& s, size_t quote) {
  for (size_t i = quote + 1; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == s[quote]) return i + 1;
  }
  return std::string::npos;
}

std::string compact_jinja(const std::string& jinja) {
  const std::string j = unix_newlines(jinja);
  std::string out;
  for (size_t i = 0; i < j.size();) {
    const size_t open = next_tag(j, i);
    if (open == std::string::npos) {
      out.append(j, i, std::string::npos);
      break;
    }
    out.append(j, i, open - i);  // text outside the tags, as it is: nothing here compares it
    const size_t close = tag_close(j, open);
    if (close == std::string::npos) break;  // unclosed: no tag, and the rest nothing to compare
    if (j[open + 1] != '#') {             // a comment writes nothing: left out (its quotes are no literals)
      out.append(j, open, 2);
      compact_tag(j, open + 2, close, &out);
      out.append(j, close, 2);
    }
    i = close + 2;
  }
  return out;
}

std::vector<std::string> jinja_expressions(const std::string& c) {
  std::vector<std::string> out;
  for (size_t at = c.find("{{"); at != std::string::npos; at = c.find("{{", at)) {
    size_t i = at + 2;
    if (i < c.size() && c[i] == '-') ++i;
    const size_t begin = i;
    while (i + 1 < c.size() && !(c[i] == '}' && c[i + 1] == '}')) {
      if (c[i] != '\'' && c[i] != '"') {
        ++i;
        continue;
      }
      i = literal_end(c, i);
      if (i == std::string::npos) return out;
    }
    if (i + 1 >= c.size()) break;
    const size_t end = i > begin && c[i - 1] == '-' ? i - 1 : i;
    out.push_back(c.substr(begin, end - begin));
    at = i + 2;
  }
  return out;
}

bool writes_raw_text(const std::string& jinja) {
  const std::string j = unix_newlines(jinja);
  bool strip_after = false;  // the tag before ended with '-'
  bool after_block = false;  // the tag before was a block or comment tag not ended with '+'
  for (size_t i = 0;;) {
    const size_t open = next_tag(j, i);
    const size_t end = open == std::string::npos ? j.size() : open;
    size_t b = i, e = end;  // the text [b, e) between the two tags that Jinja writes
    if (strip_after) {
      while (b < e && is_space(j[b])) ++b;
    } else if (after_block && b < e && j[b] == '\n') {
      ++b;
    }
    if (open == std::string::npos && e > b && j[e - 1] == '\n') {  // keep_trailing_newline is off
      --e;
    } else if (open != std::string::npos && open + 2 < j.size() && j[open + 2] == '-') {
      while (e > b && is_space(j[e - 1])) --e;
    } else if (open != std::string::npos && j[open + 1] != '{' &&
               !(open + 2 < j.size() && j[open + 2] == '+')) {  // lstrip_blocks (not "{%+"): from a line's start
      size_t k = e;
      while (k > i && (j[k - 1] == ' ' || j[k - 1] == '\t')) --k;
      if (k == 0 || (k > i && j[k - 1] == '\n')) e = std::max(b, k);
    }
    if (b < e) return true;
    if (open == std::string::npos) return false;
    const size_t close = tag_close(j, open);
    if (close == std::string::npos) return true;
    if (j[open + 1] == '%') {  // a raw block writes its text, tags and all
      size_t k = open + 2;
      while (k < close && (j[k] == '-' || j[k] == '+' || is_space(j[k]))) ++k;
      if (j.compare(k, 3, "raw") == 0 && (k + 3 >= close || !word_char(j[k + 3]))) return true;
    }
    strip_after = close > open + 2 && j[close - 1] == '-';
    after_block = j[open + 1] != '{' && !(close > open + 2 && j[close - 1] == '+');  // "+%}" keeps the newline
    i = close + 2;
  }
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
