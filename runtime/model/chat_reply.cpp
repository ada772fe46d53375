#include "chat_reply.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "jinja_builtins.h"  // kJinjaMaxNesting
#include "jinja_json.h"
#include "utf8_stream.h"

namespace wt {

namespace {

constexpr std::string_view kSpace = " \t\n\r";

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(kSpace);
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(kSpace) + 1 - a);
}

size_t skip_space(std::string_view s, size_t pos) {
  const size_t p = s.find_first_not_of(kSpace, pos);
  return p == std::string_view::npos ? s.size() : p;
}

bool at(std::string_view s, size_t pos, std::string_view word) { return s.substr(pos, word.size()) == word; }

Status bad(size_t pos, const std::string& what) {
  return error(WT_ERR_INVALID_ARGUMENT, "reply: the tool call at byte " + std::to_string(pos) + " " + what);
}

// The levels of brackets a value is written with in JSON: 0 for a scalar, 1 for [] or [1].
// (JinjaValue::depth counts [] and 1 alike.) Bounded: the JSON read nests 64 levels at most.
uint32_t bracket_levels(const JinjaValue& v) {
  uint32_t inner = 0;
  if (v.is(JinjaValue::Kind::list)) {
    for (const JinjaValue& item : *v.list) inner = std::max(inner, bracket_levels(item));
  } else if (v.is(JinjaValue::Kind::dict)) {
    for (const auto& item : *v.dict) inner = std::max(inner, bracket_levels(item.second));
  } else {
    return 0;
  }
  return inner + 1;
}

// One call in OpenAI's shape from what the model wrote: a name, the arguments given as
// "arguments" or "parameters", an id where there is one (Mistral's, or `id` beside them).
Status make_call(std::string name, JinjaValue arguments, const JinjaValue* id, size_t pos, JinjaValue* out) {
  if (name.empty()) return bad(pos, "has no name");
  // A conversation's JSON holds the arguments 5 levels down (its array, the message, its
  // tool_calls, the call, its function), and JSON nests kJinjaMaxNesting levels at most:
  // deeper arguments could not go back into wt_chat_apply_json.
  if (bracket_levels(arguments) > kJinjaMaxNesting - 5)
    return bad(pos, "has arguments nested more than " + std::to_string(kJinjaMaxNesting - 5) + " levels deep");
  JinjaDict function;
  function.emplace_back("name", JinjaValue::string(std::move(name)));
  function.emplace_back("arguments", arguments.is(JinjaValue::Kind::undefined) ? JinjaValue::of_dict({})
                                                                               : std::move(arguments));
  JinjaDict call;
  if (id && id->is(JinjaValue::Kind::string)) call.emplace_back("id", *id);
  call.emplace_back("type", JinjaValue::string("function"));
  call.emplace_back("function", JinjaValue::of_dict(std::move(function)));
  *out = JinjaValue::of_dict(std::move(call));
  return Status::ok();
}

// A call written as one JSON object {"name": ..., "arguments" or "parameters": ..., "id"?}.
Status call_of_object(const JinjaValue& v, size_t pos, JinjaValue* out) {
  if (!v.is(JinjaValue::Kind::dict)) return bad(pos, "is not a JSON object");
  const JinjaValue* name = v.find("name");
  if (!name || !name->is(JinjaValue::Kind::string)) return bad(pos, "has no \"name\" string");
  const JinjaValue* args = v.find("arguments");
  if (!args) args = v.find("parameters");
  return make_call(name->s, args ? *args : JinjaValue{}, v.find("id"), pos, out);
}

// The JSON value at pos, calls read from it (an object, or where lists are allowed a list of
// objects) appended to *calls; pos moves past it. Errors name the call's opening at `start`.
Status read_calls(std::string_view reply, size_t* pos, bool lists, size_t start, JinjaList* calls) {
  JinjaValue v;
  const Status st = jinja_from_json_at(reply, pos, &v);
  if (!st.is_ok()) return bad(start, "is not JSON: " + st.message());
  if (lists && v.is(JinjaValue::Kind::list)) {
    for (const JinjaValue& item : *v.list) {
      calls->emplace_back();
      WT_TRY(call_of_object(item, start, &calls->back()));
    }
    return Status::ok();
  }
  calls->emplace_back();
  return call_of_object(v, start, &calls->back());
}

