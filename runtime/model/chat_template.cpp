#include "chat_template.h"

#include <algorithm>
#include <utility>

#include "chat_families.h"

namespace wt {

namespace {

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


}  // namespace

bool expressions_within(const std::vector<std::string>& ex, const std::vector<std::string>& known) {
  for (const std::string& e : ex)
    if (e.compare(0, 16, "raise_exception(") != 0 && std::find(known.begin(), known.end(), e) == known.end())
      return false;
  return true;
}

Status recognise_chat_template(const std::string& jinja, const std::string& bos_token, const std::string& eos_token,
                               ChatTemplate* out) {
  if (jinja.empty()) return error(WT_ERR_UNSUPPORTED, "the model has no chat template (tokenizer.chat_template)");
  out->program.reset();
  out->eos_token = eos_token;
  out->bos_token = bos_token;
  out->system_prefix = false;
  out->system_sep.clear();
  out->skip_empty_system = false;
  out->llama3_system_block = out->date_from_clock = false;
  out->date.clear();
  if (jinja.find("<|im_start|>") != std::string::npos) {
    out->format = ChatFormat::chatml;
    out->default_system = chatml_default_system(jinja);
    out->tool_responses = jinja.find("<tool_response>") != std::string::npos;
    return Status::ok();
  }
  if (jinja.find("<|start_header_id|>") != std::string::npos) {
    out->format = ChatFormat::llama3;
    out->default_system.clear();
    out->tool_responses = false;
    // Llama 3.1-3.3 write a system block of their own; Llama 3's template does not.
    if (jinja.find("Cutting Knowledge Date") != std::string::npos) return parse_llama31(jinja, out);
    return Status::ok();
  }
  // Gemma: bos_token, then "<start_of_turn>" + role ("model" for the assistant) + "\n" +
  // content|trim + "<end_of_turn>\n" per turn. Gemma 3's puts a system message in front of
  // the first user turn's content, followed by a literal it names.
  if (jinja.find("<start_of_turn>") != std::string::npos) {
    out->format = ChatFormat::gemma;
    out->default_system.clear();
    out->tool_responses = false;
    const std::string set = "first_user_prefix = messages[0]['content'] + ";
    const size_t at = jinja.find(set);
    if (at != std::string::npos && at + set.size() < jinja.size() &&
        (jinja[at + set.size()] == '\'' || jinja[at + set.size()] == '"'))
      out->system_prefix = jinja_literal(jinja, at + set.size(), &out->system_sep);
    return Status::ok();
  }
  // Zephyr (TinyLlama-Chat, zephyr-7b): "<|role|>\n" + content + eos_token + "\n". Phi-3
  // writes the same role tags but ends turns with <|end|>, which this does not format.
  if (jinja.find("<|user|>") != std::string::npos && jinja.find("<|assistant|>") != std::string::npos &&
      jinja.find("eos_token") != std::string::npos && jinja.find("<|end|>") == std::string::npos) {
    if (eos_token.empty())
      return error(WT_ERR_UNSUPPORTED, "a Zephyr chat template ends turns with eos_token, and the model has none");
    out->format = ChatFormat::zephyr;
    out->default_system.clear();
    out->tool_responses = false;
    return Status::ok();
  }
  // Phi-3 and Phi-3.5: "<|role|>\n" + content + "<|end|>\n" per message, then the assistant's
  // tag or, without it, the EOS text: their expressions, exactly, and nothing more.
  if (jinja.find("<|end|>") != std::string::npos && jinja.find("<|user|>") != std::string::npos) {
    const std::string c = compact_jinja(jinja);
    const std::vector<std::string> ex = jinja_expressions(c);
    std::vector<std::string> known = {"'<|assistant|>\\n'", "eos_token"};
    for (const char* role : {"system", "user", "assistant"}) {
      known.push_back(std::string("'<|") + role + "|>\\n'+message['content']+'<|end|>\\n'");
      if (std::find(ex.begin(), ex.end(), known.back()) == ex.end())
        return error(WT_ERR_UNSUPPORTED, std::string("a Phi-3 chat template whose ") + role +
                                             " turn Whittle does not recognise");
    }
    for (const std::string& e : ex)
      if (std::count(ex.begin(), ex.end(), e) != 1 || std::find(known.begin(), known.end(), e) == known.end())
        return error(WT_ERR_UNSUPPORTED, "a Phi-3 chat template with an expression Whittle does not recognise: " + e);
    if (writes_raw_text(jinja))
      return error(WT_ERR_UNSUPPORTED, "a Phi-3 chat template that writes text outside its expressions");
    if (eos_token.empty())
      return error(WT_ERR_UNSUPPORTED, "a Phi-3 chat template ends a conversation with eos_token, and the model has none");
    out->format = ChatFormat::phi3;
    out->default_system.clear();
    out->tool_responses = false;
    out->skip_empty_system = c.find("message['role']=='system'and message['content']") != std::string::npos;
    return Status::ok();
  }
  // Llama 2 chat, Mistral Instruct and Mixtral: [INST] + user text + [/INST], then the reply.
  if (jinja.find("[INST]") != std::string::npos) {
    if (eos_token.empty())
      return error(WT_ERR_UNSUPPORTED, "an [INST] chat template ends replies with eos_token, and the model has none");
    out->format = ChatFormat::inst;
    out->default_system.clear();
    out->tool_responses = false;
    return parse_inst(jinja, &out->inst);
  }
  return error(WT_ERR_UNSUPPORTED, "unrecognised chat template (supported: ChatML, Llama 3, Zephyr, Gemma, Llama 2, "
                                   "Mistral, Phi-3); it "
                                   "begins: " + jinja.substr(0, 80));
}

Status parse_chat_template(const std::string& jinja, const std::string& bos_token, const std::string& eos_token,
                           ChatTemplate* out) {
  if (jinja.empty()) return error(WT_ERR_UNSUPPORTED, "the model has no chat template (tokenizer.chat_template)");
  const Status native = recognise_chat_template(jinja, bos_token, eos_token, out);
  if (native) return native;
  const Status run = compile_chat_jinja(jinja, &out->program);
  if (!run) return error(WT_ERR_UNSUPPORTED, native.message() + "; and it cannot be run: " + run.message());
  out->format = ChatFormat::jinja;  // bos_token and eos_token: set by recognise_chat_template
  return Status::ok();
}

Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                           std::string* out, const std::string* today) {
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
      if (tmpl.llama3_system_block) {
        WT_TRY(apply_llama31(tmpl, messages, add_assistant, today, &s));
        break;
      }
      s += "<|begin_of_text|>";
      for (const ChatMessage& m : messages)
        s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + jinja_trim(m.content) + "<|eot_id|>";
      if (add_assistant) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::zephyr:
      for (const ChatMessage& m : messages) {
        if (m.role == "tool") return error(WT_ERR_UNSUPPORTED, "this model's chat template has no tool role");
        s += "<|" + m.role + "|>\n" + m.content + tmpl.eos_token + "\n";
      }
      // The template writes it inside its loop (`loop.last`): nothing for no messages.
      if (add_assistant && !messages.empty()) s += "<|assistant|>\n";
      break;
    case ChatFormat::gemma: {
      const bool system = !messages.empty() && messages[0].role == "system";
      if (system && !tmpl.system_prefix)
        return error(WT_ERR_UNSUPPORTED, "this model's chat template has no system role");
      s += tmpl.bos_token;
      for (size_t i = system ? 1 : 0, turn = 0; i < messages.size(); ++i, ++turn) {
        const ChatMessage& m = messages[i];
        // The template's own test: user turns at even places, any other role at odd ones
        // (which it writes under its own name, "model" for the assistant).
        if ((m.role == "user") != (turn % 2 == 0))
          return error(WT_ERR_INVALID_ARGUMENT, "this model's chat template needs roles that alternate user, "
                                                "assistant, ... after an optional first system message");
        s += "<start_of_turn>" + (m.role == "assistant" ? std::string("model") : m.role) + "\n";
        if (turn == 0 && system) s += messages[0].content + tmpl.system_sep;
        s += jinja_trim(m.content) + "<end_of_turn>\n";
      }
      if (add_assistant) s += "<start_of_turn>model\n";
      break;
    }
    case ChatFormat::inst:
      WT_TRY(apply_inst(tmpl, messages, &s));
      break;
    case ChatFormat::phi3:
      for (const ChatMessage& m : messages) {
        if (m.role == "tool") return error(WT_ERR_UNSUPPORTED, "this model's chat template has no tool role");
        if (m.role == "system" && tmpl.skip_empty_system && m.content.empty()) continue;
        s += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      }
      s += add_assistant ? "<|assistant|>\n" : tmpl.eos_token;
      break;
    case ChatFormat::jinja:
      WT_TRY(apply_chat_jinja(tmpl, messages, add_assistant, today, &s));
      break;
  }
  *out = std::move(s);
  return Status::ok();
}

}  // namespace wt
