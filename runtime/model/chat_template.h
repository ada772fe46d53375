// Chat formatting by tokenizer.chat_template. GGUF templates are Jinja: the families people
// run most (ChatML, Llama 2/3, Mistral, Gemma, Zephyr, Phi-3) are recognised and formatted
// natively, checked against jinja2; any other template is run by Whittle's own Jinja
// (jinja.h), or refused as unsupported, naming why, never guessed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jinja_text.h"  // jinja_trim, which the fuzz harness checks contents with

namespace wt {

enum class ChatFormat { chatml, llama3, zephyr, gemma, inst, phi3, jinja };

struct JinjaProgram;  // jinja_parse.h

// [INST] templates: Llama 2 chat and Mistral Instruct v0.1-v0.3 (Mixtral's too). A user turn
// is open + content + close and a reply is reply_open + content + reply_close + eos_token +
// reply_tail; the spaces, the BOS and where a system message goes differ by version, and are
// read from the template's own expressions (parse_chat_template).
struct InstStyle {
  std::string open, close;      // "[INST] ", " [INST] " or "[INST]"; " [/INST]" or "[/INST]"
  bool bos_every_turn = false;  // Llama 2: bos_token before every user turn; Mistral: once, first
  bool trim_user = false;       // Llama 2 strips a user turn's content (its system block included)
  bool trim_reply = false;      // Llama 2 and Mistral v0.3 strip a reply
  std::string reply_open, reply_close, reply_tail;
  // Where a first system message goes: nowhere (the template raises on one), into the first
  // user turn (Llama 2, Mistral v0.2), into the last message when it is a user turn (Mistral
  // v0.3's `loop.last`), or into every user turn equal to the last one (its `message ==
  // user_messages[-1]` spelling, which compares whole messages); as system_open + text +
  // system_close in front of that turn's content.
  enum class System { none, first_user, last_message, last_user } system = System::none;
  std::string system_open, system_close;
};

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatTemplate {
  ChatFormat format = ChatFormat::chatml;
  std::string default_system;  // inserted when the first message is not a system message
  // ChatML: a run of tool messages is one user turn of <tool_response> blocks (Qwen2.5's
  // template) instead of a turn of role "tool" each (SmolLM2's and plain ChatML's).
  bool tool_responses = false;
  std::string eos_token;  // Zephyr ends every turn with the model's EOS text ("</s>")
  std::string bos_token;  // the model's BOS text, which Gemma's, [INST] and Llama 3.1's templates write
  // Gemma 3: a system message becomes the first user turn's prefix, its content then this
  // (the template's literal, "\n\n"); Gemma 1 and 2 have no system role (system_sep unset).
  bool system_prefix = false;
  std::string system_sep;
  InstStyle inst;
  // Phi-3.5 writes a system message only when it has content; Phi-3 always.
  bool skip_empty_system = false;
  // Llama 3.1-3.3: a system block of the template's own before the conversation, "Cutting
  // Knowledge Date: December 2023" and "Today Date: " + the local date (the template asks
  // strftime_now, which transformers defines) or its literal date (Llama 3.1's "26 Jul
  // 2024"), holding the first system message; a tool result an "ipython" turn of JSON.
  bool llama3_system_block = false;
  bool date_from_clock = false;
  std::string date;
  // ChatFormat::jinja: the template itself, run for every conversation.
  std::shared_ptr<const JinjaProgram> program;
};

// Reads a GGUF chat template: a family recognise_chat_template formats natively, else the
// template itself, run (ChatFormat::jinja, jinja.h). bos_token and eos_token are the texts
// of the model's BOS and EOS tokens (what the template's `bos_token` and `eos_token` render
// as; "" where it has none). WT_ERR_UNSUPPORTED, naming why, for a template neither can
// format: one that uses what Whittle's Jinja lacks, or none.
Status parse_chat_template(const std::string& jinja, const std::string& bos_token, const std::string& eos_token,
                           ChatTemplate* out);

// The families formatted natively: WT_ERR_UNSUPPORTED (naming what was found) for any other
// template, and for a Zephyr, [INST] or Phi-3 template when the model has no EOS token.
Status recognise_chat_template(const std::string& jinja, const std::string& bos_token, const std::string& eos_token,
                               ChatTemplate* out);

// WT_ERR_INVALID_ARGUMENT: a role other than system, user, assistant and tool; for Gemma,
// a user message at an odd place or another role at an even one, counting after an
// optional first system message (its template raises then), and for [INST] templates any
// role but user at an even place or but assistant at an odd one, or no message at all
// (Jinja raises where they read messages[0]), and an empty conversation for Llama 3.1-3.3;
// WT_ERR_UNSUPPORTED: a tool message for Zephyr and Phi-3 (their templates would drop it
// without a word) and [INST] templates (Llama 2's drops it; Mistral v0.3's needs a tool call
// id), a system message for Gemma 1 and 2, Mistral v0.1 and Mixtral (theirs raise).
// today: the date where a template writes today's (Llama 3.2's strftime_now("%d %b %Y"), as
// "06 Dec 2026"); null: the local date now.
Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                           bool add_assistant, std::string* out, const std::string* today = nullptr);

}  // namespace wt
