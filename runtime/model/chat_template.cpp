#include "chat_template.h"

namespace wt {

namespace {

// The text of the Jinja string literal whose opening quote is jinja[quote], up to its closing
// quote, with Jinja's escapes (those of Python strings) resolved. False: no closing quote.
bool jinja_literal(const std::string& jinja, size_t quote, std::string* out) {
  const char q = jinja[quote];
  out->clear();
  for (size_t i = quote + 1; i < jinja.size(); ++i) {
    const char c = jinja[i];
    if (c == q) return true;
    if (c != '\\' || i + 1 == jinja.size()) {
      out->push_back(c);
      continue;
    }
    const char e = jinja[++i];
    switch (e) {
      case 'n': out->push_back('\n'); break;
      case 't': out->push_back('\t'); break;
      case 'r': out->push_back('\r'); break;
      case '\\': case '\'': case '"': out->push_back(e); break;
      default: out->push_back('\\'); out->push_back(e); break;  // kept as written
    }
  }
  return false;
}

// ChatML templates that open with a default system turn when the conversation has none:
// SmolLM2's `{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n
// You are ...<|im_end|>\n' }}` (a newline in the template's text) and Qwen2.5's `{%- if
// messages[0]['role'] == 'system' %} ... {%- else %}{{- '<|im_start|>system\\nYou are
// Qwen, ...<|im_end|>\\n' }}` (Jinja's escape; its tools branch opens the same turn in
// pieces). The default is the first string literal that holds a whole system turn with no
// variable in it: from `<|im_start|>system` and a newline to `<|im_end|>`.
std::string chatml_default_system(const std::string& jinja) {
  bool tests_system = false;
  for (const char* t : {"!= 'system'", "== 'system'", "!= \"system\"", "== \"system\""})
    tests_system |= jinja.find(t) != std::string::npos;
  if (!tests_system) return "";
  const std::string open = "<|im_start|>system\n";
  std::string literal;
  for (size_t at = jinja.find("<|im_start|>system"); at != std::string::npos;
       at = jinja.find("<|im_start|>system", at + 1)) {
    if (at == 0 || (jinja[at - 1] != '\'' && jinja[at - 1] != '"') || !jinja_literal(jinja, at - 1, &literal)) continue;
    if (literal.compare(0, open.size(), open) != 0) continue;
    const size_t end = literal.find("<|im_end|>");
    if (end == std::string::npos) continue;  // the turn goes on past this literal
    return literal.substr(open.size(), end - open.size());
  }
  return "";
}

// Jinja's `trim` as Llama 3's template applies it to every content (ASCII whitespace; Python's
// str.strip also takes Unicode spaces, which no chat template's tests here use).
std::string trimmed(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  return b == std::string::npos ? std::string() : s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

Status parse_chat_template(const std::string& jinja, ChatTemplate* out) {
  if (jinja.empty()) return error(WT_ERR_UNSUPPORTED, "the model has no chat template (tokenizer.chat_template)");
  if (jinja.find("<|im_start|>") != std::string::npos) {
    out->format = ChatFormat::chatml;
    out->default_system = chatml_default_system(jinja);
    out->tool_responses = jinja.find("<tool_response>") != std::string::npos;
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
      for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role != "tool" || !tmpl.tool_responses) {
          s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
          continue;
        }
        if (i == 0 || messages[i - 1].role != "tool") s += "<|im_start|>user";
        s += "\n<tool_response>\n" + m.content + "\n</tool_response>";
        if (i + 1 == messages.size() || messages[i + 1].role != "tool") s += "<|im_end|>\n";
      }
      if (add_assistant) s += "<|im_start|>assistant\n";
      break;
    case ChatFormat::llama3:
      s += "<|begin_of_text|>";
      for (const ChatMessage& m : messages)
        s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trimmed(m.content) + "<|eot_id|>";
      if (add_assistant) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
  }
  *out = std::move(s);
  return Status::ok();
}

}  // namespace wt
