#include "chat_template.h"

#include <algorithm>
#include <ctime>
#include <utility>

#include "jinja.h"
#include "jinja_json.h"
#include "jinja_text.h"  // jinja_trim

namespace wt {

namespace {

Status render(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
              const JinjaDict* vars, const JinjaRenderOptions& options, std::string* out) {
  // Built by emplace_back, not from initializer lists: GCC before 13 (JetPack 6's 11) leaks a
  // list's finished elements when a later one throws (bad_alloc; its PR 66139), which the
  // aarch64 build's alloc-failure test sees.
  JinjaList list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    // The members in the caller's order (a template may walk them: items(), tojson); an extra
    // member made undefined (the check of dropped tool calls) is left out.
    JinjaDict d;
    const size_t n = m.extra.size() + 2;
    d.reserve(n);
    for (size_t k = 0, e = 0; k < n; ++k) {
      if (k == m.role_at) {
        d.emplace_back("role", JinjaValue::string(m.role));
      } else if (k == m.content_at) {
        if (m.content_kind == ChatMessage::Content::text) d.emplace_back("content", JinjaValue::string(m.content));
        if (m.content_kind == ChatMessage::Content::none) d.emplace_back("content", JinjaValue::none());
      } else if (e < m.extra.size()) {
        const auto& member = m.extra[e++];
        if (!member.second.is(JinjaValue::Kind::undefined)) d.push_back(member);  // lists and dicts shared
      }
    }
    list.push_back(JinjaValue::of_dict(std::move(d)));
  }
  JinjaDict globals;  // the names of kSetByRender, which no variable may have
  globals.reserve(6 + (vars ? vars->size() : 0));
  globals.emplace_back("messages", JinjaValue::of_list(std::move(list)));
  globals.emplace_back("add_generation_prompt", JinjaValue::boolean(add_assistant));
  globals.emplace_back("bos_token", JinjaValue::string(tmpl.bos_token));
  globals.emplace_back("eos_token", JinjaValue::string(tmpl.eos_token));
  globals.emplace_back("raise_exception", JinjaValue::function("raise_exception"));
  globals.emplace_back("strftime_now", JinjaValue::function("strftime_now"));
  if (vars) globals.insert(globals.end(), vars->begin(), vars->end());  // names checked by read_chat_vars
  // tools and documents stay undefined unless given (transformers passes None: the templates
  // that test `tools is defined` then fail, Phi-4-mini's; llama.cpp leaves them out too).
  return jinja_render(*tmpl.program, globals, options, out);
}

// What strftime_now formats: `today` ("06 Dec 2026", English month names as the C
// locale's %b), or the local date now.
Status read_today(const std::string* today, std::tm* now) {
  if (today) {
    const char* end = strptime(today->c_str(), "%d %b %Y", now);
    const int day = now->tm_mday;
    const std::time_t t = timegm(now);  // fills the weekday and the day of the year
    gmtime_r(&t, now);
    if (!end || *end != '\0' || now->tm_mday != day)  // 31 Feb would roll over to March
      return error(WT_ERR_INVALID_ARGUMENT, "a date not written as \"06 Dec 2026\": " + *today);
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, now);
  }
  return Status::ok();
}

// The first render, as transformers renders: all of render_chat_template, and what
// apply_chat_template checks.
Status first_render(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                    const std::string* today, const JinjaDict* vars, JinjaRenderOptions* options, std::string* out) {
  if (!tmpl.program) return error(WT_ERR_UNSUPPORTED, "no chat template");
  WT_TRY(read_today(today, &options->now));
  return render(tmpl, messages, add_assistant, vars, *options, out);
}

// A call's arguments given as a string that holds a JSON object (OpenAI's API writes them so)
// go in as that object, as vLLM and llama.cpp pass them: templates write a call's arguments
// with `tojson` (Qwen2.5's, Llama 3.x's), which would show the model the string quoted,
// `"arguments": "{\"city\": \"Paris\"}"`, not the object its own calls hold, or walk their
// items (Qwen3-Coder's). Other strings stay strings. The calls (a list of dicts) are read
// where templates read them: under "function", or on the call itself.
JinjaValue string_arguments_as_objects(const JinjaValue& calls) {
  // A copy of the dict `holder` with its member `key` set to `value`.
  const auto with_member = [](const JinjaValue& holder, const char* key, JinjaValue value) {
    JinjaDict d = *holder.dict;
    for (auto& member : d)
      if (member.first == key) member.second = std::move(value);
    return JinjaValue::of_dict(std::move(d));
  };
  // holder (a call or its "function") with the arguments as an object, or false.
  const auto replaced = [&](const JinjaValue& holder, JinjaValue* with) {
    const JinjaValue* args = holder.find("arguments");
    JinjaValue object;
    if (!args || !args->is(JinjaValue::Kind::string) || !jinja_from_json(args->s, &object) ||
        !object.is(JinjaValue::Kind::dict))
      return false;
    *with = with_member(holder, "arguments", std::move(object));
    return true;
  };
  JinjaList list = *calls.list;
  bool any = false;
  for (JinjaValue& call : list) {
    JinjaValue with;
    const JinjaValue* function = call.find("function");
    if (function && function->is(JinjaValue::Kind::dict) && replaced(*function, &with)) {
      call = with_member(call, "function", std::move(with));
      any = true;
    } else if (replaced(call, &with)) {
      call = std::move(with);
      any = true;
    }
  }
  return any ? JinjaValue::of_list(std::move(list)) : calls;
}

