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

Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                           bool add_assistant, std::string* out);

}  // namespace wt
