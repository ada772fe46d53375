// A model's reply read back into a message (runtime/model/chat_reply.h, wt_chat_parse_reply):
// against what jinja2 writes for each assistant message of the fixture's conversations with
// the published templates (tests/data/chat/replies.json, tests/reference/make_chat_fixtures.py):
// the message read back is the one written, and written again renders the same text.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/model/chat_reply.h"
#include "runtime/model/chat_template.h"
#include "support/chat_fixture.h"
#include "support/gguf_writer.h"
#include "whittle.h"

namespace {

using wt::test::read_text;
using Json = nlohmann::ordered_json;  // ordered: the members' order is part of what is checked

// The message parse_chat_reply reads, as JSON, or the status it returns.
wt::Status parse(const wt::ReplyStyle& style, const std::string& reply, Json* out) {
  wt::JinjaValue message;
  WT_TRY(wt::parse_chat_reply(style, reply, &message));
  std::string text;
  wt::JinjaJsonStyle json;
  json.max_bytes = size_t{64} << 20;  // as wt_chat_parse_reply writes it
  REQUIRE(wt::jinja_json(message, json, &text));
  *out = Json::parse(text);
  return wt::Status::ok();
}

Json parsed_ok(wt::ReplyFormat format, const std::string& reply, bool thinks = false) {
  wt::ReplyStyle style;
  style.format = format;
  style.thinks = thinks;
  Json out;
  const wt::Status st = parse(style, reply, &out);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return out;
}

wt::Status parse_status(wt::ReplyFormat format, const std::string& reply) {
  wt::ReplyStyle style;
  style.format = format;
  Json out;
  return parse(style, reply, &out);
}

Json call(const std::string& name, const Json& arguments) {
  return Json{{"type", "function"}, {"function", Json{{"name", name}, {"arguments", arguments}}}};
}

// Renders messages as wt_chat_apply_json reads them; the status, and the text into *out.
wt::Status render(const wt::ChatTemplate& tmpl, const Json& messages, const Json& c, std::string* out) {
  std::vector<wt::ChatMessage> msgs;
  WT_TRY(wt::read_chat_messages(messages.dump(), &msgs));
  wt::JinjaDict vars;
  if (c.contains("vars")) WT_TRY(wt::read_chat_vars(c.at("vars").get<std::string>(), &vars));
  const std::string today = c.at("today").get<std::string>();
  return wt::apply_chat_template(tmpl, msgs, false, out, &today, &vars);
}

}  // namespace

TEST_CASE("chat reply: each assistant message a template writes is read back as written, and renders the same") {
  const Json cases = Json::parse(read_text(wt::test::kChatDir + "replies.json"));
  REQUIRE(cases.size() >= 200);
  int with_calls = 0, refused = 0, round_trips = 0, same_refusal = 0;
  for (const Json& c : cases) {
    const std::string name = c.at("template").get<std::string>();
    const std::string reply = c.at("reply").get<std::string>();
    CAPTURE(name);
    CAPTURE(reply);
    const std::string jinja = read_text(wt::test::kChatDir + name + ".jinja");
    const wt::ReplyStyle style = wt::reply_style_of(jinja);
    Json got;
    const wt::Status st = parse(style, reply, &got);
    const bool calls = c.at("expected").contains("tool_calls");
    if (calls && style.format == wt::ReplyFormat::other) {  // Qwen3-Coder's and DeepSeek-R1's: not read, said so
      CHECK(st.code() == WT_ERR_UNSUPPORTED);
      CHECK(st.message().find("format Whittle does not read") != std::string::npos);
      ++refused;
      continue;
    }
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    CHECK(got.dump() == c.at("expected").dump());
    with_calls += calls;
    // Written back after the conversation before it: the text jinja2 rendered from the
    // original message. Where Whittle refuses it, it refuses the original too (a message
    // before it that the template drops); the original alone may be refused for text beside
    // a call that the template drops, which the message read back no longer holds.
    wt::ChatTemplate tmpl;
    REQUIRE(wt::parse_chat_template(jinja, c.at("bos_token").get<std::string>(), c.at("eos_token").get<std::string>(),
                                    &tmpl)
                .is_ok());
    Json back = c.at("before"), original = c.at("before");
    back.push_back(got);
    original.push_back(c.at("message"));
    std::string text, original_text;
    const wt::Status again = render(tmpl, back, c, &text);
    if (again.is_ok()) {
      CHECK(text == c.at("rendered").get<std::string>());
      ++round_trips;
    } else {
      const wt::Status first = render(tmpl, original, c, &original_text);
      CHECK(again.code() == first.code());
      ++same_refusal;
    }
  }
  INFO(with_calls << " calls, " << refused << " refused, " << round_trips << " round trips, " << same_refusal
                   << " refused as the original");  // 136, 14, 222, 8 on 2026-12-07 (270 replies; 274
                                                     // since string arguments go in as objects, 16 refused)
  CHECK(with_calls >= 130);
  CHECK(refused >= 10);
  CHECK(round_trips >= 210);
  CHECK(same_refusal <= 10);
}

