// Llama 3.1-3.3's chat templates (chat_families.h): before the conversation a system block of
// their own, "Cutting Knowledge Date: December 2023\nToday Date: <date>\n\n" and the first
// system message trimmed; each content trimmed; a tool result an "ipython" turn of its content
// as JSON (the template's `content is iterable` holds for a string, so transformers' tojson
// quotes it).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iterator>

#include "chat_families.h"

namespace wt {

namespace {

// Every expression the published templates (Llama-3.2-3B-Instruct's; 3.1's builtin tools)
// hold. Those past kLlama31Required write only with tools or tool calls, which Whittle never
// passes (a tool message is a result, written by apply_llama31), or raise.
constexpr const char* kLlama31Expressions[] = {
    "bos_token",
    "'<|start_header_id|>system<|end_header_id|>\\n\\n'",
    "'Cutting Knowledge Date: December 2023\\n'",
    "'Today Date: '+date_string+'\\n\\n'",
    "system_message",
    "'<|eot_id|>'",
    "'<|start_header_id|>'+message['role']+'<|end_header_id|>\\n\\n'+message['content']|trim+'<|eot_id|>'",
    "'<|start_header_id|>ipython<|end_header_id|>\\n\\n'",
    "message.content|tojson",
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n'",
    // tools given, tool calls, builtin tools: never written here
    "'Environment: ipython\\n'",
    "'You have access to the following functions. To call a function, please respond with JSON for a function call.'",
    "'Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.'",
    "'Do not use variables.\\n\\n'",
    "t|tojson(indent=4)",
    "'\\n\\n'",
    "'<|start_header_id|>user<|end_header_id|>\\n\\n'",
    "'Given the following functions, please respond with a JSON for a function call '",
    "'with its proper arguments that best answers the given prompt.\\n\\n'",
    "first_user_message+'<|eot_id|>'",
    "'{\"name\": \"'+tool_call.name+'\", '",
    "'\"parameters\": '",
    "tool_call.arguments|tojson",
    "'}'",
    "message.content",
    "'Tools: '+builtin_tools|reject('equalto','code_interpreter')|join(', ')+'\\n\\n'",
    "'<|python_tag|>'+tool_call.name+'.call('",
    "arg_name+'=\"'+arg_val+'\"'",
    "', '",
    "')'",
    "'<|eom_id|>'",
};
constexpr size_t kLlama31Required = 10;

Status unknown_llama31(const std::string& what) {
  return error(WT_ERR_UNSUPPORTED, "a Llama 3.1 chat template whose " + what + " Whittle does not recognise");
}

// strftime("%d %b %Y") of the local date in the C locale, as transformers' strftime_now gives it.
std::string local_date() {
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  if (!localtime_r(&now, &t)) return "26 Jul 2024";  // no clock: the templates' own fallback
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02d %s %d", t.tm_mday, kMonths[t.tm_mon % 12], t.tm_year + 1900);
  return buf;
}

}  // namespace

Status parse_llama31(const std::string& jinja, ChatTemplate* out) {
  if (writes_raw_text(jinja)) return unknown_llama31("text outside its expressions");
  const std::string c = compact_jinja(jinja);
  const std::vector<std::string> ex = jinja_expressions(c);
  for (size_t i = 0; i < kLlama31Required; ++i)
    if (std::find(ex.begin(), ex.end(), kLlama31Expressions[i]) == ex.end())
      return unknown_llama31(std::string("missing ") + kLlama31Expressions[i] + ", so a turn");
  if (!expressions_within(ex, {std::begin(kLlama31Expressions), std::end(kLlama31Expressions)}))
    return unknown_llama31("expressions (one more than the published templates')");
  // The statements that place what the expressions write: the first system message taken out
  // of the conversation, every message after it, the generation prompt behind its flag.
  for (const char* statement : {"set system_message=messages[0]['content']|trim%}", "set messages=messages[1:]%}",
                                "for message in messages%}", "if add_generation_prompt%}"})
    if (c.find(statement) == std::string::npos) return unknown_llama31(std::string("statement ") + statement);
  // The date: strftime_now's where the template asks for it (transformers defines it), else
  // the template's literal ("26 Jul 2024": Llama 3.1's only date).
  const std::string set = "set date_string='";
  const size_t at = c.find(set);
  if (at == std::string::npos || !jinja_literal(c, at + set.size() - 1, &out->date))
    return unknown_llama31("date");
  out->date_from_clock = c.find("set date_string=strftime_now('%d %b %Y')") != std::string::npos;
  if (!out->date_from_clock && c.find("strftime_now") != std::string::npos) return unknown_llama31("date");
  out->llama3_system_block = true;
  return Status::ok();
}

Status apply_llama31(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                     const std::string* today, std::string* out) {
  // The template reads messages[0]['role']: Jinja raises on an empty conversation.
  if (messages.empty()) return error(WT_ERR_INVALID_ARGUMENT, "this model's chat template needs a message");
  std::string& s = *out;
  s += tmpl.bos_token + "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n";
  s += "Today Date: " + (!tmpl.date_from_clock ? tmpl.date : today ? *today : local_date()) + "\n\n";
  const bool system = messages[0].role == "system";
  if (system) s += jinja_trim(messages[0].content);
  s += "<|eot_id|>";
  for (size_t i = system ? 1 : 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool")
      s += "<|start_header_id|>ipython<|end_header_id|>\n\n" + json_string(m.content) + "<|eot_id|>";
    else
      s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + jinja_trim(m.content) + "<|eot_id|>";
  }
  if (add_assistant) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return Status::ok();
}

}  // namespace wt
