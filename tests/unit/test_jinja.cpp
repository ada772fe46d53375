// Whittle's Jinja (runtime/model/jinja.h) against jinja2 set up as HF transformers renders
// chat templates: tests/data/chat/jinja.json (tests/reference/make_jinja_fixtures.py) holds
// published templates and small templates of one feature each; test_chat_template.cpp runs
// the others (cases.json) as wt_chat_apply does.

#include <doctest/doctest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/model/chat_template.h"
#include "runtime/model/jinja.h"
#include "support/chat_fixture.h"
#include "support/gguf_writer.h"
#include "whittle.h"

namespace {

const std::string& kDir = wt::test::kChatDir;
using wt::test::read_text;

// Runs a template as a chat template, once (render_chat_template: most snippets ignore the
// messages, which apply_chat_template would refuse as dropped).
wt::Status run_jinja(const std::string& source, const nlohmann::json& c, std::string* out) {
  wt::ChatTemplate t;
  auto program = std::make_shared<wt::JinjaProgram>();
  WT_TRY(wt::jinja_parse(source, program.get()));
  t.program = program;
  t.bos_token = c.at("bos_token").get<std::string>();
  t.eos_token = c.at("eos_token").get<std::string>();
  std::vector<wt::ChatMessage> messages;
  for (const auto& m : c.at("messages"))
    messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  const std::string today = c.value("today", std::string("06 Dec 2026"));
  return wt::render_chat_template(t, messages, c.at("add_generation_prompt").get<bool>(), out, &today);
}

wt::Status render(const std::string& source, std::string* out) {
  const nlohmann::json c = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_generation_prompt", true},
                            {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  return run_jinja(source, c, out);
}

}  // namespace

TEST_CASE("jinja: published templates, and each feature, render as jinja2 renders them") {
  const nlohmann::json cases = nlohmann::json::parse(read_text(kDir + "jinja.json"));
  REQUIRE(cases.size() >= 131);
  int rendered = 0, failed = 0;
  for (const auto& c : cases) {
    const std::string source =
        c.contains("template") ? read_text(kDir + c.at("template").get<std::string>() + ".jinja") : c.at("source").get<std::string>();
    CAPTURE(source);
    std::string text;
    const wt::Status st = run_jinja(source, c, &text);
    if (c.contains("error")) {
      CHECK_MESSAGE(!st.is_ok(), "jinja2 fails here; Whittle wrote: " << text);
      ++failed;
      continue;
    }
    CHECK_MESSAGE(st.is_ok(), st.message());
    CHECK(text == c.at("expected").get<std::string>());
    ++rendered;
  }
  CHECK(rendered >= 100);
  CHECK(failed >= 25);
}

TEST_CASE("chat template: the published templates run by Whittle's Jinja") {
  wt::ChatTemplate t;
  for (const char* name : {"phi4-mini", "mistral-small-3.1", "deepseek-r1-distill"}) {
    CAPTURE(name);
    REQUIRE(wt::parse_chat_template(read_text(kDir + name + ".jinja"), "<s>", "</s>", &t).is_ok());
  }
  std::string text;
  REQUIRE(wt::apply_chat_template(t, {{"user", "Hi"}}, true, &text).is_ok());
  CHECK(text == "<s><\xEF\xBD\x9CUser\xEF\xBD\x9C>Hi<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C><think>\n");
}

TEST_CASE("jinja: wt_chat_apply runs the model's template (Phi-4-mini's)") {
  // jinja2's text for this conversation, from the fixture.
  const nlohmann::json cases = nlohmann::json::parse(read_text(kDir + "jinja.json"));
  const nlohmann::json want_messages = {{{"role", "system"}, {"content", "Be brief."}},
                                        {{"role", "user"}, {"content", "Hi"}}};
  std::string expected;
  for (const auto& c : cases)
    if (c.value("template", "") == "phi4-mini" && c.at("messages") == want_messages && c.at("add_generation_prompt"))
      expected = c.at("expected").get<std::string>();
  REQUIRE_MESSAGE(!expected.empty(), "the fixture lacks the conversation this test formats");
  wt::test::TinyModelOptions o;
  o.chat_template = read_text(kDir + "phi4-mini.jinja");
  const wt::test::TempPath file("jinja_phi4_template.gguf");
  REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(o).build()));
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &m) == WT_OK, wt_last_error());
  const wt_chat_message msgs[2] = {{"system", "Be brief."}, {"user", "Hi"}};
  char buf[256];
  size_t len = 0;
  REQUIRE_MESSAGE(wt_chat_apply(m, msgs, 2, true, buf, sizeof buf, &len) == WT_OK, wt_last_error());
  CHECK(std::string(buf, len) == expected);
  CHECK(wt_chat_apply(m, msgs, 2, true, buf, 4, &len) == WT_ERR_BUFFER_TOO_SMALL);
  CHECK(len == expected.size());
  // With a tool listed (a template variable): jinja2's text from cases.json.
  const nlohmann::json chat_cases = nlohmann::json::parse(read_text(kDir + "cases.json"));
  const nlohmann::json tool_messages = {{{"role", "system"}, {"content", "Be brief."}},
                                        {{"role", "user"}, {"content", "Weather in Zürich?"}}};
  std::string vars, with_tools;
  for (const auto& c : chat_cases)
    if (c.at("template") == "phi4-mini" && c.contains("vars") && c.at("messages") == tool_messages &&
        c.at("vars").get<std::string>().find("get_weather") != std::string::npos) {
      vars = c.at("vars").get<std::string>();
      with_tools = c.at("expected").get<std::string>();
    }
  REQUIRE_MESSAGE(!vars.empty(), "cases.json lacks Phi-4-mini's conversation with a tool");
  const wt_chat_message ask[2] = {{"system", "Be brief."}, {"user", "Weather in Zürich?"}};
  std::vector<char> big(2048);
  REQUIRE_MESSAGE(wt_chat_apply_vars(m, ask, 2, true, vars.c_str(), big.data(), big.size(), &len) == WT_OK,
                  wt_last_error());
  CHECK(std::string(big.data(), len) == with_tools);
  CHECK(with_tools.find("<|tool|>{\"name\": \"get_weather\"") != std::string::npos);
  wt_model_free(m);
}