// The messages with string_arguments_as_objects in *out; false where no call changes.
bool objects_for_string_arguments(const std::vector<ChatMessage>& messages, std::vector<ChatMessage>* out) {
  bool changed = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    for (size_t e = 0; e < messages[i].extra.size(); ++e) {
      const auto& [name, value] = messages[i].extra[e];
      if (name != "tool_calls" || !value.is(JinjaValue::Kind::list)) continue;  // lists of dicts (read_chat_messages)
      JinjaValue calls = string_arguments_as_objects(value);
      if (calls.list == value.list) continue;
      if (!changed) out->assign(messages.begin(), messages.end());
      changed = true;
      (*out)[i].extra[e].second = std::move(calls);
    }
  }
  return changed;
}

}  // namespace

Status parse_chat_template(const std::string& jinja, const std::string& bos_token, const std::string& eos_token,
                           ChatTemplate* out) {
  out->program.reset();
  if (jinja.empty()) return error(WT_ERR_UNSUPPORTED, "the model has no chat template (tokenizer.chat_template)");
  // Rendered as "" the EOS text would vanish from the end of every turn: refused instead. (Read
  // from the text: a template that only names it in a comment is refused too, and none does.)
  if (eos_token.empty() && jinja.find("eos_token") != std::string::npos)
    return error(WT_ERR_UNSUPPORTED, "the chat template writes eos_token, and the model has no EOS token");
  auto program = std::make_shared<JinjaProgram>();
  const Status parsed = jinja_parse(jinja, program.get());
  if (!parsed) return error(WT_ERR_UNSUPPORTED, "the chat template cannot be run: " + parsed.message());
  out->program = std::move(program);
  out->bos_token = bos_token;
  out->eos_token = eos_token;
  return Status::ok();
}

Status check_chat_roles(const std::vector<ChatMessage>& messages) {
  for (const ChatMessage& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      return error(WT_ERR_INVALID_ARGUMENT, "unknown chat role '" + m.role + "'");
  }
  return Status::ok();
}

Status apply_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                           std::string* out, const std::string* today, const JinjaDict* vars) {
  WT_TRY(check_chat_roles(messages));
  JinjaRenderOptions options;
  std::string text;
  // String arguments as objects; as given where the template fails with the objects and not
  // with the strings (DeepSeek-R1's adds the arguments to a string).
  std::vector<ChatMessage> with_objects;
  bool objects = objects_for_string_arguments(messages, &with_objects);
  if (const Status st = first_render(tmpl, objects ? with_objects : messages, add_assistant, today, vars, &options,
                                     &text);
      !st) {
    if (!objects) return st;
    objects = false;
    text.clear();
    // Failing both ways: the failure as given, and the other where it differs (the one that
    // names the template's real trouble may be either).
    if (const Status given = first_render(tmpl, messages, add_assistant, today, vars, &options, &text); !given)
      return given.message() == st.message()
                 ? given
                 : error(given.code(), given.message() + " (with the calls' arguments as objects: " + st.message() + ")");
  }
  const std::vector<ChatMessage>& used = objects ? with_objects : messages;

  // Each class of message once: its role, its tool_calls (calls_state), and for a system
  // message whether it comes first.
  struct Kind {
    std::string role;
    bool first_system;
    int calls;
    bool operator==(const Kind&) const = default;
  };
  std::vector<Kind> seen;
  std::vector<ChatMessage> changed(used);  // copied once; each check puts back what it changed
  std::string other;
  for (size_t i = 0; i < used.size(); ++i) {
    const ChatMessage& m = used[i];
    if (jinja_trim(m.content).empty()) continue;  // dropping whitespace loses nothing
    const Kind kind{m.role, m.role == "system" && i == 0, m.calls_state()};
    bool checked = false;
    for (const auto& k : seen) checked |= k == kind;
    if (checked) continue;
    seen.push_back(kind);
    // Dropped: the text is the same with its content emptied (the rest as it was) and, unless
    // the template fails then, with other text there (its content and " x"). Emptied alone
    // would refuse the reasoning Qwen3 strips from an old reply; the other text is written.
    // (Removing the message instead would miss the text Llama 3.1's and Mistral's templates
    // drop beside a tool call: the call goes with it.)
    changed[i].content.clear();
    other.clear();
    bool same = render(tmpl, changed, add_assistant, vars, options, &other) && other == text;
    if (same) {
      changed[i].content = m.content + " x";
      other.clear();
      if (render(tmpl, changed, add_assistant, vars, options, &other)) same = other == text;
    }
    changed[i].content = m.content;
    if (same)
      return error(WT_ERR_UNSUPPORTED, "this model's chat template writes nothing for message " + std::to_string(i) +
                                           " (" + m.role + "): it would be dropped without a word");
  }
  // Tool calls: a template without them (ChatML's, Gemma's) writes the same text without them.
  const auto calls = std::find_if(used.begin(), used.end(), [](const ChatMessage& m) { return m.has_calls(); });
  if (calls != used.end()) {
    const size_t i = static_cast<size_t>(calls - used.begin());
    for (auto& member : changed[i].extra)
      if (member.first == "tool_calls") member.second = JinjaValue{};  // undefined: left out
    other.clear();
    if (render(tmpl, changed, add_assistant, vars, options, &other) && other == text)
      return error(WT_ERR_UNSUPPORTED, "this model's chat template writes nothing of message " + std::to_string(i) +
                                           "'s tool_calls: they would be dropped without a word");
  }
  *out = std::move(text);
  return Status::ok();
}

