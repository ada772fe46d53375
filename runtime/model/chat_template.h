// Chat formatting for the templates Whittle recognises in tokenizer.chat_template. GGUF
// templates are Jinja; rather than run Jinja, we recognise the families we support and
// format them natively. Anything else is reported as unsupported, never guessed.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace wt {

enum class ChatFormat { chatml, llama3, zephyr };

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
};

// Recognises a GGUF chat template; eos_token is the text of the model's EOS token (what
// the template's `eos_token` renders as). WT_ERR_UNSUPPORTED (naming what was found)
// otherwise, and for a Zephyr template when the model has no EOS token.
Status parse_chat_template(const std::string& jinja, const std::string& eos_token, ChatTemplate* out);

// Jinja's `trim` filter (Python's str.strip): whitespace as str.isspace has it, ASCII and the
// Unicode spaces, from both ends of UTF-8 text. Llama 3's template trims every content.
std::string jinja_trim(const std::string& s);

// WT_ERR_INVALID_ARGUMENT: a role other than system, user, assistant and tool;
// WT_ERR_UNSUPPORTED: a tool message for a template that has no place for it (Zephyr's
// would drop it without a word).
Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                           bool add_assistant, std::string* out);

}  // namespace wt
