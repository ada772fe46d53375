#include "jinja_lex.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "jinja_text.h"  // unix_newlines

namespace wt {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

Status fail(size_t pos, const std::string& what) { return jinja_syntax_error(pos, what); }

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6)), *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12)), *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18)), *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}


class Lexer {
 public:
  explicit Lexer(const std::string& src) : j_(src) {}

  Status run(std::vector<JinjaToken>* out) {
    bool strip_after = false, after_block = false;
    for (size_t i = 0;;) {
      const size_t open = next_tag(i);
      size_t b = i, e = open == std::string::npos ? j_.size() : open;  // the text Jinja writes: [b, e)
      if (strip_after) {
        while (b < e && is_space(j_[b])) ++b;
      } else if (after_block && b < e && j_[b] == '\n') {
        ++b;
      }
      if (open == std::string::npos) {
        if (e > b && j_[e - 1] == '\n') --e;  // keep_trailing_newline off
      } else if (open + 2 < j_.size() && j_[open + 2] == '-') {
        while (e > b && is_space(j_[e - 1])) --e;
      } else if (j_[open + 1] != '{' && !(open + 2 < j_.size() && j_[open + 2] == '+')) {
        size_t k = e;  // lstrip_blocks: spaces and tabs from a line's start to a block or comment tag
        while (k > i && (j_[k - 1] == ' ' || j_[k - 1] == '\t')) --k;
        if (k == 0 || (k > i && j_[k - 1] == '\n')) e = std::max(b, k);
      }
      if (b < e) out->push_back(JinjaToken{JinjaToken::T::text, j_.substr(b, e - b), 0, 0, b});
      if (open == std::string::npos) break;
      const char kind = j_[open + 1];
      size_t close = 0;
      if (kind == '#') {
        close = j_.find("#}", open + 2);
        if (close == std::string::npos) return fail(open, "an unclosed comment");
        strip_after = close > open + 2 && j_[close - 1] == '-';
        after_block = !(close > open + 2 && j_[close - 1] == '+');
        i = close + 2;
        continue;
      }
      out->push_back(JinjaToken{kind == '{' ? JinjaToken::T::open_expr : JinjaToken::T::open_stmt, "", 0, 0, open});
      size_t at = open + 2;
      if (at < j_.size() && (j_[at] == '-' || j_[at] == '+')) ++at;
      bool marker = false;
      WT_TRY(lex_tag(kind == '{' ? '}' : '%', at, out, &close, &marker));
      strip_after = marker && j_[close - 1] == '-';
      after_block = kind == '%' && !(marker && j_[close - 1] == '+');
      out->push_back(JinjaToken{kind == '{' ? JinjaToken::T::close_expr : JinjaToken::T::close_stmt, "", 0, 0, close});
      i = close + 2;
    }
    out->push_back(JinjaToken{JinjaToken::T::end, "", 0, 0, j_.size()});
    return Status::ok();
  }

 private:
  size_t next_tag(size_t from) const {
    for (size_t at = j_.find('{', from); at != std::string::npos; at = j_.find('{', at + 1))
      if (at + 1 < j_.size() && (j_[at + 1] == '{' || j_[at + 1] == '%' || j_[at + 1] == '#')) return at;
    return std::string::npos;
  }

  // The tokens of a tag from `at` to its closing "}}" or "%}" (at *close; *marker when a
  // '-' or '+' stands right before it).
  Status lex_tag(char end, size_t at, std::vector<JinjaToken>* out, size_t* close, bool* marker) {
    int braces = 0;
    for (size_t i = at;;) {
      while (i < j_.size() && is_space(j_[i])) ++i;
      if (i >= j_.size()) return fail(at, "an unclosed tag");
      const char c = j_[i];
      if ((c == '-' || c == '+') && i + 2 < j_.size() + 0 && j_[i + 1] == end && j_[i + 2] == '}' && braces == 0) {
        *close = i + 1, *marker = true;
        return Status::ok();
      }
      if (c == end && i + 1 < j_.size() && j_[i + 1] == '}' && braces == 0) {
        *close = i, *marker = false;
        return Status::ok();
      }
      JinjaToken t;
      t.pos = i;
      if (name_start(c)) {
        size_t k = i;
        while (k < j_.size() && name_char(j_[k])) ++k;
        t.t = JinjaToken::T::name, t.s = j_.substr(i, k - i), i = k;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        WT_TRY(lex_number(&i, &t));
      } else if (c == '\'' || c == '"') {
        WT_TRY(lex_string(&i, &t));
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                           ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
        t.t = JinjaToken::T::op;
        for (const char* op : kOps)
          if (j_.compare(i, std::char_traits<char>::length(op), op) == 0) {
            t.s = op;
            break;
          }
        if (t.s.empty()) return fail(i, std::string("an unexpected character '") + c + "'");
        if (t.s == "{") ++braces;
        if (t.s == "}") --braces;
        i += t.s.size();
      }
      out->push_back(std::move(t));
    }
  }