Status render_chat_template(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                            std::string* out, const std::string* today, const JinjaDict* vars) {
  JinjaRenderOptions options;
  return first_render(tmpl, messages, add_assistant, today, vars, &options, out);
}

Status read_chat_vars(std::string_view json, JinjaDict* out) {
  // Tool lists are kilobytes; the bound keeps what a caller's mistake allocates to tens of MiB.
  if (json.size() > kMaxChatVarsBytes)
    return error(WT_ERR_INVALID_ARGUMENT, "chat template variables: more than 1 MiB of JSON (" +
                                              std::to_string(json.size()) + " bytes)");
  JinjaValue v;
  if (const Status st = jinja_from_json(json, &v); !st)
    return error(st.code(), "chat template variables: " + st.message());
  if (!v.is(JinjaValue::Kind::dict))
    return error(WT_ERR_INVALID_ARGUMENT, "chat template variables: a JSON object expected, as {\"enable_thinking\": false}");
  if (v.dict->size() > kMaxChatVars)
    return error(WT_ERR_INVALID_ARGUMENT, "chat template variables: more than " + std::to_string(kMaxChatVars) + " names");
  for (const auto& [name, value] : *v.dict) {
    for (const char* set : kSetByRender) {
      if (name == set)
        return error(WT_ERR_INVALID_ARGUMENT, "chat template variables: '" + name +
                                                  "' is set by the call or the model, not by a variable");
    }
  }
  *out = std::move(*v.dict);  // the only reference
  return Status::ok();
}

int ChatMessage::calls_state() const {
  for (const auto& [name, value] : extra) {
    if (name != "tool_calls") continue;
    if (!value.is(JinjaValue::Kind::list)) return 1;  // null (read_chat_messages refuses the rest)
    return value.list->empty() ? 2 : 3;
  }
  return 0;
}

bool ChatMessage::has_calls() const { return calls_state() == 3; }

Status read_chat_messages(std::string_view json, std::vector<ChatMessage>* out) {
  out->clear();
  JinjaValue v;
  if (const Status st = jinja_from_json(json, &v); !st) return error(st.code(), "chat messages: " + st.message());
  const auto bad = [](size_t i, const std::string& what) {
    return error(WT_ERR_INVALID_ARGUMENT, "chat messages: message " + std::to_string(i) + " " + what);
  };
  if (!v.is(JinjaValue::Kind::list))
    return error(WT_ERR_INVALID_ARGUMENT, "chat messages: a JSON array of messages expected, as "
                                          "[{\"role\": \"user\", \"content\": \"Hi\"}]");
  out->reserve(v.list->size());
  for (size_t i = 0; i < v.list->size(); ++i) {
    const JinjaValue& item = (*v.list)[i];
    if (!item.is(JinjaValue::Kind::dict)) return bad(i, "is not a JSON object");
    ChatMessage m;
    m.content_kind = ChatMessage::Content::absent;
    m.role_at = m.content_at = UINT32_MAX;
    for (uint32_t k = 0; k < item.dict->size(); ++k) {
      const auto& [name, value] = (*item.dict)[k];
      if (name == "role") {
        if (!value.is(JinjaValue::Kind::string)) return bad(i, "has a role that is not a string");
        m.role = value.s;
        m.role_at = k;
      } else if (name == "content") {
        m.content_at = k;
        if (value.is(JinjaValue::Kind::string)) {
          m.content = value.s;
          m.content_kind = ChatMessage::Content::text;
        } else if (value.is(JinjaValue::Kind::none)) {
          m.content_kind = ChatMessage::Content::none;
        } else {
          return bad(i, "has a content that is neither a string nor null (content parts are not supported)");
        }
      } else {
        // Calls are a list of objects or null, as every template that writes them reads them:
        // anything else is the caller's mistake, not the template's failure.
        if (name == "tool_calls" && !value.is(JinjaValue::Kind::none)) {
          bool objects = value.is(JinjaValue::Kind::list);
          for (size_t c = 0; objects && c < value.list->size(); ++c) objects = (*value.list)[c].is(JinjaValue::Kind::dict);
          if (!objects) return bad(i, "has tool_calls that are not a list of objects");
        }
        m.extra.emplace_back(name, value);
      }
    }
    if (m.role_at == UINT32_MAX) return bad(i, "has no role");
    out->push_back(std::move(m));
  }
  return Status::ok();
}

}  // namespace wt
