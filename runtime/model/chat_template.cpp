#include "chat_template.h"

namespace wt {

namespace {

// SmolLM2 and Qwen2.5 templates open with a default system turn when the conversation has
// none: `{{ '<|im_start|>system\nYOU ARE ...<|im_end|>\n' }}`. Extract that literal text.
std::string chatml_default_system(const std::string& jinja) {
  if (jinja.find("!= 'system'") == std::string::npos && jinja.find("!= \"system\"") == std::string::npos) return "";
  const std::string open = "<|im_start|>system\n";
  const size_t at = jinja.find(open);
  if (at == std::string::npos) return "";
  const size_t begin = at + open.size();
  const size_t end = jinja.find("<|im_end|>", begin);
  if (end == std::string::npos) return "";
  std::string text = jinja.substr(begin, end - begin);
  // A literal contains no Jinja; a variable or block here means there is no fixed default.
  if (text.find("{{") != std::string::npos || text.find("{%") != std::string::npos) return "";
  return text;
}

}  // namespace

Status parse_chat_template(const std::string& jinja, ChatTemplate* out) {
  if (jinja.empty()) return error(WT_ERR_UNSUPPORTED, "the model has no chat template (tokenizer.chat_template)");
  if (jinja.find("<|im_start|>") != std::string::npos) {
    out->format = ChatFormat::chatml;
    out->default_system = chatml_default_system(jinja);
    return Status::ok();
  }
  if (jinja.find("<|start_header_id|>") != std::string::npos) {
    out->format = ChatFormat::llama3;
    out->default_system.clear();
    return Status::ok();
  }
  return error(WT_ERR_UNSUPPORTED, "unrecognised chat template (supported: ChatML, Llama 3); it begins: " +
                                       jinja.substr(0, 80));
}

Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                           std::string* out) {
  std::string s;
  for (const ChatMessage& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      return error(WT_ERR_INVALID_ARGUMENT, "unknown chat role '" + m.role + "'");
  }
  switch (tmpl.format) {
    case ChatFormat::chatml:
      if (!tmpl.default_system.empty() && !messages.empty() && messages[0].role != "system")
        s += "<|im_start|>system\n" + tmpl.default_system + "<|im_end|>\n";
      for (const ChatMessage& m : messages) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_assistant) s += "<|im_start|>assistant\n";
      break;
    case ChatFormat::llama3:
      s += "<|begin_of_text|>";
      for (const ChatMessage& m : messages)
        s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      if (add_assistant) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
  }
  *out = std::move(s);
  return Status::ok();
}

}  // namespace wt
