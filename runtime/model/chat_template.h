// Chat formatting by tokenizer.chat_template. GGUF templates are Jinja: Whittle runs the
// model's own template with its Jinja (jinja.h) as HF transformers renders it, whatever the
// family, or refuses it as unsupported, naming why, never guessed. A message the template
// would drop without a word is refused too.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "jinja_value.h"

namespace wt {

struct JinjaProgram;  // jinja_parse.h

// At most this many caller's variables (each name a template reads is looked up among them),
// in at most this much JSON.
inline constexpr size_t kMaxChatVars = 256;
inline constexpr size_t kMaxChatVarsBytes = size_t{1} << 20;
// The names a render sets, which no variable may have.
inline constexpr const char* kSetByRender[] = {"messages",  "add_generation_prompt", "bos_token",
                                               "eos_token", "raise_exception",       "strftime_now"};

struct ChatMessage {
  // What the template's message.content is: the text, None (JSON null: an assistant's turn of
  // tool calls alone) or undefined (no such member).
  enum class Content : uint8_t { text, none, absent };
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}
  std::string role;
  std::string content;
  Content content_kind = Content::text;
  // The message's other members as the caller wrote them (an assistant's tool_calls, a tool
  // result's tool_call_id and name, ...), and the places of role and content among all its
  // members (a template that walks a message sees the caller's order).
  JinjaDict extra;
  uint32_t role_at = 0, content_at = 1;
  // tool_calls: a non-empty list (what a template may drop).
  bool has_calls() const;
  // What the message's tool_calls member is: 0 absent, 1 null, 2 an empty list, 3 a list of
  // calls. Templates tell them apart (Mistral's take an empty list for a turn of calls and
  // write no text beside it), so each is a class of its own in the check of dropped text.
  int calls_state() const;
};

struct ChatTemplate {
  std::shared_ptr<const JinjaProgram> program;  // the template, parsed once, run for every conversation
  std::string bos_token;  // what the template's `bos_token` renders as: the BOS token's text, or ""
  std::string eos_token;  // as bos_token, for `eos_token`
};

// Reads a GGUF chat template. bos_token and eos_token are the texts of the model's BOS and
// EOS tokens ("" where it has none). WT_ERR_UNSUPPORTED, naming why: no template, one that
// uses what Whittle's Jinja lacks, or one that writes eos_token (every turn's end, for
// Zephyr's, [INST] and Phi-3's) for a model with no EOS token.
Status parse_chat_template(const std::string& jinja, const std::string& bos_token, const std::string& eos_token,
                           ChatTemplate* out);

// WT_ERR_INVALID_ARGUMENT for a role other than system, user, assistant and tool.
Status check_chat_roles(const std::vector<ChatMessage>& messages);

// The caller's template variables: a JSON object (jinja_json.h) whose members a template
// reads beside the conversation, as transformers' apply_chat_template(**kwargs) gives them
// (Qwen3's and SmolLM3's enable_thinking, the tools a template lists). WT_ERR_INVALID_ARGUMENT:
// more than kMaxChatVarsBytes, what jinja_from_json refuses, not a JSON object, more than
// kMaxChatVars members, or a name of kSetByRender.
Status read_chat_vars(std::string_view json, JinjaDict* out);

// The conversation as a JSON array of message objects, as transformers' apply_chat_template
// takes it: a "role" string, a "content" string, null or absent, and any other
// members. WT_ERR_INVALID_ARGUMENT: what jinja_from_json refuses, not an array of objects, a
// role that is no string, a content that is neither a string nor null (content parts),
// tool_calls neither null nor a list of objects.
Status read_chat_messages(std::string_view json, std::vector<ChatMessage>* out);

// Renders messages (dicts of role, content and their other members) and add_generation_prompt = add_assistant,
// a call's arguments given as a string holding a JSON object (OpenAI's) as that object (the
// messages as given where the template fails with the objects: DeepSeek-R1's),
// with the caller's variables (read_chat_vars; null: none).
// today: the date strftime_now formats, written "06 Dec 2026" (Llama 3.2's date; null: the
// local date now). WT_ERR_INVALID_ARGUMENT: a role other than system, user, assistant and
// tool, or the template's raise_exception (its message: Gemma's and [INST] roles out of
// turn, ...); WT_ERR_UNSUPPORTED: the template fails otherwise (jinja.h), or drops a message
// that holds more than whitespace: renders the same text with its content emptied and, where
// the template runs with it, with other text there (a tool message for Zephyr's and Phi-3's
// templates, a lone system message for Gemma 3's and Llama 2's, a system message before a
// last reply for Mistral's, the text beside a tool call for Llama 3.1's and Mistral's), or a
// message's tool calls (the text is the same without the first message's that has some:
// ChatML's, Gemma's). The check renders at most twice more per class of message present (its
// role, its tool_calls: absent, null, empty, some; a system message past the first place),
// for the first message of more than whitespace of each, as templates drop messages by role,
// or a system message by its place; once more for tool calls.
Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                           bool add_assistant, std::string* out, const std::string* today = nullptr,
                           const JinjaDict* vars = nullptr);

// One rendering as transformers renders: apply_chat_template without its checks of roles
// and of dropped messages (for tests of the interpreter on templates that ignore messages).
Status render_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                            bool add_assistant, std::string* out, const std::string* today = nullptr,
                            const JinjaDict* vars = nullptr);

}  // namespace wt
