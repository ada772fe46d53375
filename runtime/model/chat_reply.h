// A model's reply read back into an assistant message: the text it generated, with its tool
// calls and its reasoning taken out in the format its own chat template writes them, so the
// message can go back into the conversation (wt_chat_apply_json) as transformers' callers
// keep it: {"role": "assistant", "content": ..., "reasoning_content": ..., "tool_calls": [...]}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "jinja_value.h"

namespace wt {

// A reply longer than this is refused (as a template's strings are bounded).
inline constexpr size_t kMaxReplyBytes = size_t{8} << 20;

// How a template writes an assistant's tool calls, told by its text.
enum class ReplyFormat : uint8_t {
  plain,    // none: a reply is all content
  hermes,   // "<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>", repeated (Qwen2.5, Qwen3)
  llama3,   // the whole reply {"name": ..., "parameters": {...}} (Llama 3.1, 3.2)
  mistral,  // "[TOOL_CALLS] [{"name": ..., "arguments": {...}, "id": ...}, ...]", or name[ARGS]{...}
  phi4,     // "<|tool_call|>" an object or a list of them "<|/tool_call|>", repeated (Phi-4-mini)
  other,    // one Whittle does not read (Qwen3-Coder's XML, DeepSeek-R1's): `opener` starts a call
};

struct ReplyStyle {
  ReplyFormat format = ReplyFormat::plain;
  std::string opener;   // for `other`: the text that opens a call in its format
  bool thinks = false;  // the template knows "</think>": a reply's reasoning is split from it
};

// The style of a template's replies, from its text (the markers its tool calls are written
// with; a template without one gets plain).
ReplyStyle reply_style_of(std::string_view jinja);

// Reads a reply into an assistant message (a dict, members in this order):
// - "role": "assistant";
// - "content": the text outside the calls (before, between and after them), each piece
//   trimmed, joined by newlines, or None when there is none beside calls; a reply without
//   calls keeps its text as it is (after the reasoning);
// - "reasoning_content", where the style thinks and the reply has "</think>": all before the
//   last one (after a first "<think>"), newlines stripped as Qwen3's template strips them,
//   when not empty; the content is then what follows it, its leading newlines stripped;
// - "tool_calls", where the reply opens calls (an empty list where it writes none: Mistral's
//   "[TOOL_CALLS] []"): [{"id" (where the model wrote one), "type": "function", "function":
//   {"name", "arguments"}}] in the reply's order, the arguments as the model wrote them
//   ("arguments" or "parameters"; absent: {}).
// Untagged JSON is a call only when the whole reply is calls: objects of exactly a name and
// parameters (or arguments), split by whitespace or ";" (Llama 3's; also Hermes's, as
// Qwen2.5-Coder-0.5B-Instruct writes its calls without the tags). Otherwise it is content (an
// answer in JSON). After Llama 3.1's <|python_tag|> the rest of the reply must be such calls.
// A Mistral call's name (and [CALL_ID]) is letters, digits, '_', '-' and '.'.
// WT_ERR_INVALID_ARGUMENT: a reply past kMaxReplyBytes; naming the byte: a NUL, text that is
// not UTF-8 (the JSON it becomes is; wt_detokenizer_push writes U+FFFD for such bytes), a
// call (at the byte that opens it) not closed, not JSON, without a name, or with arguments
// nested past kJinjaMaxNesting - 5 levels (deeper could not go back into a conversation's JSON).
// WT_ERR_UNSUPPORTED: a call in the `other` format, Llama 3.1's built-in tool calls
// ("<|python_tag|>name.call(...)").
Status parse_chat_reply(const ReplyStyle& style, std::string_view reply, JinjaValue* out_message);

}  // namespace wt
