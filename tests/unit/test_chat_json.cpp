// wt_chat_apply_json: whole messages as JSON (an assistant's tool_calls, a tool result's
// tool_call_id), through the C API on tiny models carrying published templates, against what
// jinja2 renders (tests/data/chat/cases.json, tests/reference/make_chat_fixtures.py).

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/model/chat_template.h"
#include "support/chat_fixture.h"
#include "support/gguf_writer.h"
#include "whittle.h"

namespace {

using wt::test::read_text;

wt_model* load_with_template(const std::string& name, const wt::test::TempPath& file) {
  wt::test::TinyModelOptions o;
  o.chat_template = read_text(wt::test::kChatDir + name + ".jinja");
  REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(o).build()));
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &m) == WT_OK, wt_last_error());
  return m;
}

// The fixture's cases of one template whose messages carry tool calls (read in the file's
// order: a message's members reach the template as the caller wrote them).
std::vector<nlohmann::ordered_json> tool_cases(const std::string& name) {
  std::vector<nlohmann::ordered_json> out;
  for (const auto& c : nlohmann::ordered_json::parse(read_text(wt::test::kChatDir + "cases.json"))) {
    if (c.at("template") != name || c.contains("vars")) continue;
    for (const auto& m : c.at("messages"))
      if (m.contains("tool_calls") && !m.at("tool_calls").empty()) {
        out.push_back(c);
        break;
      }
  }
  return out;
}

}  // namespace

TEST_CASE("chat json: tool calls and their results render as jinja2 renders Qwen2.5's template") {
  const wt::test::TempPath file("chat_json_qwen.gguf");
  wt_model* m = load_with_template("qwen2.5-coder", file);
  const auto cases = tool_cases("qwen2.5-coder");
  REQUIRE(cases.size() >= 4);
  std::vector<char> buf(4096);
  for (const auto& c : cases) {
    const std::string json = c.at("messages").dump();
    CAPTURE(json);
    REQUIRE(c.contains("expected"));
    size_t len = 0;
    REQUIRE_MESSAGE(wt_chat_apply_json(m, json.c_str(), c.at("add_generation_prompt").get<bool>(), nullptr,
                                       buf.data(), buf.size(), &len) == WT_OK,
                    wt_last_error());
    const std::string text(buf.data(), len);
    CHECK(text == c.at("expected").get<std::string>());
    CHECK(text.find("<tool_call>\n{\"name\": \"get_weather\"") != std::string::npos);
  }
  // Plain messages as JSON format as wt_chat_apply formats them.
  const wt_chat_message plain[2] = {{"system", "Be brief."}, {"user", "Hi"}};
  size_t len = 0;
  REQUIRE(wt_chat_apply(m, plain, 2, true, buf.data(), buf.size(), &len) == WT_OK);
  const std::string want(buf.data(), len);
  REQUIRE(wt_chat_apply_json(m, "[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"}]",
                             true, nullptr, buf.data(), buf.size(), &len) == WT_OK);
  CHECK(std::string(buf.data(), len) == want);
  wt_model_free(m);
}

TEST_CASE("chat json: OpenAI's string arguments go in as their object, as given where a template adds them to text") {
  // The same conversation with the arguments as an object and as OpenAI's JSON text (spaced
  // otherwise, so a string written as given shows).
  const auto conversation = [](const std::string& arguments, bool nested) {
    const std::string call = "\"name\": \"get_weather\", \"arguments\": " + arguments;
    return "[{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", \"content\": null, "
           "\"tool_calls\": [{\"type\": \"function\", " +
           (nested ? "\"function\": {" + call + "}" : call) + "}]}]";
  };
  const std::string object = "{\"city\": \"Paris\", \"days\": 2}", text = "\"{\\\"city\\\":\\\"Paris\\\",\\\"days\\\":2}\"";
  const auto apply = [](wt_model* m, const std::string& json, std::string* out) {
    std::vector<char> buf(4096);
    size_t len = 0;
    const wt_status st = wt_chat_apply_json(m, json.c_str(), true, nullptr, buf.data(), buf.size(), &len);
    out->assign(buf.data(), st == WT_OK ? len : 0);
    return st;
  };
  // Qwen2.5's and Llama 3.1's templates write arguments with tojson: the text would be quoted.
  // (Qwen2.5's also reads a call without "function"; Llama 3.1's only under it.)
  for (const char* name : {"qwen2.5-coder", "llama3.1"}) {
    CAPTURE(name);
    const wt::test::TempPath file(std::string("chat_json_args_") + name + ".gguf");
    wt_model* m = load_with_template(name, file);
    for (const bool nested : {true, false}) {
      if (!nested && std::string(name) == "llama3.1") continue;
      CAPTURE(nested);
      std::string want, got;
      REQUIRE_MESSAGE(apply(m, conversation(object, nested), &want) == WT_OK, wt_last_error());
      REQUIRE_MESSAGE(apply(m, conversation(text, nested), &got) == WT_OK, wt_last_error());
      CHECK(got == want);
      CHECK(got.find("{\"city\": \"Paris\", \"days\": 2}") != std::string::npos);
    }
    // A string that holds no JSON object stays a string: quoted.
    std::string got;
    REQUIRE_MESSAGE(apply(m, conversation("\"[1, 2]\"", true), &got) == WT_OK, wt_last_error());
    CHECK(got.find("\"[1, 2]\"") != std::string::npos);
    wt_model_free(m);
  }
  // DeepSeek-R1's adds the arguments to a string: the objects fail there, the text goes in as
  // given (as jinja2 renders it with the string).
  const wt::test::TempPath file("chat_json_args_deepseek.gguf");
  wt_model* m = load_with_template("deepseek-r1-distill", file);
  std::string got;
  REQUIRE_MESSAGE(apply(m, conversation(text, true), &got) == WT_OK, wt_last_error());
  CHECK(got.find("{\"city\":\"Paris\",\"days\":2}") != std::string::npos);
  CHECK(apply(m, conversation(object, true), &got) == WT_ERR_UNSUPPORTED);  // an object: the template fails
  wt_model_free(m);
  // A template that fails both ways, otherwise: both failures named.
  wt::ChatTemplate t;
  REQUIRE(wt::parse_chat_template("{% set a = messages[1].tool_calls[0].function.arguments %}"
                                  "{% if a is string %}{{ a + 1 }}{% else %}{{ a.upper() }}{% endif %}",
                                  "", "", &t)
              .is_ok());
  std::vector<wt::ChatMessage> messages;
  REQUIRE(wt::read_chat_messages(conversation(text, true), &messages).is_ok());
  const wt::Status st = wt::apply_chat_template(t, messages, true, &got);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CAPTURE(st.message());
  CHECK(st.message().find(" (with the calls' arguments as objects: ") != std::string::npos);
}