// Calls each opened and closed by a tag, back to back (whitespace between): Hermes's
// <tool_call>...</tool_call>, Phi-4-mini's <|tool_call|>...<|/tool_call|>. Returns the end.
Status read_tagged(std::string_view reply, size_t pos, std::string_view open, std::string_view close, bool lists,
                   JinjaList* calls, size_t* end) {
  while (at(reply, pos, open)) {
    const size_t start = pos;
    pos += open.size();
    WT_TRY(read_calls(reply, &pos, lists, start, calls));
    pos = skip_space(reply, pos);
    if (!at(reply, pos, close)) return bad(start, "is not closed by " + std::string(close));
    pos = skip_space(reply, pos + close.size());
  }
  *end = pos;
  return Status::ok();
}

// A Mistral call's name or id: letters, digits, '_', '-', '.' (a function's name as OpenAI
// allows it), from pos; its end.
size_t name_end(std::string_view s, size_t pos) {
  const auto named = [](char c) {  // ASCII, whatever the C locale calls a letter
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  };
  while (pos < s.size() && named(s[pos])) ++pos;
  return pos;
}

// Mistral's: after [TOOL_CALLS], a JSON list of calls (v3 to Small 3.1) or one object, or
// name[ARGS]{...} with an optional [CALL_ID]id before [ARGS] (later tokenizers), repeated.
Status read_mistral(std::string_view reply, size_t pos, JinjaList* calls, size_t* end) {
  constexpr std::string_view kOpen = "[TOOL_CALLS]", kArgs = "[ARGS]", kId = "[CALL_ID]";
  while (at(reply, pos, kOpen)) {
    const size_t start = pos;
    pos = skip_space(reply, pos + kOpen.size());
    if ((at(reply, pos, "[") && !at(reply, pos, kArgs) && !at(reply, pos, kId)) || at(reply, pos, "{")) {
      WT_TRY(read_calls(reply, &pos, true, start, calls));
    } else {
      const size_t name_to = name_end(reply, pos);
      std::string name(reply.substr(pos, name_to - pos));
      pos = name_to;
      JinjaValue id;
      if (at(reply, pos, kId)) {
        const size_t id_to = name_end(reply, pos + kId.size());
        if (id_to == pos + kId.size()) return bad(start, "has an empty [CALL_ID]");
        id = JinjaValue::string(std::string(reply.substr(pos + kId.size(), id_to - pos - kId.size())));
        pos = id_to;
      }
      if (name.empty() || !at(reply, pos, kArgs)) return bad(start, "is not a name (letters, digits, _-.) and [ARGS]");
      pos += kArgs.size();
      JinjaValue args;
      const Status st = jinja_from_json_at(reply, &pos, &args);
      if (!st.is_ok()) return bad(start, "is not JSON: " + st.message());
      calls->emplace_back();
      WT_TRY(make_call(std::move(name), std::move(args), &id, start, &calls->back()));
    }
    pos = skip_space(reply, pos);
  }
  *end = pos;
  return Status::ok();
}