  Status lex_number(size_t* i, JinjaToken* t) {
    size_t k = *i;
    const auto digits = [&] {
      while (k < j_.size() && (std::isdigit(static_cast<unsigned char>(j_[k])) || j_[k] == '_')) ++k;
    };
    digits();
    bool is_float = false;
    if (k + 1 < j_.size() && j_[k] == '.' && std::isdigit(static_cast<unsigned char>(j_[k + 1]))) {
      is_float = true, ++k;
      digits();
    }
    if (k < j_.size() && (j_[k] == 'e' || j_[k] == 'E')) {
      size_t e = k + 1;
      if (e < j_.size() && (j_[e] == '+' || j_[e] == '-')) ++e;
      if (e < j_.size() && std::isdigit(static_cast<unsigned char>(j_[e]))) {
        is_float = true, k = e;
        digits();
      }
    }
    std::string text;
    for (size_t p = *i; p < k; ++p)
      if (j_[p] != '_') text += j_[p];
    if (is_float) {
      t->t = JinjaToken::T::number, t->f = std::strtod(text.c_str(), nullptr);
    } else {
      if (text.size() > 18) return fail(*i, "an integer literal too large");
      t->t = JinjaToken::T::integer, t->i = std::strtoll(text.c_str(), nullptr, 10);
    }
    *i = k;
    return Status::ok();
  }

  // A string literal with Python's escapes resolved, as Jinja's lexer reads it.
  Status lex_string(size_t* i, JinjaToken* t) {
    const char q = j_[*i];
    t->t = JinjaToken::T::str;
    for (size_t k = *i + 1; k < j_.size(); ++k) {
      const char c = j_[k];
      if (c == q) {
        *i = k + 1;
        return Status::ok();
      }
      if (c != '\\') {
        t->s += c;
        continue;
      }
      if (++k >= j_.size()) break;
      const char e = j_[k];
      const auto hex = [&](int n, uint32_t* cp) {
        *cp = 0;
        for (int d = 0; d < n; ++d) {
          if (k + 1 >= j_.size() || !std::isxdigit(static_cast<unsigned char>(j_[k + 1]))) return false;
          const char h = j_[++k];
          *cp = *cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 32) - 'a' + 10);
        }
        return true;
      };
      uint32_t cp = 0;
      switch (e) {
        case '\n': break;  // a line continuation
        case 'n': t->s += '\n'; break;
        case 't': t->s += '\t'; break;
        case 'r': t->s += '\r'; break;
        case 'a': t->s += '\a'; break;
        case 'b': t->s += '\b'; break;
        case 'f': t->s += '\f'; break;
        case 'v': t->s += '\v'; break;
        case '\\': case '\'': case '"': t->s += e; break;
        case 'x': case 'u': case 'U':
          if (!hex(e == 'x' ? 2 : e == 'u' ? 4 : 8, &cp) || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
            return fail(k, "a bad escape in a string literal");
          append_utf8(cp, &t->s);
          break;
        default:
          if (e >= '0' && e <= '7') {
            cp = static_cast<uint32_t>(e - '0');
            for (int d = 0; d < 2 && k + 1 < j_.size() && j_[k + 1] >= '0' && j_[k + 1] <= '7'; ++d)
              cp = cp * 8 + static_cast<uint32_t>(j_[++k] - '0');
            append_utf8(cp, &t->s);
          } else if (e == 'N') {
            return fail(k, "a named escape (\\N{...}) in a string literal");
          } else {
            t->s += '\\', t->s += e;  // Python keeps an unknown escape as written
          }
      }
    }
    return fail(*i, "an unclosed string literal");
  }

  std::string j_;
};


}  // namespace

Status jinja_syntax_error(size_t pos, const std::string& what) {
  return error(WT_ERR_UNSUPPORTED, "chat template: " + what + " at byte " + std::to_string(pos));
}

Status jinja_lex(const std::string& source, std::vector<JinjaToken>* out) {
  out->clear();
  return Lexer(unix_newlines(source)).run(out);
}

}  // namespace wt