TEST_CASE("chat json: null content is None, absent is undefined, and members keep the caller's order") {
  // As jinja2 (with transformers' tojson, which keeps the order) renders this template.
  wt::ChatTemplate t;
  REQUIRE(wt::parse_chat_template("{% for m in messages %}{{ m.content is defined }},{{ m.content is none }},"
                                  "{% for k, v in m.items() %}{{ k }} {% endfor %}{{ m|tojson }};{% endfor %}",
                                  "", "", &t)
              .is_ok());
  std::vector<wt::ChatMessage> messages;
  REQUIRE(wt::read_chat_messages("[{\"content\": null, \"role\": \"user\"}, {\"role\": \"user\", \"name\": \"a\"}, "
                                 "{\"role\": \"assistant\", \"tool_calls\": [], \"content\": \"x\"}]",
                                 &messages)
              .is_ok());
  std::string text;
  const wt::Status st = wt::render_chat_template(t, messages, false, &text);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  CHECK(text ==
        "True,True,content role {\"content\": null, \"role\": \"user\"};"
        "False,False,role name {\"role\": \"user\", \"name\": \"a\"};"
        "True,False,role tool_calls content {\"role\": \"assistant\", \"tool_calls\": [], \"content\": \"x\"};");
  // Calls that are not a list of objects are the caller's mistake, named.
  for (const char* calls : {"{}", "[1]", "\"f()\"", "[{\"function\": {}}, []]"}) {
    CAPTURE(calls);
    const std::string json = std::string("[{\"role\": \"assistant\", \"tool_calls\": ") + calls + "}]";
    const wt::Status bad = wt::read_chat_messages(json, &messages);
    CHECK(bad.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK(bad.message().find("message 0 has tool_calls that are not a list of objects") != std::string::npos);
  }
  CHECK(wt::read_chat_messages("[{\"role\": \"assistant\", \"tool_calls\": null}]", &messages).is_ok());
  const wt::Status not_json = wt::read_chat_messages("[{]", &messages);
  CHECK(not_json.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(not_json.message().rfind("chat messages: JSON: ", 0) == 0);  // which argument, then where
}

TEST_CASE("chat json: a template that writes nothing of the tool calls is refused, naming the message") {
  // SmolLM2's writes each message's content alone: the calls would vanish.
  const wt::test::TempPath file("chat_json_smollm2.gguf");
  wt_model* m = load_with_template("smollm2", file);
  const char* json =
      "[{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", \"content\": \"Looking.\", "
      "\"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{}\"}}]}]";
  char buf[1024];
  size_t len = 0;
  CHECK(wt_chat_apply_json(m, json, false, nullptr, buf, sizeof buf, &len) == WT_ERR_UNSUPPORTED);
  CHECK(std::string(wt_last_error()).find("message 1's tool_calls") != std::string::npos);
  // For this template an empty list of calls is none (not for Mistral's): the conversation formats.
  const char* no_calls = "[{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", \"content\": "
                         "\"Looking.\", \"tool_calls\": []}]";
  CHECK(wt_chat_apply_json(m, no_calls, false, nullptr, buf, sizeof buf, &len) == WT_OK);
  wt_model_free(m);
}

TEST_CASE("chat json: the caller's messages are refused before the model's missing template") {
  const wt::test::TempPath file("chat_json_no_template.gguf");
  REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(wt::test::TinyModelOptions{}).build()));
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &m) == WT_OK, wt_last_error());
  char buf[64];
  size_t len = 0;
  CHECK(wt_chat_apply_json(m, "[{\"role\": \"user\", \"content\": 1}]", true, nullptr, buf, sizeof buf, &len) ==
        WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("message 0 has a content") != std::string::npos);
  CHECK(wt_chat_apply_json(m, "[{\"role\": \"user\", \"content\": null}]", true, nullptr, buf, sizeof buf, &len) ==
        WT_ERR_UNSUPPORTED);
  CHECK(std::string(wt_last_error()).find("no chat template") != std::string::npos);
  wt_model_free(m);
}
