#include "chat_template.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace wt {

namespace {

// The text of the Jinja string literal whose opening quote is jinja[quote], up to its closing
// quote, with the escapes \n \t \r \\ \' \" resolved. False: no closing quote, or another
// escape (\u, \x, octal, ...: Python's, which this does not resolve; no default rather than a
// wrong one).
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
      default: return false;
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


// The length of the whitespace character (Python's str.isspace, which Jinja's trim strips)
// that starts at s[i], else 0: ASCII 9-13 and 28-32, and in UTF-8 U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
size_t space_at(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = b(0), c1 = b(1), c2 = b(2);  // 0 past the end: no character matches it
  if ((c >= 9 && c <= 13) || (c >= 28 && c <= 32)) return 1;
  if (c == 0xC2 && (c1 == 0x85 || c1 == 0xA0)) return 2;
  if (c == 0xE1 && c1 == 0x9A && c2 == 0x80) return 3;
  if (c == 0xE2 && c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF)) return 3;
  if (c == 0xE2 && c1 == 0x81 && c2 == 0x9F) return 3;
  if (c == 0xE3 && c1 == 0x80 && c2 == 0x80) return 3;
  return 0;
}

// The index just past the Jinja string literal whose opening quote is s[quote] (its escapes
// skipped), or npos when it is not closed.
size_t literal_end(const std::string& s, size_t quote) {
  for (size_t i = quote + 1; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == s[quote]) return i + 1;
  }
  return std::string::npos;
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A template's text as the [INST] recogniser compares it: the whitespace Jinja skips between
// tokens removed (one space kept between two words: `loop.first and x`), and each string
// literal's quotes made single quotes where its text holds none, so that `{{- " " +
// message["content"]|trim + eos_token}}` reads `{{-' '+message['content']|trim+eos_token}}`.
// Escapes inside literals stay as written; an unclosed literal ends the text.
std::string compact_jinja(const std::string& j) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < j.size();) {
    const char c = j[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true, ++i;
      continue;
    }
    if (space && !out.empty() && word_char(out.back()) && word_char(c)) out += ' ';
    space = false;
    if (c != '\'' && c != '"') {
      out += c, ++i;
      continue;
    }
    const size_t end = literal_end(j, i);
    if (end == std::string::npos) break;
    const std::string body = j.substr(i + 1, end - i - 2);
    const char q = body.find('\'') == std::string::npos ? '\'' : c;
    out += q, out += body, out += q;
    i = end;
  }
  return out;
}

// The expressions of a compacted template's {{ }} tags, without their whitespace-control dashes.
std::vector<std::string> jinja_expressions(const std::string& c) {
  std::vector<std::string> out;
  for (size_t at = c.find("{{"); at != std::string::npos; at = c.find("{{", at)) {
    size_t i = at + 2;
    if (i < c.size() && c[i] == '-') ++i;
    const size_t begin = i;
    while (i + 1 < c.size() && !(c[i] == '}' && c[i + 1] == '}')) {
      if (c[i] != '\'' && c[i] != '"') {
        ++i;
        continue;
      }
      i = literal_end(c, i);
      if (i == std::string::npos) return out;
    }
    if (i + 1 >= c.size()) break;
    const size_t end = i > begin && c[i - 1] == '-' ? i - 1 : i;
    out.push_back(c.substr(begin, end - begin));
    at = i + 2;
  }
  return out;
}

Status unknown_inst(const char* what) {
  return error(WT_ERR_UNSUPPORTED, std::string("an [INST] chat template whose ") + what +
                                       " Whittle does not recognise (supported: Llama 2 chat's, Mistral "
                                       "Instruct v0.1-v0.3's and Mixtral's)");
}

