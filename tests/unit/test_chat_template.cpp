// Chat formatting against Jinja: Whittle runs the model's own template (runtime/model/
// chat_template.h); tests/data/chat/cases.json holds what the `jinja2` package renders from
// the real templates (SmolLM2's and Qwen2.5-Coder's, from their GGUF files, and the published
// ones of other families), for a fixed set of conversations, with where they raise and where
// they drop a message (tests/reference/make_chat_fixtures.py).

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/model/chat_template.h"
#include "runtime/model/jinja_text.h"
#include "support/chat_fixture.h"

namespace {

const std::string& kDir = wt::test::kChatDir;
using wt::test::read_text;

wt::ChatTemplate parsed(const std::string& name, const std::string& bos, const std::string& eos) {
  wt::ChatTemplate t;
  const wt::Status st = wt::parse_chat_template(read_text(kDir + name + ".jinja"), bos, eos, &t);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return t;
}

}  // namespace

TEST_CASE("chat template: every case renders as Jinja renders the model's template, raises and drops as it does") {
  // ordered: a message's members reach the template in the fixture's order
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(read_text(kDir + "cases.json"));
  REQUIRE(cases.size() >= 1000);
  int rendered = 0, raised = 0, dropped = 0, with_vars = 0, with_calls = 0, dropped_calls = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("template").get<std::string>();
    CAPTURE(name);
    CAPTURE(c.at("messages").dump());
    const wt::ChatTemplate tmpl = parsed(name, c.at("bos_token").get<std::string>(), c.at("eos_token").get<std::string>());
    std::vector<wt::ChatMessage> messages;  // read as wt_chat_apply_json reads them
    const wt::Status read_messages = wt::read_chat_messages(c.at("messages").dump(), &messages);
    REQUIRE_MESSAGE(read_messages.is_ok(), read_messages.message());
    with_calls += std::any_of(messages.begin(), messages.end(), [](const wt::ChatMessage& m) { return m.has_calls(); });
    std::string text;
    const std::string today = c.value("today", std::string());  // strftime_now's date in the fixture
    wt::JinjaDict vars;  // the caller's template variables, as wt_chat_apply_vars reads them
    if (c.contains("vars")) {
      const wt::Status read = wt::read_chat_vars(c.at("vars").get<std::string>(), &vars);
      REQUIRE_MESSAGE(read.is_ok(), read.message());
      ++with_vars;
    }
    const wt::Status st = wt::apply_chat_template(tmpl, messages, c.at("add_generation_prompt").get<bool>(), &text,
                                                  today.empty() ? nullptr : &today, &vars);
    if (c.contains("raises")) {  // the template's raise_exception: the caller's error, its message
      CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
      CHECK(st.message().find(c.at("raises").get<std::string>()) != std::string::npos);
      ++raised;
    } else if (c.contains("fails")) {
      CHECK(st.code() == WT_ERR_UNSUPPORTED);
    } else if (c.contains("dropped")) {  // a message the template writes nothing for: refused, naming it
      CHECK(st.code() == WT_ERR_UNSUPPORTED);
      CHECK(st.message().find("message " + std::to_string(c.at("dropped").get<int>()) + " (") != std::string::npos);
      ++dropped;
    } else if (c.contains("dropped_calls")) {  // tool calls the template writes nothing of: refused
      CHECK(st.code() == WT_ERR_UNSUPPORTED);
      CHECK(st.message().find("message " + std::to_string(c.at("dropped_calls").get<int>()) + "'s tool_calls") !=
            std::string::npos);
      ++dropped_calls;
    } else {
      REQUIRE_MESSAGE(st.is_ok(), st.message());
      CHECK(text == c.at("expected").get<std::string>());
      ++rendered;
    }
  }
  CHECK(rendered >= 300);
  CHECK(raised >= 50);
  CHECK(dropped >= 10);
  CHECK(with_vars >= 100);
  CHECK(with_calls >= 200);
  CHECK(dropped_calls >= 20);
}

