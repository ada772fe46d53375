// wt::parse_chat_reply (wt_chat_parse_reply's reader) on fuzzed replies: the first byte picks
// the format (plain, Hermes, Llama 3, Mistral, Phi-4-mini, one not read) and whether the
// template thinks; the rest is the reply, a model's output and so untrusted.
//
// Checked: the status is WT_OK, WT_ERR_INVALID_ARGUMENT naming a byte inside the reply (a plain
// reply only for a NUL or text that is not UTF-8), or
// WT_ERR_UNSUPPORTED (only for the format not read and Llama 3's tag), each with a "reply:"
// message; on WT_OK the message is a dict of role "assistant", a content that is a string or
// None, then what there is of reasoning_content (a string) and tool_calls (a list of calls of
// type "function" with a non-empty name); without either the content is the reply itself;
// and its JSON reads back (wt::jinja_from_json) to the same JSON.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "runtime/model/chat_reply.h"
#include "runtime/model/jinja_json.h"

using wt::fuzz::fail;

namespace {

using Kind = wt::JinjaValue::Kind;

// reply: what the content is without calls and reasoning (null where reasoning was split off).
void check_message(const wt::JinjaValue& m, const std::string_view* reply) {
  if (!m.is(Kind::dict) || m.dict->size() < 2) fail("the message is not a dict of role and content");
  const wt::JinjaDict& d = *m.dict;
  if (d[0].first != "role" || !d[0].second.is(Kind::string) || d[0].second.s != "assistant")
    fail("the role is not assistant");
  if (d[1].first != "content" || !(d[1].second.is(Kind::string) || d[1].second.is(Kind::none)))
    fail("the content is neither a string nor None");
  size_t i = 2;
  if (i < d.size() && d[i].first == "reasoning_content") {
    if (!d[i].second.is(Kind::string) || d[i].second.s.empty()) fail("empty or no string reasoning");
    ++i;
  }
  if (i < d.size() && d[i].first == "tool_calls") {
    if (!d[i].second.is(Kind::list)) fail("tool_calls is not a list");
    for (const wt::JinjaValue& c : *d[i].second.list) {
      const wt::JinjaValue* type = c.find("type");
      const wt::JinjaValue* fn = c.find("function");
      const wt::JinjaValue* name = fn ? fn->find("name") : nullptr;
      if (!type || type->s != "function" || !name || !name->is(Kind::string) || name->s.empty() ||
          !fn->find("arguments"))
        fail("a call without type function, a name or arguments");
    }
    ++i;
  }
  if (i != d.size()) fail("a member after tool_calls, or out of order: %s", d[i].first.c_str());
  if (reply && d.size() == 2 && (!d[1].second.is(Kind::string) || d[1].second.s != *reply))
    fail("no calls and no reasoning, yet the content is not the reply");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  wt::ReplyStyle style;
  const uint8_t pick = data[0];
  constexpr wt::ReplyFormat kFormats[] = {wt::ReplyFormat::plain,   wt::ReplyFormat::hermes, wt::ReplyFormat::llama3,
                                          wt::ReplyFormat::mistral, wt::ReplyFormat::phi4,   wt::ReplyFormat::other};
  style.format = kFormats[(pick & 7) % 6];
  if (style.format == wt::ReplyFormat::other) style.opener = "<tool_call>";
  style.thinks = (pick & 8) != 0;
  const std::string_view reply(reinterpret_cast<const char*>(data) + 1, size - 1);

  wt::JinjaValue message;
  const wt::Status st = wt::parse_chat_reply(style, reply, &message);
  if (!st.is_ok()) {
    if (st.message().rfind("reply: ", 0) != 0) fail("an error without \"reply:\": %s", st.message().c_str());
    if (st.code() == WT_ERR_UNSUPPORTED) {
      if (style.format != wt::ReplyFormat::other && style.format != wt::ReplyFormat::llama3)
        fail("unsupported for a format that is read: %s", st.message().c_str());
    } else if (st.code() != WT_ERR_INVALID_ARGUMENT) {
      fail("status %d: %s", static_cast<int>(st.code()), st.message().c_str());
    }
    const bool text_refused = st.message().find("NUL byte") != std::string::npos ||
                              st.message().find("not UTF-8") != std::string::npos;
    if (style.format == wt::ReplyFormat::plain && !text_refused) fail("a plain reply refused: %s", st.message().c_str());
    if (const size_t at = st.message().find(" at byte "); at != std::string::npos &&
                                                          std::strtoull(st.message().c_str() + at + 9, nullptr, 10) >= reply.size())
      fail("a byte past the reply named: %s", st.message().c_str());
    return 0;
  }
  const bool split = style.thinks && reply.find("</think>") != std::string_view::npos;
  check_message(message, split ? nullptr : &reply);
  wt::JinjaJsonStyle json;
  json.max_bytes = size_t{64} << 20;
  std::string text, again;
  if (!wt::jinja_json(message, json, &text)) fail("the message cannot be written as JSON");
  wt::JinjaValue back;
  const wt::Status read = wt::jinja_from_json(text, &back);
  if (!read.is_ok()) fail("its JSON does not read back: %s", read.message().c_str());
  if (!wt::jinja_json(back, json, &again) || again != text) fail("its JSON reads back different");
  return 0;
}
