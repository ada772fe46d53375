// Chat formatting for the templates Whittle recognises in tokenizer.chat_template. GGUF
// templates are Jinja; rather than run Jinja, we recognise the families we support and
// format them natively. Anything else is reported as unsupported, never guessed.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace wt {

enum class ChatFormat { chatml, llama3 };

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
};

// Recognises a GGUF chat template. WT_ERR_UNSUPPORTED (naming what was found) otherwise.
Status parse_chat_template(const std::string& jinja, ChatTemplate* out);

// Jinja's `trim` filter (Python's str.strip): whitespace as str.isspace has it, ASCII and the
// Unicode spaces, from both ends of UTF-8 text. Llama 3's template trims every content.
std::string jinja_trim(const std::string& s);

Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                           bool add_assistant, std::string* out);

}  // namespace wt
