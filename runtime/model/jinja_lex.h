// The tokens of a Jinja template (jinja_parse.h reads them into a tree): its text, trimmed
// as transformers' environment trims it, and the names, literals and operators inside its
// tags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace wt {

struct JinjaToken {
  enum class T : uint8_t { text, open_expr, close_expr, open_stmt, close_stmt, name, str, integer, number, op, end };
  T t = T::end;
  std::string s;  // text, a name, a string literal's value (escapes resolved), an operator
  int64_t i = 0;
  double f = 0;
  size_t pos = 0;  // byte offset in the template
};

// trim_blocks, lstrip_blocks, the '-' and '+' markers and the dropped last newline applied
// to the text; comments left out; "\r\n" read as "\n"; string literals with Python's escapes
// resolved. Ends with a T::end token. WT_ERR_UNSUPPORTED for an unclosed tag, comment or
// literal, a character no token starts with, and the escapes it does not read (\N{...}).
Status jinja_lex(const std::string& source, std::vector<JinjaToken>* out);

// The failure of reading a template: WT_ERR_UNSUPPORTED, naming what and where.
Status jinja_syntax_error(size_t pos, const std::string& what);

}  // namespace wt