TEST_CASE("jinja: raise_exception is the caller's error, with the template's message") {
  std::string text;
  const wt::Status st = render("{% if messages[0].role != 'system' %}{{ raise_exception('System first!') }}{% endif %}", &text);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("System first!") != std::string::npos);
}

TEST_CASE("jinja: an untrusted template meets limits, not the stack or the memory's end") {
  const std::string deep_parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  std::string nested_ifs;
  for (int k = 0; k < 5000; ++k) nested_ifs += "{% if true %}";
  const char* refused[] = {
      "{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}",  // steps
      "{% set ns = namespace(x=[]) %}{% for i in range(200) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
      "{% set ns = namespace(x=1) %}{% set ns.x = ns %}",                 // a namespace holding itself
      "{% set ns = namespace(x=1) %}{{ [ns] }}",                          // or a list holding it
      "{{ 'a' * 100000000 }}",                                            // a string past the limit
      "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
      "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",         // recursion
      "{{ range(10000000) }}",
      // a list shared many times over: small to build, huge to compare or print
      "{% set a = range(100000)|list %}{% set ns = namespace(b=[]) %}{% for i in range(100) %}"
      "{% set ns.b = ns.b + [a] %}{% endfor %}{{ ns.b == ns.b }}",
      "{% set s = 'x' * 8000000 %}{% for i in range(100000) %}{{ s|length }}{% endfor %}",  // walks of a big string
      "{% for i in range(100000) %}{{ 'abcdefghijklmnopqrstuvwxyz' * 1000 }}{% endfor %}",  // output
  };
  for (const char* source : refused) {
    CAPTURE(source);
    std::string text;
    const wt::Status st = render(source, &text);
    CHECK(st.code() == WT_ERR_UNSUPPORTED);
    CHECK(text.empty());  // nothing half-written
  }
  // Chains a parser builds in a loop nest a tree level per link: long ones are refused when
  // read, not evaluated (or freed) through a recursion as deep as they are long.
  std::string sum = "{{ 1", filters = "{{ 'x'", attrs = "{{ messages";
  for (int k = 0; k < 100000; ++k) sum += "+1", filters += "|e", attrs += ".a";
  for (const std::string& chain : {sum + " }}", filters + " }}", attrs + " }}"}) {
    std::string text;
    CHECK(render(chain, &text).code() == WT_ERR_UNSUPPORTED);
  }
  // Copies are charged before they are made, and big values are never copied per call.
  std::string text;
  const char* charged[] = {
      "{% set s = 'x' * 8000000 %}{{ ([s] * 100000)|length }}",
      "{% set s = 'x' * 8000000 %}{{ range(100000)|map(attribute='z', default=s)|list|length }}",
      "{% set a = 'a' * 4000000 %}{{ (a ~ 'b') in (a ~ a) }}",  // a quadratic substring search
      "{% set ns = namespace(me=0) %}{% set ns.me = [0]|map(attribute='z', default=ns)|list %}",
      "{% macro f(n) %}{{ ((((((((((f(n + 1)))))))))) }}{% endmacro %}{{ f(0) }}",
  };
  for (const char* source : charged) {
    CAPTURE(source);
    CHECK(render(source, &text).code() == WT_ERR_UNSUPPORTED);
  }
  CHECK(render("{% set s = 'x' * 4000000 %}{% macro m() %}.{% endmacro %}{% for i in range(20000) %}{{ m() }}"
               "{% endfor %}",
               &text)
            .is_ok());
  CHECK(text == std::string(20000, '.'));
  // Nearly the deepest expression the parser accepts (a node per '-') evaluates without
  // running out of stack.
  CHECK(render("{{ " + std::string(190, '-') + "1 }}", &text).is_ok());
  CHECK(text == "1");
  CHECK(render(deep_parens, &text).code() == WT_ERR_UNSUPPORTED);
  CHECK(render(nested_ifs, &text).code() == WT_ERR_UNSUPPORTED);
  // Just inside the nesting bound, fine.
  CHECK(render("{% set ns = namespace(x=[]) %}{% for i in range(60) %}{% set ns.x = [ns.x] %}{% endfor %}"
               "{{ ns.x|length }}",
               &text)
            .is_ok());
  CHECK(text == "1");
}

TEST_CASE("jinja: the caller's arguments are refused before the model's template") {
  const wt::test::TempPath file("jinja_no_template.gguf");
  REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(wt::test::TinyModelOptions{}).build()));
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &m) == WT_OK, wt_last_error());
  const wt_chat_message ok[1] = {{"user", "Hi"}};
  const wt_chat_message bad_role[1] = {{"wizard", "Hi"}};
  char buf[64];
  size_t len = 0;
  CHECK(wt_chat_apply_vars(m, bad_role, 1, true, nullptr, buf, sizeof buf, &len) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("wizard") != std::string::npos);
  CHECK(wt_chat_apply_vars(m, ok, 1, true, "{x}", buf, sizeof buf, &len) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("at byte 1") != std::string::npos);
  CHECK(wt_chat_apply_vars(m, ok, 1, true, "{\"x\": 1}", buf, sizeof buf, &len) == WT_ERR_UNSUPPORTED);
  CHECK(std::string(wt_last_error()).find("no chat template") != std::string::npos);
  wt_model_free(m);
}