TEST_CASE("chat reply: the format is told by the template's text") {
  const std::pair<const char*, wt::ReplyFormat> expected[] = {
      {"qwen2.5-coder", wt::ReplyFormat::hermes},  {"qwen3", wt::ReplyFormat::hermes},
      {"smollm3", wt::ReplyFormat::hermes},        {"llama3.1", wt::ReplyFormat::llama3},
      {"llama3.2", wt::ReplyFormat::llama3},       {"mistral-v0.3", wt::ReplyFormat::mistral},
      {"mistral-nemo", wt::ReplyFormat::mistral},  {"mistral-small-3.1", wt::ReplyFormat::mistral},
      {"phi4-mini", wt::ReplyFormat::phi4},        {"qwen3-coder", wt::ReplyFormat::other},
      {"deepseek-r1-distill", wt::ReplyFormat::other}, {"smollm2", wt::ReplyFormat::plain},
      {"llama3", wt::ReplyFormat::plain},          {"gemma3", wt::ReplyFormat::plain},
      {"chatml", wt::ReplyFormat::plain},          {"mistral-v0.1", wt::ReplyFormat::plain},
  };
  for (const auto& [name, format] : expected) {
    CAPTURE(name);
    CHECK(wt::reply_style_of(read_text(wt::test::kChatDir + name + ".jinja")).format == format);
  }
  CHECK(wt::reply_style_of(read_text(wt::test::kChatDir + "qwen3.jinja")).thinks);
  CHECK(wt::reply_style_of(read_text(wt::test::kChatDir + "deepseek-r1-distill.jinja")).thinks);
  CHECK_FALSE(wt::reply_style_of(read_text(wt::test::kChatDir + "qwen2.5-coder.jinja")).thinks);
}