TEST_CASE("chat template: what cannot be run is refused when the model loads, naming why") {
  wt::ChatTemplate t;
  wt::Status st = wt::parse_chat_template("", "<s>", "</s>", &t);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("no chat template") != std::string::npos);
  st = wt::parse_chat_template("{% include 'other.jinja' %}", "<s>", "</s>", &t);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("'include'") != std::string::npos);
  CHECK(!t.program);
  // Templates that end turns with eos_token need the model's EOS text.
  for (const char* name : {"zephyr", "mixtral", "phi3"}) {
    CAPTURE(name);
    st = wt::parse_chat_template(read_text(kDir + name + ".jinja"), "<s>", "", &t);
    CHECK(st.code() == WT_ERR_UNSUPPORTED);
    CHECK(st.message().find("eos_token") != std::string::npos);
  }
  // A template that never writes it runs without one (Qwen3's GGUFs have no BOS either).
  CHECK(wt::parse_chat_template(read_text(kDir + "qwen3.jinja"), "", "", &t).is_ok());
}

TEST_CASE("chat template: roles outside the four, and messages a template writes nothing for, are refused") {
  // A system message equal to the template's own default is written, not dropped.
  const wt::ChatTemplate smollm = parsed("smollm2", "", "");
  std::string with_default;
  REQUIRE(wt::apply_chat_template(smollm, {{"user", "Hi"}}, true, &with_default).is_ok());
  const size_t open = with_default.find("system\n") + 7;
  const std::string dflt = with_default.substr(open, with_default.find("<|im_end|>") - open);
  REQUIRE(!dflt.empty());
  std::string given;
  REQUIRE(wt::apply_chat_template(smollm, {{"system", dflt}, {"user", "Hi"}}, true, &given).is_ok());
  CHECK(given == with_default);
  const wt::ChatTemplate chatml = parsed("chatml", "", "");
  std::string text = "untouched";
  wt::Status st = wt::apply_chat_template(chatml, {{"user", "Hi"}, {"narrator", "x"}}, true, &text);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("narrator") != std::string::npos);
  CHECK(text == "untouched");
  // Zephyr's and Phi-3's templates have no tool role: the result would vanish.
  for (const char* name : {"zephyr", "phi3.5"}) {
    CAPTURE(name);
    const wt::ChatTemplate t = parsed(name, "<s>", "</s>");
    st = wt::apply_chat_template(t, {{"user", "Hi"}, {"assistant", "Let me look."}, {"tool", "4"}}, true, &text);
    CHECK(st.code() == WT_ERR_UNSUPPORTED);
    CHECK(st.message().find("message 2 (tool)") != std::string::npos);
    // A message of whitespace alone loses nothing where it is dropped.
    CHECK(wt::apply_chat_template(t, {{"tool", " \n"}, {"user", "Hi"}}, true, &text).is_ok());
  }
  // A system message past the first is checked apart from a first one: Mistral v0.3 writes a
  // first one in front of the last user turn, so with none after it, nowhere.
  const wt::ChatTemplate mistral = parsed("mistral-v0.3", "<s>", "</s>");
  REQUIRE(wt::apply_chat_template(mistral, {{"system", "S"}, {"user", "a"}}, true, &text).is_ok());
  CHECK(text == "<s>[INST] S\n\na[/INST]");
  st = wt::apply_chat_template(mistral, {{"system", "S"}, {"user", "a"}, {"assistant", "b"}}, false, &text);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("message 0 (system)") != std::string::npos);
  // Its spelling that puts it in every user turn equal to the last keeps it.
  REQUIRE(wt::apply_chat_template(parsed("mistral-v0.3-last-user", "<s>", "</s>"),
                                  {{"system", "S"}, {"user", "a"}, {"assistant", "b"}}, false, &text)
              .is_ok());
  CHECK(text == "<s>[INST] S\n\na[/INST] b</s>");
}