// Llama 2 chat and Mistral Instruct (InstStyle): the spellings of their published templates,
// matched expression by expression; a template that writes any of them otherwise is refused.
Status parse_inst(const std::string& jinja, InstStyle* st) {
  const std::string c = compact_jinja(jinja);
  const std::vector<std::string> ex = jinja_expressions(c);
  const auto has = [&](const std::string& e) { return std::find(ex.begin(), ex.end(), e) != ex.end(); };
  *st = InstStyle{};
  if (c.find("<<SYS>>") != std::string::npos) {  // Llama 2: a system block in the first user turn
    if (!has("bos_token+'[INST] '+content.strip()+' [/INST]'")) return unknown_inst("user turn");
    if (!has("' '+content.strip()+' '+eos_token")) return unknown_inst("reply");
    if (c.find("set content='<<SYS>>\\n'+system_message+'\\n<</SYS>>\\n\\n'+message['content']") ==
            std::string::npos ||
        c.find("set system_message='") != std::string::npos)  // a default system prompt of its own
      return unknown_inst("system message");
    *st = {.open = "[INST] ", .close = " [/INST]", .bos_every_turn = true, .trim_user = true, .trim_reply = true,
           .reply_open = " ", .reply_close = " ", .reply_tail = "", .system = InstStyle::System::first_user,
           .system_open = "<<SYS>>\n", .system_close = "\n<</SYS>>\n\n"};
    return Status::ok();
  }
  for (const char* open : {"[INST] ", " [INST] ", "[INST]"})
    for (const char* close : {" [/INST]", "[/INST]"})
      if (has(std::string("'") + open + "'+message['content']+'" + close + "'")) st->open = open, st->close = close;
  if (st->open.empty() || !has("bos_token")) return unknown_inst("user turn");
  struct Reply {
    const char* expr;
    const char* open;
    bool trim;
    const char* tail;
  };
  int replies = 0;
  for (const Reply& r : {Reply{"message['content']+eos_token", "", false, ""},            // Mixtral
                         Reply{"message['content']+eos_token+' '", "", false, " "},       // Mistral v0.1
                         Reply{"' '+message['content']+eos_token", " ", false, ""},       // v0.2
                         Reply{"' '+message['content']|trim+eos_token", " ", true, ""}})  // v0.3
    if (has(r.expr)) st->reply_open = r.open, st->trim_reply = r.trim, st->reply_tail = r.tail, ++replies;
  if (replies != 1) return unknown_inst("reply");
  // A system message: open + system_message + a literal + content + close, in the user turn
  // the condition beside it names.
  const std::string head = "'" + st->open + "'+system_message+", tail = "+message['content']+'" + st->close + "'";
  bool system_turn = false;
  for (const std::string& e : ex) {
    if (e.size() <= head.size() + tail.size() || e.compare(0, head.size(), head) != 0 ||
        e.compare(e.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    const std::string sep = e.substr(head.size(), e.size() - head.size() - tail.size());
    system_turn = sep[0] == '\'' && literal_end(sep, 0) == sep.size() && jinja_literal(sep, 0, &st->system_close);
  }
  if (!system_turn) {
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

std::string jinja_trim(const std::string& s) {
  size_t begin = 0, end = s.size();
  for (size_t n; begin < end && (n = space_at(s, begin)) > 0;) begin += n;
  // From the end: the character that ends there starts at most 3 bytes before.
  for (bool more = true; more && end > begin;) {
    more = false;
    for (size_t len = 1; len <= 3 && len <= end - begin; ++len)
      if (space_at(s, end - len) == len) {
        end -= len;
        more = true;
        break;
      }
  }
  return s.substr(begin, end - begin);
}

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
  // tag or, without it, the EOS text. Their three turn expressions, exactly.
  if (jinja.find("<|end|>") != std::string::npos && jinja.find("<|user|>") != std::string::npos) {
    const std::string c = compact_jinja(jinja);
    const std::vector<std::string> ex = jinja_expressions(c);
    for (const char* role : {"system", "user", "assistant"})
      if (std::find(ex.begin(), ex.end(), std::string("'<|") + role + "|>\\n'+message['content']+'<|end|>\\n'") ==
          ex.end())
        return error(WT_ERR_UNSUPPORTED, std::string("a Phi-3 chat template whose ") + role +
                                             " turn Whittle does not recognise");
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
    const bool here = system && ((st.system == InstStyle::System::first_user && i == first) ||
                                 (st.system == InstStyle::System::last_message && i + 1 == messages.size()) ||
                                 (st.system == InstStyle::System::last_user && i == last_user));
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