// Llama 3's: the whole reply is calls, JSON objects of a name and parameters split by
// whitespace or ";". False (not calls: content) otherwise; an error only after the tag, at
// tag_at (npos: none).
Status read_llama3(std::string_view reply, size_t pos, size_t tag_at, JinjaList* calls, bool* are_calls) {
  *are_calls = false;
  const bool tagged = tag_at != std::string_view::npos;
  JinjaList found;
  pos = skip_space(reply, pos);
  if (tagged && pos == reply.size()) return bad(tag_at, "has nothing after <|python_tag|>");
  if (!at(reply, pos, "{")) {
    if (tagged)
      return error(WT_ERR_UNSUPPORTED, "reply: Llama 3.1's built-in tool call at byte " + std::to_string(tag_at) +
                                           " (<|python_tag|>name.call(...)) is not read, only JSON calls");
    return Status::ok();
  }
  while (pos < reply.size()) {
    const size_t start = pos;
    JinjaValue v;
    Status st = jinja_from_json_at(reply, &pos, &v);
    if (st.is_ok()) {
      const JinjaValue* name = v.is(JinjaValue::Kind::dict) ? v.find("name") : nullptr;
      const bool call = name && name->is(JinjaValue::Kind::string) && v.dict->size() == 2 &&
                        (v.find("parameters") || v.find("arguments"));
      found.emplace_back();
      st = call ? call_of_object(v, start, &found.back()) : bad(start, "is not an object of a name and parameters");
    } else {
      st = bad(start, "is not JSON: " + st.message());
    }
    if (!st.is_ok()) return tagged ? st : Status::ok();
    pos = skip_space(reply, pos);
    if (at(reply, pos, ";")) pos = skip_space(reply, pos + 1);
    if (pos < reply.size() && !at(reply, pos, "{")) return tagged ? bad(pos, "is followed by other text") : Status::ok();
  }
  for (JinjaValue& c : found) calls->push_back(std::move(c));
  *are_calls = true;
  return Status::ok();
}

// The text outside the calls as one content: its pieces trimmed, a newline between those
// not empty; None when all are.
JinjaValue content_beside(const std::vector<std::string_view>& pieces) {
  std::string text;
  for (std::string_view piece : pieces) {
    piece = trim(piece);
    if (piece.empty()) continue;
    if (!text.empty()) text += '\n';
    text += piece;
  }
  return text.empty() ? JinjaValue::none() : JinjaValue::string(std::move(text));
}

// Splits the reply from byte `from` at the format's first call: the calls, and the content
// beside them. Byte offsets in errors are the whole reply's.
Status split_calls(const ReplyStyle& style, std::string_view reply, size_t from, JinjaList* calls,
                   JinjaValue* content, bool* has_calls) {
  const std::string_view rest = reply.substr(from);
  std::string_view open;
  switch (style.format) {
    case ReplyFormat::plain: break;
    case ReplyFormat::hermes: open = "<tool_call>"; break;
    case ReplyFormat::mistral: open = "[TOOL_CALLS]"; break;
    case ReplyFormat::phi4: open = "<|tool_call|>"; break;
    case ReplyFormat::other: open = style.opener; break;
    case ReplyFormat::llama3: open = "<|python_tag|>"; break;
  }
  // Llama 3's calls without the tag, and Hermes's without theirs (small Qwen2.5 models often
  // write a call so): a reply that is calls alone, in JSON, is calls, read first so that an
  // opener inside their strings is not taken for one.
  if (style.format == ReplyFormat::hermes || style.format == ReplyFormat::llama3) {
    bool are_calls = false;
    WT_TRY(read_llama3(reply, from, std::string_view::npos, calls, &are_calls));
    if (are_calls) {
      *content = JinjaValue::none();
      *has_calls = true;
      return Status::ok();
    }
  }
  size_t first = open.empty() ? std::string_view::npos : reply.find(open, from);
  if (first == std::string_view::npos) {
    *content = JinjaValue::string(std::string(rest));
    return Status::ok();
  }
  if (style.format == ReplyFormat::other)
    return error(WT_ERR_UNSUPPORTED, "reply: the tool call at byte " + std::to_string(first) + " (" +
                                         std::string(open) + "...) is in a format Whittle does not read");
  // Runs of calls, with text before, between and after them: each run read, the text kept.
  std::vector<std::string_view> text;
  size_t pos = from;
  while (first != std::string_view::npos) {
    text.push_back(reply.substr(pos, first - pos));
    switch (style.format) {
      case ReplyFormat::hermes: WT_TRY(read_tagged(reply, first, open, "</tool_call>", false, calls, &pos)); break;
      case ReplyFormat::phi4: WT_TRY(read_tagged(reply, first, open, "<|/tool_call|>", true, calls, &pos)); break;
      case ReplyFormat::mistral: WT_TRY(read_mistral(reply, first, calls, &pos)); break;
      default: {  // llama3: after its tag, calls to the end of the reply
        bool are_calls = false;
        WT_TRY(read_llama3(reply, first + open.size(), first, calls, &are_calls));
        pos = reply.size();
      }
    }
    first = reply.find(open, pos);
  }
  text.push_back(reply.substr(pos));
  *content = content_beside(text);
  *has_calls = true;  // an empty list too (Mistral's templates write one for a turn of calls)
  return Status::ok();
}

}  // namespace