TEST_CASE("chat template: Gemma's and [INST] roles out of turn are the template's own errors") {
  const wt::ChatTemplate gemma = parsed("gemma3", "<bos>", "<eos>");
  std::string text;
  wt::Status st = wt::apply_chat_template(gemma, {{"assistant", "Hi"}}, true, &text);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("alternate") != std::string::npos);
  // At an odd place any role but user passes the template's test and is written by name.
  REQUIRE(wt::apply_chat_template(gemma, {{"user", "q"}, {"tool", "4"}}, false, &text).is_ok());
  CHECK(text == "<bos><start_of_turn>user\nq<end_of_turn>\n<start_of_turn>tool\n4<end_of_turn>\n");
  // Gemma 2's template raises on a system message.
  wt::ChatTemplate gemma2;
  REQUIRE(wt::parse_chat_template(
              "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') "
              "}}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) "
              "%}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif "
              "%}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = "
              "message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + "
              "'<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}",
              "<bos>", "<eos>", &gemma2)
              .is_ok());
  st = wt::apply_chat_template(gemma2, {{"system", "s"}, {"user", "q"}}, true, &text);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("System role not supported") != std::string::npos);
  REQUIRE(wt::apply_chat_template(gemma2, {{"user", " q "}}, true, &text).is_ok());
  CHECK(text == "<bos><start_of_turn>user\nq<end_of_turn>\n<start_of_turn>model\n");
  // Templates that read messages[0] fail on an empty conversation, saying why.
  for (const char* name : {"llama2", "mistral-v0.3", "llama3.2"}) {
    CAPTURE(name);
    st = wt::apply_chat_template(parsed(name, "<s>", "</s>"), {}, true, &text);
    CHECK(!st.is_ok());
    CHECK(!st.message().empty());
  }
}

TEST_CASE("chat template: Llama 3.2 writes today's local date where none is given") {
  const wt::ChatTemplate t = parsed("llama3.2", "<|begin_of_text|>", "<|eot_id|>");
  std::string text;
  REQUIRE(wt::apply_chat_template(t, {{"user", "Hi"}}, true, &text).is_ok());
  const size_t at = text.find("Today Date: ");
  REQUIRE(at != std::string::npos);
  const std::string date = text.substr(at + 12, 11);
  CAPTURE(date);
  CHECK((std::isdigit(static_cast<unsigned char>(date[0])) && std::isdigit(static_cast<unsigned char>(date[1])) &&
         date[2] == ' ' && std::isupper(static_cast<unsigned char>(date[3])) && date[6] == ' ' &&
         std::isdigit(static_cast<unsigned char>(date[10]))));
  CHECK(text.compare(at + 23, 2, "\n\n") == 0);
  for (const std::string bad : {"2026-12-06", "06 Dec 2026 ", "31 Feb 2026"}) {
    CAPTURE(bad);
    CHECK(wt::apply_chat_template(t, {{"user", "Hi"}}, true, &text, &bad).code() == WT_ERR_INVALID_ARGUMENT);
  }
  const std::string leap = "29 Feb 2028";
  REQUIRE(wt::apply_chat_template(t, {{"user", "Hi"}}, true, &text, &leap).is_ok());
  CHECK(text.find("Today Date: 29 Feb 2028\n") != std::string::npos);
}
TEST_CASE("chat template: json_string writes what transformers' tojson writes for a string") {
  CHECK(wt::json_string("") == "\"\"");
  CHECK(wt::json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(wt::json_string("\n\r\t\b\f\x01\x1f\x7f") == "\"\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\"");
  CHECK(wt::json_string("\xC3\xA9\xE2\x80\xA8") == "\"\xC3\xA9\xE2\x80\xA8\"");  // ensure_ascii off: as is
}

TEST_CASE("chat template: jinja_trim takes whole whitespace characters only") {
  using std::string;
  CHECK(wt::jinja_trim(" \t\x1c Hi \x1f\n") == "Hi");
  CHECK(wt::jinja_trim("\xE3\x80\x80Hi\xC2\xA0") == "Hi");    // U+3000, U+00A0
  CHECK(wt::jinja_trim("Hi\xE2\x80\x8B") == "Hi\xE2\x80\x8B");  // U+200B is no space to Python
  // Truncated or broken sequences (fuzz_chat found the first as an out-of-range substr): kept.
  CHECK(wt::jinja_trim("\xE2\x80") == "\xE2\x80");
  CHECK(wt::jinja_trim(string("\xE2\x80\x00", 3)) == string("\xE2\x80\x00", 3));
  CHECK(wt::jinja_trim("\xC2") == "\xC2");
  CHECK(wt::jinja_trim(" \xE2\x80 ") == "\xE2\x80");
  CHECK(wt::jinja_trim("").empty());
  CHECK(wt::jinja_trim(" \xE2\x80\x80 ").empty());  // U+2000
}
