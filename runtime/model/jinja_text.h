// Reading Jinja template text without running Jinja: string literals, the expressions of
// its {{ }} tags (compared by their spelling, literals by their value), the text it writes
// outside its tags, and the filters the chat formats need (trim, transformers' tojson of a
// string). The chat recognisers (chat_template.cpp, chat_families.h) are built on these; a
// GGUF's template is untrusted input, so each bounds every read and stops at unclosed
// literals and tags. "\r\n" and "\r" read as "\n", as Jinja's lexer reads them.
#pragma once

#include <string>
#include <vector>

namespace wt {

// The template as Jinja's lexer reads it: "\r\n" and "\r" as "\n" (its newline_sequence),
// in literals too.
std::string unix_newlines(const std::string& jinja);

// The text of the Jinja string literal whose opening quote is jinja[quote], up to its closing
// quote, with the escapes \n \t \r \\ \' \" resolved. False: no closing quote, or another
// escape (\u, \x, octal, ...: Python's, which this does not resolve; no text rather than a
// wrong one).
bool jinja_literal(const std::string& jinja, size_t quote, std::string* out);

// The index just past the Jinja string literal whose opening quote is s[quote] (its escapes
// skipped), or npos when it is not closed.
size_t literal_end(const std::string& s, size_t quote);

// A template's text as its expressions and statements are compared: inside each {{ }} and
// {% %} tag the whitespace Jinja skips between tokens removed (one space kept between two
// words: `loop.first and x`) and each string literal spelled one way (single quotes unless
// its value holds one; newlines, tabs, returns and backslashes as escapes, whether the
// template writes them so or as the characters), so that `{{- " " + message["content"]|trim
// + eos_token}}` reads `{{-' '+message['content']|trim+eos_token}}`. Comments are left out
// and the text outside the tags is kept as it is (its quotes are no literals;
// writes_raw_text says whether it writes anything). A literal with an escape jinja_literal
// does not resolve stays as written; an unclosed tag ends the text.
std::string compact_jinja(const std::string& jinja);

// The expressions of a compacted template's {{ }} tags, without their whitespace-control
// dashes, in order.
std::vector<std::string> jinja_expressions(const std::string& compacted);

// Whether the template writes text of its own outside its tags, as transformers renders it
// (trim_blocks: the first newline after a block or comment tag dropped; lstrip_blocks: the
// spaces and tabs from a line's start to such a tag dropped, unless "+%}" or "{%+" says
// otherwise; a tag's '-' strips the whitespace on its side; the template's last newline
// dropped, keep_trailing_newline off). A {% raw %} block counts as text. A recogniser that reads expressions only must refuse such a
// template: the text would be missing from what it formats. An unclosed tag counts as text.
bool writes_raw_text(const std::string& jinja);

// transformers' `tojson` filter of a string (json.dumps, ensure_ascii off): quoted, with
// the quote, the backslash and the control characters escaped (\n \r \t \b \f, the others
// as \u00xx); every other byte as it is (Python's strings hold no invalid UTF-8, so such
// bytes, which transformers never sees, pass through).
std::string json_string(const std::string& s);

// Jinja's `trim` filter (Python's str.strip): whitespace as str.isspace has it, ASCII and the
// Unicode spaces, from both ends of UTF-8 text. Llama 3's template trims every content.
std::string jinja_trim(const std::string& s);

// The length of the whitespace character (Python's str.isspace, which `trim` strips) that
// starts at s[i], else 0: ASCII 9-13 and 28-32, and in UTF-8 U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
size_t jinja_space_at(const std::string& s, size_t i);

}  // namespace wt
