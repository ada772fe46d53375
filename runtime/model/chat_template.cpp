#include "chat_template.h"

#include <algorithm>
#include <utility>

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


Status unknown_inst(const char* what) {
  return error(WT_ERR_UNSUPPORTED, std::string("an [INST] chat template whose ") + what +
                                       " Whittle does not recognise (supported: Llama 2 chat's, Mistral "
                                       "Instruct v0.1-v0.3's and Mixtral's)");
}

// Mistral v0.3's tool expressions, which write only when tools are given or for tool calls
// and results: Whittle formats neither (a tool message is refused), so they never write here.
constexpr const char* kMistralToolExpressions[] = {
    "'[AVAILABLE_TOOLS] ['", "'{\"type\": \"function\", \"function\": {'", "'\"'+key+'\": \"'+val+'\"'",
    "'\"'+key+'\": '+val|tojson", "', '", "'}}'", "']'", "'[/AVAILABLE_TOOLS]'", "'[TOOL_CALLS] ['", "out[:-1]",
    "', \"id\": \"'+tool_call.id+'\"}'", "']'+eos_token", "'[TOOL_RESULTS] {\"content\": '+content|string+', '",
    "'\"call_id\": \"'+message.tool_call_id+'\"}[/TOOL_RESULTS]'"};

// Every expression of the template is one of `known` (each at most `once` where asked), a
// raise_exception(...) or one of Mistral's tool expressions: a template that writes anything
// else would write it where Whittle does not.
bool only_known_expressions(const std::vector<std::string>& ex, const std::vector<std::string>& known,
                            const std::vector<std::string>& once) {
  for (const std::string& e : ex) {
    if (e.compare(0, 16, "raise_exception(") == 0) continue;
    if (std::find(known.begin(), known.end(), e) != known.end()) continue;
    if (std::find(std::begin(kMistralToolExpressions), std::end(kMistralToolExpressions), e) !=
        std::end(kMistralToolExpressions))
      continue;
    return false;
  }
  for (const std::string& e : once)
    if (std::count(ex.begin(), ex.end(), e) > 1) return false;
  return true;
}

