// Text as Jinja and Python read it, beside the interpreter (jinja.h): newlines as Jinja's
// lexer reads them, Python's whitespace (str.isspace, which `trim` strips) and
// transformers' `tojson` of a string.
#pragma once

#include <string>

namespace wt {

// The template as Jinja's lexer reads it: "\r\n" and "\r" as "\n" (its newline_sequence),
// in literals too.
std::string unix_newlines(const std::string& jinja);

// transformers' `tojson` filter of a string (json.dumps, ensure_ascii off): quoted, with
// the quote, the backslash and the control characters escaped (\n \r \t \b \f, the others
// as \u00xx); every other byte as it is (Python's strings hold no invalid UTF-8, so such
// bytes, which transformers never sees, pass through).
std::string json_string(const std::string& s);

// Jinja's `trim` filter (Python's str.strip): whitespace as str.isspace has it, ASCII and the
// Unicode spaces, from both ends of UTF-8 text.
std::string jinja_trim(const std::string& s);

// The length of the whitespace character (Python's str.isspace, which `trim` strips) that
// starts at s[i], else 0: ASCII 9-13 and 28-32, and in UTF-8 U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
size_t jinja_space_at(const std::string& s, size_t i);

}  // namespace wt
