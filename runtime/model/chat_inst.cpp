// The [INST] family: Llama 2 chat, Mistral Instruct v0.1-v0.3, Mixtral (chat_families.h).
#include <algorithm>
#include <iterator>
#include <utility>

#include "chat_families.h"

namespace wt {

namespace {

Status unknown_inst(const char* what) {
  return error(WT_ERR_UNSUPPORTED, std::string("an [INST] chat template whose ") + what +
                                       " Whittle does not recognise (supported: Llama 2 chat's, Mistral "
                                       "Instruct v0.1-v0.3's, Mixtral's and Mistral Nemo's)");
}

// Mistral v0.3's and Nemo's tool expressions (Nemo's markers without the space), which write
// only when tools are given or for tool calls and results: Whittle formats neither (a tool
// message is refused), so they never write here.
constexpr const char* kMistralToolExpressions[] = {
    "'[AVAILABLE_TOOLS] ['", "'{\"type\": \"function\", \"function\": {'", "'\"'+key+'\": \"'+val+'\"'",
    "'\"'+key+'\": '+val|tojson", "', '", "'}}'", "']'", "'[/AVAILABLE_TOOLS]'", "'[TOOL_CALLS] ['", "out[:-1]",
    "', \"id\": \"'+tool_call.id+'\"}'", "']'+eos_token", "'[TOOL_RESULTS] {\"content\": '+content|string+', '",
    "'\"call_id\": \"'+message.tool_call_id+'\"}[/TOOL_RESULTS]'", "'[AVAILABLE_TOOLS]['", "'[TOOL_CALLS]['",
    "'[TOOL_RESULTS]{\"content\": '+content|string+', '"};

// Every expression of the template is one of `known` (each of `once` at most once), a
// raise_exception(...) or one of Mistral's tool expressions.
bool only_known_expressions(const std::vector<std::string>& ex, std::vector<std::string> known,
                            const std::vector<std::string>& once) {
  known.insert(known.end(), std::begin(kMistralToolExpressions), std::end(kMistralToolExpressions));
  for (const std::string& e : once)
    if (std::count(ex.begin(), ex.end(), e) > 1) return false;
  return expressions_within(ex, known);
}

}  // namespace

// The spellings of their published templates, matched expression by expression; a template
// that writes any of them otherwise, or writes anything more, is refused.
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

}  // namespace wt
