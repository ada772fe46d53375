// JSON read into Jinja values: the variables a caller gives a chat template (wt_chat_apply_vars),
// as json.loads reads them for transformers' apply_chat_template(**kwargs). The text is the
// caller's, so every malformed or oversized input is a Status naming where, never a crash.
#pragma once

#include <string_view>

#include "base/status.h"
#include "jinja_value.h"

namespace wt {

// Reads one JSON value (RFC 8259: UTF-8, whitespace around it) into *out: null as None,
// true/false as bool, a number without fraction or exponent as int (int64), any other as
// float, strings, arrays as lists and objects as dicts in their order. WT_ERR_INVALID_ARGUMENT,
// with the byte offset: malformed JSON, a lone surrogate escape, an integer outside int64 or
// a float outside double, a name repeated in one object (json.loads would keep the last one
// silently), or what a template's own values may not be: nesting past 64, a string past 8 MiB,
// a list or object past 100 000 items, or a total past the renderer's value cost.
Status jinja_from_json(std::string_view text, JinjaValue* out);
// The same for one value from byte *pos of text (whitespace before it allowed), with any
// text after it: *pos becomes the byte past the value, and errors give bytes of the whole
// text (a tool call inside a model's reply, chat_reply.h).
Status jinja_from_json_at(std::string_view text, size_t* pos, JinjaValue* out);

}  // namespace wt