// Llama 2 chat and Mistral Instruct (InstStyle): the spellings of their published templates,
// matched expression by expression; a template that writes any of them otherwise, or writes
// anything more, is refused.
Status parse_inst(const std::string& jinja, InstStyle* st) {
  if (writes_raw_text(jinja)) return unknown_inst("text outside its expressions");
  const std::string c = compact_jinja(jinja);
  const std::vector<std::string> ex = jinja_expressions(c);
  const auto has = [&](const std::string& e) { return std::find(ex.begin(), ex.end(), e) != ex.end(); };
  *st = InstStyle{};
  if (c.find("<<SYS>>") != std::string::npos) {  // Llama 2: a system block in the first user turn
    const std::string user = "bos_token+'[INST] '+content.strip()+' [/INST]'";
    const std::string reply = "' '+content.strip()+' '+eos_token";
    // Some copies also write a system message at a reply's place; Whittle refuses one there.
    const std::string late_system = "'<<SYS>>\\n'+content.strip()+'\\n<</SYS>>\\n\\n'";
    if (!has(user)) return unknown_inst("user turn");
    if (!has(reply)) return unknown_inst("reply");
    if (c.find("set content='<<SYS>>\\n'+system_message+'\\n<</SYS>>\\n\\n'+message['content']") ==
            std::string::npos ||
        c.find("set system_message='") != std::string::npos)  // a default system prompt of its own
      return unknown_inst("system message");
    if (!only_known_expressions(ex, {user, reply, late_system}, {}))
      return unknown_inst("expressions (one more than Llama 2's)");
    *st = {.open = "[INST] ", .close = " [/INST]", .bos_every_turn = true, .trim_user = true, .trim_reply = true,
           .reply_open = " ", .reply_close = " ", .reply_tail = "", .system = InstStyle::System::first_user,
           .system_open = "<<SYS>>\n", .system_close = "\n<</SYS>>\n\n"};
    return Status::ok();
  }
  std::string user;
  for (const char* open : {"[INST] ", " [INST] ", "[INST]"})
    for (const char* close : {" [/INST]", "[/INST]"}) {
      const std::string e = std::string("'") + open + "'+message['content']+'" + close + "'";
      if (!has(e)) continue;
      if (!user.empty()) return unknown_inst("user turn (spelled two ways)");
      user = e, st->open = open, st->close = close;
    }
  if (user.empty() || !has("bos_token")) return unknown_inst("user turn");
  struct Reply {
    const char* expr;
    const char* open;
    bool trim;
    const char* tail;
  };
  std::string reply;
  for (const Reply& r : {Reply{"message['content']+eos_token", "", false, ""},            // Mixtral
                         Reply{"message['content']+eos_token+' '", "", false, " "},       // Mistral v0.1
                         Reply{"' '+message['content']+eos_token", " ", false, ""},       // v0.2
                         Reply{"' '+message['content']|trim+eos_token", " ", true, ""}})  // v0.3
    if (has(r.expr)) {
      if (!reply.empty()) return unknown_inst("reply (spelled two ways)");
      reply = r.expr, st->reply_open = r.open, st->trim_reply = r.trim, st->reply_tail = r.tail;
    }
  if (reply.empty()) return unknown_inst("reply");
  // A system message: open + system_message + a literal + content + close, in the user turn
  // the condition beside it names.
  const std::string head = "'" + st->open + "'+system_message+", tail = "+message['content']+'" + st->close + "'";
  std::string system;
  for (const std::string& e : ex) {
    if (e.size() <= head.size() + tail.size() || e.compare(0, head.size(), head) != 0 ||
        e.compare(e.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    const std::string sep = e.substr(head.size(), e.size() - head.size() - tail.size());
    if (!system.empty() || sep[0] != '\'' || literal_end(sep, 0) != sep.size() ||
        !jinja_literal(sep, 0, &st->system_close))
      return unknown_inst("system message");
    system = e;
  }
  if (!only_known_expressions(ex, {user, reply, system, "bos_token"}, {"bos_token"}))
    return unknown_inst("expressions (one more than Mistral's)");
  if (system.empty()) {
    if (c.find("system_message") != std::string::npos) return unknown_inst("system message");
    return Status::ok();  // Mistral v0.1 and Mixtral: no system role
  }
  int places = 0;
  for (const auto& [cond, place] : {std::pair{"loop.first and system_message is defined", InstStyle::System::first_user},
                                    std::pair{"loop.last and system_message is defined", InstStyle::System::last_message},
                                    std::pair{"(message==user_messages[-1])and system_message is defined",
                                              InstStyle::System::last_user}})
    if (c.find(cond) != std::string::npos) st->system = place, ++places;
  if (places != 1) return unknown_inst("system message's place");
  return Status::ok();
}

}  // namespace

Status parse_chat_template(const std::string& jinja, const std::string& bos_token, const std::string& eos_token,
                           ChatTemplate* out) {
  if (jinja.empty()) return error(WT_ERR_UNSUPPORTED, "the model has no chat template (tokenizer.chat_template)");
  out->eos_token = eos_token;
  out->bos_token = bos_token;
  out->system_prefix = false;
  out->system_sep.clear();
  out->skip_empty_system = false;
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

namespace {

// The generation prompt is the user turn's own close: these templates ignore add_assistant.
Status apply_inst(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, std::string* out) {
  const InstStyle& st = tmpl.inst;
  const bool system = !messages.empty() && messages[0].role == "system";
  for (const ChatMessage& m : messages)
    if (m.role == "tool") return error(WT_ERR_UNSUPPORTED, "this model's chat template has no tool role");
  if (system && st.system == InstStyle::System::none)
    return error(WT_ERR_UNSUPPORTED, "this model's chat template has no system role");
  // Llama 2's and Mistral v0.2's and v0.3's templates index messages[0]: Jinja raises on none.
  if (messages.empty()) return error(WT_ERR_INVALID_ARGUMENT, "this model's chat template needs a message");
  const size_t first = system ? 1 : 0;
  size_t last_user = messages.size();
  for (size_t i = first; i < messages.size(); ++i) {
    if (messages[i].role != ((i - first) % 2 == 0 ? "user" : "assistant"))
      return error(WT_ERR_INVALID_ARGUMENT, "this model's chat template needs roles that alternate user, "
                                            "assistant, ... after an optional first system message");
    if (messages[i].role == "user") last_user = i;
  }
  std::string& s = *out;
  if (!st.bos_every_turn) s += tmpl.bos_token;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "assistant") {
      s += st.reply_open + (st.trim_reply ? jinja_trim(m.content) : m.content) + st.reply_close + tmpl.eos_token +
           st.reply_tail;
      continue;
    }
    std::string content = m.content;
    // `message == user_messages[-1]` compares whole messages: every user turn equal to the last.
    const bool here = system && ((st.system == InstStyle::System::first_user && i == first) ||
                                 (st.system == InstStyle::System::last_message && i + 1 == messages.size()) ||
                                 (st.system == InstStyle::System::last_user && m.content == messages[last_user].content));
    if (here) content = st.system_open + messages[0].content + st.system_close + content;
    if (st.bos_every_turn) s += tmpl.bos_token;
    s += st.open + (st.trim_user ? jinja_trim(content) : content) + st.close;
  }
  return Status::ok();
}

}  // namespace

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
  }
  *out = std::move(s);
  return Status::ok();
}

}  // namespace wt