TEST_CASE("chat reply: Hermes calls (Qwen), with text beside them, and what is refused") {
  using F = wt::ReplyFormat;
  CHECK(parsed_ok(F::hermes, "  Just text.\n") == Json{{"role", "assistant"}, {"content", "  Just text.\n"}});
  const Json two = parsed_ok(F::hermes,
                             "Let me look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2.5]}}\n"
                             "</tool_call>\n<tool_call>{\"name\":\"b\",\"parameters\":\"raw\"}</tool_call>\nDone.");
  CHECK(two == Json{{"role", "assistant"},
                    {"content", "Let me look.\nDone."},
                    {"tool_calls", Json::array({call("a", Json{{"x", {1, 2.5}}}), call("b", "raw")})}});
  // Without the tags (Qwen2.5-Coder-0.5B writes so): a reply that is calls alone is read as
  // Llama 3's; any other JSON or text stays content.
  CHECK(parsed_ok(F::hermes, " {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n") ==
        Json{{"role", "assistant"},
             {"content", nullptr},
             {"tool_calls", Json::array({call("get_weather", Json{{"city", "Paris"}})})}});
  for (const char* text : {"{\"name\": \"Bob\", \"age\": 3}", "Call {\"name\": \"a\", \"arguments\": {}}",
                           "{\"name\": \"a\", \"arguments\": {}, \"x\": 1}"}) {
    CAPTURE(text);
    CHECK(parsed_ok(F::hermes, text) == Json{{"role", "assistant"}, {"content", text}});
  }
  // Calls after text between them: every call read, the text kept, piece by piece.
  const Json between = parsed_ok(F::hermes, "<tool_call>{\"name\": \"a\"}</tool_call> ok \n<tool_call>{\"name\": "
                                            "\"b\"}</tool_call> then");
  CHECK(between.at("content") == "ok\nthen");
  CHECK(between.at("tool_calls").size() == 2);
  // Arguments nested deeper than a conversation's JSON can take back are refused.
  const auto nested = [](size_t depth) {
    std::string text = "<tool_call>{\"name\": \"a\", \"arguments\": ";
    text.append(depth, '[').append(depth, ']').append("}</tool_call>");
    return text;
  };
  const Json deepest = parsed_ok(F::hermes, nested(59));
  std::vector<wt::ChatMessage> back;  // as deep as a conversation's JSON takes back
  const wt::Status read_back = wt::read_chat_messages(std::string("[").append(deepest.dump()).append("]"), &back);
  CHECK_MESSAGE(read_back.is_ok(), read_back.message());
  const wt::Status too_deep = parse_status(F::hermes, nested(60));
  CHECK(too_deep.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(too_deep.message().find("at byte 0 has arguments nested more than 59 levels deep") != std::string::npos);
  // Levels of brackets count, not what is inside the last: 59 around a number pass too.
  std::string around = "<tool_call>{\"name\": \"a\", \"arguments\": ";
  around.append(58, '[').append("{\"k\": 1}").append(58, ']').append("}</tool_call>");
  const Json valued = parsed_ok(F::hermes, around);
  CHECK(wt::read_chat_messages(std::string("[").append(valued.dump()).append("]"), &back).is_ok());
  // A reply of bare calls is read first: an opener inside their strings is text.
  CHECK(parsed_ok(F::hermes, "{\"name\": \"say\", \"arguments\": {\"text\": \"<tool_call>\"}}").at("tool_calls").size() ==
        1);
  // No arguments: {}; an id beside the name is kept, first.
  const Json bare = parsed_ok(F::hermes, "<tool_call>{\"name\": \"now\", \"id\": \"c1\"}</tool_call>");
  CHECK(bare.at("content").is_null());
  CHECK(bare.at("tool_calls").dump() == R"([{"id":"c1","type":"function","function":{"name":"now","arguments":{}}}])");
  struct Bad {
    const char* reply;
    const char* says;
  };
  for (const Bad& b : {Bad{"ok <tool_call>\n{\"name\": \"a\"}", "at byte 3 is not closed by </tool_call>"},
                       Bad{"<tool_call>{\"name\": \"a\", </tool_call>", "at byte 0 is not JSON: JSON:"},
                       Bad{"<tool_call>[{\"name\": \"a\"}]</tool_call>", "is not a JSON object"},
                       Bad{"<tool_call>{\"arguments\": {}}</tool_call>", "has no \"name\" string"},
                       Bad{"<tool_call>{\"name\": \"\"}</tool_call>", "has no name"},
                       Bad{"<tool_call>{\"name\": \"a\"}</tool_call><tool_call>", "at byte 36 is not JSON"}}) {
    CAPTURE(b.reply);
    const wt::Status st = parse_status(F::hermes, b.reply);
    CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK(st.message().find(b.says) != std::string::npos);
  }
}

TEST_CASE("chat reply: Llama 3's JSON calls, and JSON answers that are not calls") {
  using F = wt::ReplyFormat;
  CHECK(parsed_ok(F::llama3, " {\"name\": \"a\", \"parameters\": {\"q\": 1}} \n") ==
        Json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call("a", Json{{"q", 1}})})}});
  CHECK(parsed_ok(F::llama3, "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {}}")
            .at("tool_calls")
            .size() == 2);
  CHECK(parsed_ok(F::llama3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}").at("tool_calls").size() == 1);
  CHECK(parsed_ok(F::llama3, "{\"name\": \"run\", \"parameters\": {\"code\": \"x <|python_tag|> y\"}}")
            .at("tool_calls")
            .size() == 1);
  // The tag after text: the text is content, the rest calls.
  CHECK(parsed_ok(F::llama3, "Sure.<|python_tag|>{\"name\": \"a\", \"parameters\": {}}") ==
        Json{{"role", "assistant"}, {"content", "Sure."}, {"tool_calls", Json::array({call("a", Json::object())})}});
  // An answer in JSON, or text around JSON, is content as it is.
  for (const char* text : {"{\"name\": \"Bob\", \"age\": 3}", "{\"name\": \"a\", \"parameters\": {}} and more",
                           "Here: {\"name\": \"a\", \"parameters\": {}}", "{\"name\": \"a\", \"parameters\": ",
                           "{\"name\": 1, \"parameters\": {}}", "[1, 2]"}) {
    CAPTURE(text);
    CHECK(parsed_ok(F::llama3, text) == Json{{"role", "assistant"}, {"content", text}});
  }
  // After the tag it must be a call: built-in tools are not read, broken JSON is the reply's error.
  wt::Status st = parse_status(F::llama3, "<|python_tag|>brave_search.call(query=\"x\")");
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("built-in tool call at byte 0") != std::string::npos);
  st = parse_status(F::llama3, " <|python_tag|> ");
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("at byte 1 has nothing after <|python_tag|>") != std::string::npos);
  st = parse_status(F::llama3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}");
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  st = parse_status(F::llama3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}} x");
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("followed by other text") != std::string::npos);
}