ReplyStyle reply_style_of(std::string_view jinja) {
  const auto has = [&](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
  ReplyStyle style;
  style.thinks = has("</think>");
  if (has("<tool_call>") && has("<function=")) {  // Qwen3-Coder: XML parameters, values as str() writes them
    style.format = ReplyFormat::other, style.opener = "<tool_call>";
  } else if (has("<tool_call>")) {
    style.format = ReplyFormat::hermes;
  } else if (has("[TOOL_CALLS]")) {
    style.format = ReplyFormat::mistral;
  } else if (has("<|tool_call|>")) {
    style.format = ReplyFormat::phi4;
  } else if (has("tool\xE2\x96\x81" "calls\xE2\x96\x81" "begin")) {  // DeepSeek-R1's <｜tool▁calls▁begin｜>
    style.format = ReplyFormat::other, style.opener = "<\xEF\xBD\x9Ctool\xE2\x96\x81" "calls\xE2\x96\x81" "begin";
  } else if (has("\"parameters\"") && has("<|start_header_id|>")) {
    style.format = ReplyFormat::llama3;
  }
  return style;
}

Status parse_chat_reply(const ReplyStyle& style, std::string_view reply, JinjaValue* out_message) {
  if (reply.size() > kMaxReplyBytes) return error(WT_ERR_INVALID_ARGUMENT, "reply: more than 8 MiB");
  if (const size_t nul = reply.find('\0'); nul != std::string_view::npos)
    return error(WT_ERR_INVALID_ARGUMENT, "reply: a NUL byte at byte " + std::to_string(nul));
  // The message is JSON, which is UTF-8: a reply that is not (the detokenizer writes U+FFFD
  // for what is not) cannot become one without a change the caller did not ask for.
  for (size_t i = 0; i < reply.size();) {
    if (static_cast<unsigned char>(reply[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Char c = utf8_decode(reply, i);
    if (c.result != Utf8Result::ok)
      return error(WT_ERR_INVALID_ARGUMENT, "reply: text that is not UTF-8 at byte " + std::to_string(i));
    i += c.n_bytes;
  }
  // Reasoning first, as Qwen3's template takes it out of a reply's content: the content after
  // the last "</think>"; the reasoning all before it (after the first "<think>"), where Qwen3's
  // template keeps what precedes the first "</think>" only (nothing is lost here).
  size_t from = 0;
  JinjaValue reasoning;
  if (const size_t close = style.thinks ? reply.rfind("</think>") : std::string_view::npos;
      close != std::string_view::npos) {
    std::string_view thought = reply.substr(0, close);
    if (const size_t open = thought.find("<think>"); open != std::string_view::npos)
      thought = thought.substr(open + 7);
    thought = thought.substr(std::min(thought.find_first_not_of('\n'), thought.size()));
    thought = thought.substr(0, thought.find_last_not_of('\n') + 1);
    if (!thought.empty()) reasoning = JinjaValue::string(std::string(thought));
    from = std::min(reply.find_first_not_of('\n', close + 8), reply.size());
  }
  JinjaList calls;
  JinjaValue content;
  bool has_calls = false;
  WT_TRY(split_calls(style, reply, from, &calls, &content, &has_calls));
  JinjaDict message;
  message.emplace_back("role", JinjaValue::string("assistant"));
  message.emplace_back("content", std::move(content));
  if (!reasoning.is(JinjaValue::Kind::undefined)) message.emplace_back("reasoning_content", std::move(reasoning));
  if (has_calls) message.emplace_back("tool_calls", JinjaValue::of_list(std::move(calls)));
  *out_message = JinjaValue::of_dict(std::move(message));
  return Status::ok();
}

}  // namespace wt