TEST_CASE("chat reply: Mistral's lists of calls and its name[ARGS] form, Phi-4-mini's") {
  using F = wt::ReplyFormat;
  const Json list = parsed_ok(F::mistral, "Sure.[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"k\": \"v\"}, "
                                          "\"id\": \"abcdefghi\"}, {\"name\": \"b\", \"arguments\": {}}]");
  CHECK(list.at("content") == "Sure.");
  CHECK(list.at("tool_calls").dump() ==
        R"([{"id":"abcdefghi","type":"function","function":{"name":"a","arguments":{"k":"v"}}},)"
        R"({"type":"function","function":{"name":"b","arguments":{}}}])");
  const Json args = parsed_ok(F::mistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"
                                          "[TOOL_CALLS]now[CALL_ID]x1y2z3w4v[ARGS]{}");
  CHECK(args.at("tool_calls").dump() ==
        R"([{"type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}},)"
        R"({"id":"x1y2z3w4v","type":"function","function":{"name":"now","arguments":{}}}])");
  // One object; text between calls kept.
  const Json one = parsed_ok(F::mistral, "[TOOL_CALLS]{\"name\": \"a\", \"arguments\": {}} and [TOOL_CALLS]b[ARGS]{}");
  CHECK(one.at("tool_calls").size() == 2);
  CHECK(one.at("content") == "and");
  // A name is letters, digits and _-.: text before it, a bracket in it, an id running into
  // the next call are the reply's errors, not one call that swallows them.
  for (const char* bad : {"[TOOL_CALLS]", "[TOOL_CALLS]get_weather", "[TOOL_CALLS]get_weather[ARGS]",
                          "[TOOL_CALLS][ARGS]{}", "[TOOL_CALLS] [{\"name\": \"a\"", "[TOOL_CALLS]a[CALL_ID]x",
                          "[TOOL_CALLS]Sure, let me\nget_weather[ARGS]{}", "[TOOL_CALLS]a[CALL_ID]x[TOOL_CALLS]b[ARGS]{}",
                          "[TOOL_CALLS]get[x]_weather[ARGS]{}", "[TOOL_CALLS]a[CALL_ID][ARGS]{}",
                          "[TOOL_CALLS]caf\xC3\xA9[ARGS]{}"}) {
    CAPTURE(bad);
    CHECK(parse_status(F::mistral, bad).code() == WT_ERR_INVALID_ARGUMENT);
  }
  const Json phi = parsed_ok(F::phi4, "<|tool_call|>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\"}]"
                                      "<|/tool_call|><|tool_call|>{\"name\": \"c\"}<|/tool_call|>");
  CHECK(phi.at("tool_calls").size() == 3);
  CHECK(phi.at("tool_calls")[2].at("function").at("name") == "c");
  CHECK(parse_status(F::phi4, "<|tool_call|>{\"name\": \"c\"}").code() == WT_ERR_INVALID_ARGUMENT);
  // Another format's markers are text.
  CHECK(parsed_ok(F::phi4, "<tool_call>{\"name\": \"a\"}</tool_call>").at("content") ==
        "<tool_call>{\"name\": \"a\"}</tool_call>");
}

TEST_CASE("chat reply: reasoning before </think> is taken out where the template thinks") {
  using F = wt::ReplyFormat;
  CHECK(parsed_ok(F::hermes, "<think>\nStep one.\nStep two.\n</think>\n\nParis.", true) ==
        Json{{"role", "assistant"}, {"content", "Paris."}, {"reasoning_content", "Step one.\nStep two."}});
  // Qwen3's prompt opens <think> itself, so a reply may start inside it; empty reasoning is none.
  CHECK(parsed_ok(F::hermes, "Hmm.\n</think>\n\n<tool_call>{\"name\": \"a\"}</tool_call>", true).at(
            "reasoning_content") == "Hmm.");
  CHECK(parsed_ok(F::hermes, "<think>\n\n</think>\n\nParis.", true) ==
        Json{{"role", "assistant"}, {"content", "Paris."}});
  // Without </think>, or for a template that does not think, it is all content.
  CHECK(parsed_ok(F::hermes, "<think>\nStill thinking", true).at("content") == "<think>\nStill thinking");
  CHECK(parsed_ok(F::plain, "<think>a</think>b", false).at("content") == "<think>a</think>b");
  // Two </think>: the content follows the last, the reasoning holds all before it.
  CHECK(parsed_ok(F::hermes, "<think>a</think>b</think>\nc", true) ==
        Json{{"role", "assistant"}, {"content", "c"}, {"reasoning_content", "a</think>b"}});
  // A call inside the reasoning is not a call.
  CHECK_FALSE(parsed_ok(F::hermes, "<tool_call>{\"name\": \"a\"}</tool_call></think>x", true).contains("tool_calls"));
}

TEST_CASE("chat reply: the bounds of a reply") {
  wt::ReplyStyle style;
  Json out;
  const wt::Status nul = parse(style, std::string("ab\0c", 4), &out);
  CHECK(nul.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(nul.message().find("NUL byte at byte 2") != std::string::npos);
  CHECK(parse(style, std::string(wt::kMaxReplyBytes + 1, 'a'), &out).code() == WT_ERR_INVALID_ARGUMENT);
  // JSON is UTF-8: an ill-formed byte (a lone continuation, an overlong form) is refused.
  for (const char* bad : {"caf\xC3", "a\x80" "b", "\xC0\xAF", "ok \xED\xA0\x80"}) {
    const wt::Status st = parse(style, bad, &out);
    CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK(st.message().find("not UTF-8 at byte") != std::string::npos);
  }
  REQUIRE(parse(style, "caf\xC3\xA9 \xF0\x9F\x98\x80", &out).is_ok());
  REQUIRE(parse(style, std::string(wt::kMaxReplyBytes, 'a'), &out).is_ok());
  CHECK(out.at("content").get<std::string>().size() == wt::kMaxReplyBytes);
}

TEST_CASE("chat reply: wt_chat_parse_reply through the C API, and back into wt_chat_apply_json") {
  wt::test::TempPath file("chat_reply.gguf");
  wt::test::TinyModelOptions o;
  o.chat_template = read_text(wt::test::kChatDir + "qwen2.5-coder.jinja");
  REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(o).build()));
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &m) == WT_OK, wt_last_error());
  const char* reply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  size_t len = 0;
  CHECK(wt_chat_parse_reply(nullptr, reply, nullptr, 0, &len) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_chat_parse_reply(m, nullptr, nullptr, 0, &len) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_chat_parse_reply(m, reply, nullptr, 0, nullptr) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_chat_parse_reply(m, reply, nullptr, 0, &len) == WT_ERR_BUFFER_TOO_SMALL);
  std::string json(len + 1, '\0');
  REQUIRE(wt_chat_parse_reply(m, reply, json.data(), json.size(), &len) == WT_OK);
  json.resize(len);
  CHECK(json == R"({"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": )"
                R"({"name": "get_weather", "arguments": {"city": "Paris"}}}]})");
  CHECK(wt_chat_parse_reply(m, "<tool_call>{", nullptr, 0, &len) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("reply: the tool call at byte 0") != std::string::npos);
  // Back into the conversation: the call as the template writes it.
  const std::string messages = R"([{"role": "user", "content": "Weather in Paris?"}, )" + json + "]";
  REQUIRE(wt_chat_apply_json(m, messages.c_str(), false, nullptr, nullptr, 0, &len) == WT_ERR_BUFFER_TOO_SMALL);
  std::string text(len + 1, '\0');
  REQUIRE(wt_chat_apply_json(m, messages.c_str(), false, nullptr, text.data(), text.size(), &len) == WT_OK);
  text.resize(len);
  CHECK(text.find(std::string("<|im_start|>assistant\n") + reply + "<|im_end|>") != std::string::npos);
  wt_model_free(m);
}
