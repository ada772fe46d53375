// Chat formatting against Jinja: Whittle formats the template families it recognises
// natively (runtime/model/chat_template.h); tests/data/chat/cases.json holds what the
// `jinja2` package renders from the real templates (SmolLM2's and Qwen2.5-Coder's, from
// their GGUF files, and the published ones of other families), for a fixed set of conversations
// (tests/reference/make_chat_fixtures.py).

#include <doctest/doctest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/chat_template.h"
#include "support/chat_fixture.h"

namespace {

const std::string& kDir = wt::test::kChatDir;
using wt::test::read_text;

// Replaces the first `from` of a template by `to` (which must be there) and expects the
// recogniser to refuse the result with a message naming `family`.
void expect_refused_with(const std::string& jinja, const std::string& from, const std::string& to, const char* bos,
                         const char* eos, const char* family) {
  std::string changed = jinja;
  const size_t pos = changed.find(from);
  REQUIRE(pos != std::string::npos);
  changed.replace(pos, from.size(), to);
  CAPTURE(to);
  wt::ChatTemplate t;
  const wt::Status st = wt::recognise_chat_template(changed, bos, eos, &t);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find(family) != std::string::npos);
}

}  // namespace

TEST_CASE("chat template: every case renders as Jinja renders the model's template") {
  const nlohmann::json cases = nlohmann::json::parse(read_text(kDir + "cases.json"));
  REQUIRE(cases.size() >= 253);
  int n = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("template").get<std::string>();
    CAPTURE(name);
    wt::ChatTemplate tmpl;
    const wt::Status parsed = wt::recognise_chat_template(read_text(kDir + name + ".jinja"),
                                                      c.at("bos_token").get<std::string>(),
                                                      c.at("eos_token").get<std::string>(), &tmpl);
    REQUIRE_MESSAGE(parsed.is_ok(), parsed.message());
    std::vector<wt::ChatMessage> messages;
    for (const auto& m : c.at("messages"))
      messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
    CAPTURE(messages.front().content);
    std::string text;
    const std::string today = c.value("today", std::string());  // strftime_now's date in the fixture
    REQUIRE(wt::apply_chat_template(tmpl, messages, c.at("add_generation_prompt").get<bool>(), &text,
                                    today.empty() ? nullptr : &today)
                .is_ok());
    CHECK(text == c.at("expected").get<std::string>());
    ++n;
  }
  CHECK(n == static_cast<int>(cases.size()));
}

TEST_CASE("chat template: the default system turn is a whole literal, in either newline spelling") {
  wt::ChatTemplate t;
  // Qwen2.5's spelling: Jinja's escape \n inside the literal, the default in an else branch.
  REQUIRE(wt::recognise_chat_template("{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + "
                                  "messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- "
                                  "'<|im_start|>system\\nBe \\'kind\\'.<|im_end|>\\n' }}{%- endif %}", "", "", &t)
              .is_ok());
  CHECK(t.default_system == "Be 'kind'.");
  // A system turn made of a literal and a variable has no fixed default.
  REQUIRE(wt::recognise_chat_template("{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n' + "
                                  "default_prompt + '<|im_end|>\\n' }}{% endif %}", "", "", &t)
              .is_ok());
  CHECK(t.default_system.empty());
  // No test of the first message's role: no default either, even with a whole literal.
  REQUIRE(wt::recognise_chat_template("{{ '<|im_start|>system\\nAlways.<|im_end|>\\n' }}", "", "", &t).is_ok());
  CHECK(t.default_system.empty());
  // An escape the reader does not resolve (\u2019 here) leaves no default, not a wrong one.
  REQUIRE(wt::recognise_chat_template("{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nIt\\u2019s "
                                  "me.<|im_end|>\\n' }}{% endif %}", "", "", &t)
              .is_ok());
  CHECK(t.default_system.empty());
  // An unterminated literal is no default (and no crash).
  REQUIRE(wt::recognise_chat_template("{% if x != 'system' %}{{ '<|im_start|>system\\nopen", "", "", &t).is_ok());
  CHECK(t.default_system.empty());
}

TEST_CASE("chat template: Zephyr needs the EOS text and has no tool role") {
  const std::string zephyr = read_text(kDir + "zephyr.jinja");
  wt::ChatTemplate t;
  const wt::Status no_eos = wt::recognise_chat_template(zephyr, "", "", &t);
  CHECK(no_eos.code() == WT_ERR_UNSUPPORTED);
  CHECK(no_eos.message().find("eos_token") != std::string::npos);
  REQUIRE(wt::recognise_chat_template(zephyr, "<s>", "</s>", &t).is_ok());
  CHECK(t.format == wt::ChatFormat::zephyr);
  std::string text;
  const wt::Status tool = wt::apply_chat_template(t, {{"user", "Hi"}, {"tool", "4"}}, true, &text);
  CHECK(tool.code() == WT_ERR_UNSUPPORTED);
  CHECK(tool.message().find("tool") != std::string::npos);
  REQUIRE(wt::apply_chat_template(t, {}, true, &text).is_ok());
  CHECK(text.empty());  // the generation prompt is written inside the template's loop
  // Phi-3's template uses the same role tags but ends turns with <|end|>: not Zephyr.
  CHECK(wt::recognise_chat_template("{{ '<|user|>\\n' + message['content'] + '<|end|>' }}<|assistant|>{{ eos_token }}",
                                "<s>", "</s>", &t)
            .code() == WT_ERR_UNSUPPORTED);
}

TEST_CASE("chat template: Gemma refuses what its template raises on, and reads its system separator") {
  const std::string gemma3 = read_text(kDir + "gemma3.jinja");
  wt::ChatTemplate t;
  REQUIRE(wt::recognise_chat_template(gemma3, "<bos>", "<eos>", &t).is_ok());
  CHECK(t.format == wt::ChatFormat::gemma);
  CHECK(t.system_prefix);
  CHECK(t.system_sep == "\n\n");
  std::string text;
  // Roles must alternate from a user turn on (after an optional system message).
  CHECK(wt::apply_chat_template(t, {{"assistant", "Hi"}}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt::apply_chat_template(t, {{"user", "a"}, {"user", "b"}}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt::apply_chat_template(t, {{"system", "s"}, {"system", "t"}}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt::apply_chat_template(t, {{"tool", "4"}}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);
  // At an odd place any role but user passes the template's test and is written by name.
  REQUIRE(wt::apply_chat_template(t, {{"user", "q"}, {"tool", "4"}}, false, &text).is_ok());
  CHECK(text == "<bos><start_of_turn>user\nq<end_of_turn>\n<start_of_turn>tool\n4<end_of_turn>\n");
  // A system message alone: the template's loop is empty, so the system text goes nowhere.
  REQUIRE(wt::apply_chat_template(t, {{"system", "s"}}, true, &text).is_ok());
  CHECK(text == "<bos><start_of_turn>model\n");
  // Some Gemma 3 GGUFs join the system message with one newline: the literal is read.
  std::string one_newline = gemma3;
  const size_t at = one_newline.find("+ '\\n\\n'");
  REQUIRE(at != std::string::npos);
  one_newline.replace(at, 9, "+ '\\n'");
  REQUIRE(wt::recognise_chat_template(one_newline, "<bos>", "<eos>", &t).is_ok());
  CHECK(t.system_sep == "\n");
  // Gemma 1 and 2 have no system role (their templates raise on one).
  REQUIRE(wt::recognise_chat_template("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role "
                                  "not supported') }}{% endif %}{{ '<start_of_turn>' + role + '\\n' }}",
                                  "<bos>", "<eos>", &t)
              .is_ok());
  CHECK_FALSE(t.system_prefix);
  CHECK(wt::apply_chat_template(t, {{"system", "s"}, {"user", "q"}}, true, &text).code() == WT_ERR_UNSUPPORTED);
  REQUIRE(wt::apply_chat_template(t, {{"user", " q "}}, true, &text).is_ok());
  CHECK(text == "<bos><start_of_turn>user\nq<end_of_turn>\n<start_of_turn>model\n");
}

TEST_CASE("chat template: [INST] templates are read expression by expression, and refuse what they raise on") {
  wt::ChatTemplate t;
  const auto parse = [&](const std::string& name) {
    return wt::recognise_chat_template(read_text(kDir + name + ".jinja"), "<s>", "</s>", &t);
  };
  REQUIRE(parse("llama2").is_ok());
  CHECK(t.format == wt::ChatFormat::inst);
  CHECK(t.inst.bos_every_turn);
  CHECK(t.inst.system == wt::InstStyle::System::first_user);
  REQUIRE(parse("mistral-v0.2").is_ok());
  CHECK(t.inst.open == " [INST] ");
  CHECK(t.inst.system_close == "\n\n");
  REQUIRE(parse("mistral-v0.3").is_ok());
  CHECK(t.inst.system == wt::InstStyle::System::last_message);
  CHECK(t.inst.trim_reply);
  std::string text;
  // Mistral v0.3 needs a tool call id for a tool result; Llama 2 would drop one silently.
  CHECK(wt::apply_chat_template(t, {{"user", "Hi"}, {"assistant", "call"}, {"tool", "4"}}, true, &text).code() ==
        WT_ERR_UNSUPPORTED);
  CHECK(wt::apply_chat_template(t, {{"assistant", "Hi"}}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt::apply_chat_template(t, {{"user", "a"}, {"system", "b"}}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt::apply_chat_template(t, {{"user", "a"}, {"assistant", "b"}, {"assistant", "c"}}, true, &text).code() ==
        WT_ERR_INVALID_ARGUMENT);
  // Nothing but a system message: the BOS only (the loop has no turn to put it in).
  REQUIRE(wt::apply_chat_template(t, {{"system", "s"}}, true, &text).is_ok());
  CHECK(text == "<s>");
  CHECK(wt::apply_chat_template(t, {}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);  // Jinja raises on none
  // The last user turn's spelling of the same template keeps it when a reply follows.
  REQUIRE(parse("mistral-v0.3-last-user").is_ok());
  CHECK(t.inst.system == wt::InstStyle::System::last_user);
  REQUIRE(wt::apply_chat_template(t, {{"system", "S"}, {"user", "a"}, {"assistant", "b"}}, false, &text).is_ok());
  CHECK(text == "<s>[INST] S\n\na[/INST] b</s>");
  // Mistral v0.1 and Mixtral have no system role (their templates raise on one).
  REQUIRE(parse("mixtral").is_ok());
  CHECK(t.inst.system == wt::InstStyle::System::none);
  CHECK(wt::apply_chat_template(t, {{"system", "s"}, {"user", "q"}}, true, &text).code() == WT_ERR_UNSUPPORTED);
  // Needs the EOS text; a spelling of a turn Whittle does not know is refused, not guessed.
  CHECK(parse("mixtral").is_ok());
  CHECK(wt::recognise_chat_template(read_text(kDir + "mixtral.jinja"), "<s>", "", &t).code() == WT_ERR_UNSUPPORTED);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"' [/INST]'", "'  [/INST]'"},                              // the user turn
           {"eos_token}}", "eos_token + '\\n'}}"},                     // the reply
           {"{{ bos_token }}", ""},                                    // no BOS
           {"{{ bos_token }}", "{{ bos_token }}{{ bos_token }}"},       // two
           {"{{ bos_token }}", "{{ bos_token }}{{ '\\n' }}"},          // an expression of its own
           {"{{ bos_token }}", "{{ bos_token }}\n"},                   // text after an expression tag
           {"'assistant' %}", "'assistant' %} "}})                     // text after a block tag's newline
    expect_refused_with(read_text(kDir + "mixtral.jinja"), from, to, "<s>", "</s>", "[INST]");
  // Llama 2 with a default system prompt of its own (transformers' old default template).
  std::string with_default = read_text(kDir + "llama2.jinja");
  const size_t else_at = with_default.find("{% else %}{% set loop_messages = messages %}");
  REQUIRE(else_at != std::string::npos);
  with_default.insert(else_at, "{% elif true %}{% set loop_messages = messages %}{% set system_message = 'Be safe.' %}");
  CHECK(wt::recognise_chat_template(with_default, "<s>", "</s>", &t).code() == WT_ERR_UNSUPPORTED);
}

TEST_CASE("chat template: writes_raw_text as transformers' Jinja renders (trim_blocks, lstrip_blocks, '-')") {
  for (const char* name : {"llama2", "mistral-v0.1", "mixtral", "mistral-v0.2", "mistral-v0.3", "phi3", "phi3.5",
                           "gemma3", "llama3", "chatml"}) {
    CAPTURE(name);
    CHECK_FALSE(wt::writes_raw_text(read_text(kDir + name + ".jinja")));
  }
  CHECK(wt::writes_raw_text(read_text(kDir + "zephyr.jinja")));  // its "\n" after each turn is raw text
  CHECK_FALSE(wt::writes_raw_text("{% if x %}\n  {% endif %}\n"));   // a block's newline, a line's indent
  CHECK(wt::writes_raw_text("{{ x }}\n{% if y %}{% endif %}"));      // a newline after an expression
  CHECK(wt::writes_raw_text("{% if x %}\n\n{% endif %}"));          // only the first newline goes
  CHECK(wt::writes_raw_text("{{ x }}  {% if y %}{% endif %}"));      // not at a line's start
  CHECK_FALSE(wt::writes_raw_text("{{ x -}}\n \n{{- y }}{# c #}\n"));
  CHECK(wt::writes_raw_text("{{ '}}' }}a"));                          // a literal's braces are no close
  CHECK(wt::writes_raw_text("{% if x"));                              // unclosed
  CHECK(wt::writes_raw_text("Hi {{ x }}"));
  CHECK(wt::writes_raw_text("{% if x +%}\n{% endif %}"));           // "+%}" keeps the newline
  CHECK(wt::writes_raw_text("{% if x %}\n  {%+ endif %}"));          // "{%+" keeps the indent
  CHECK(wt::writes_raw_text("{% raw %}{% endraw %}"));               // a raw block: refused outright
  CHECK_FALSE(wt::writes_raw_text("{% if x %}\r\n  {% endif %}\r\n")); // CRLF read as Jinja reads it
  CHECK_FALSE(wt::writes_raw_text("{# it's #}{{ x }}"));             // a comment's quote is no literal
}

TEST_CASE("chat template: compact_jinja leaves comments out and reads quotes only inside tags") {
  const std::string c = wt::compact_jinja("{#- we're here #}{{ 'a' }} it's {{- \"b\\n\" }}{% set x = \"c\" %}");
  CHECK(c == "{{'a'}} it's {{-'b\\n'}}{%set x='c'%}");
  const std::vector<std::string> ex = wt::jinja_expressions(c);
  REQUIRE(ex.size() == 2);
  CHECK(ex[1] == "'b\\n'");
  // A literal's real newline and the escape compare equal; CRLF is a newline.
  CHECK(wt::compact_jinja("{{ 'x\r\ny' }}") == wt::compact_jinja("{{ \"x\\ny\" }}"));
}

TEST_CASE("chat template: writes_raw_text agrees with Jinja on generated templates of tags and whitespace") {
  const nlohmann::json cases = nlohmann::json::parse(read_text(kDir + "raw_text.json"));
  REQUIRE(cases.size() >= 600);
  int writing = 0;
  for (const auto& c : cases) {
    const std::string jinja = c.at("template").get<std::string>();
    const bool writes = c.at("writes_text").get<bool>();
    CAPTURE(jinja);
    CHECK(wt::writes_raw_text(jinja) == writes);
    writing += writes;
  }
  CHECK(writing > 100);  // both answers are well represented
  CHECK(writing < static_cast<int>(cases.size()) - 100);
}

TEST_CASE("chat template: Phi-3 needs its three turn expressions and the EOS text, and has no tool role") {
  const std::string phi3 = read_text(kDir + "phi3.jinja");
  wt::ChatTemplate t;
  REQUIRE(wt::recognise_chat_template(phi3, "<s>", "<|endoftext|>", &t).is_ok());
  CHECK(t.format == wt::ChatFormat::phi3);
  CHECK_FALSE(t.skip_empty_system);
  REQUIRE(wt::recognise_chat_template(read_text(kDir + "phi3.5.jinja"), "<s>", "<|endoftext|>", &t).is_ok());
  CHECK(t.skip_empty_system);
  std::string text;
  CHECK(wt::apply_chat_template(t, {{"user", "Hi"}, {"tool", "4"}}, true, &text).code() == WT_ERR_UNSUPPORTED);
  CHECK(wt::recognise_chat_template(phi3, "<s>", "", &t).code() == WT_ERR_UNSUPPORTED);
  // Phi-4-mini's spelling (no newline after the tag) is not Phi-3's: refused, not guessed.
  std::string phi4 = phi3;
  for (size_t at; (at = phi4.find("|>\\n'")) != std::string::npos;) phi4.replace(at, 5, "|>'");
  const wt::Status st = wt::recognise_chat_template(phi4, "<s>", "<|endoftext|>", &t);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("Phi-3") != std::string::npos);
  // An expression more, or raw text (past the newline after the last block tag, which
  // trim_blocks drops, and the template's last, which Jinja drops), would be missing from
  // what Whittle writes: refused.
  for (const std::string& extra : {std::string("{{ eos_token }}"), std::string("{{ '\\n' }}"), std::string("\n\n\n")}) {
    CAPTURE(extra);
    CHECK(wt::recognise_chat_template(phi3 + extra, "<s>", "<|endoftext|>", &t).code() == WT_ERR_UNSUPPORTED);
  }
}

TEST_CASE("chat template: Llama 3.1-3.3's system block, its date, and what it refuses") {
  const std::string llama32 = read_text(kDir + "llama3.2.jinja");
  wt::ChatTemplate t;
  REQUIRE(wt::recognise_chat_template(llama32, "<|begin_of_text|>", "<|eot_id|>", &t).is_ok());
  CHECK(t.format == wt::ChatFormat::llama3);
  CHECK(t.llama3_system_block);
  CHECK(t.date_from_clock);
  CHECK(t.date == "26 Jul 2024");  // the template's fallback, unused where the clock is read
  std::string text;
  // Without a date given, today's local one, as strftime_now("%d %b %Y") writes it.
  REQUIRE(wt::apply_chat_template(t, {{"user", "Hi"}}, true, &text).is_ok());
  const size_t at = text.find("Today Date: ");
  REQUIRE(at != std::string::npos);
  const std::string date = text.substr(at + 12, 11);
  CAPTURE(date);
  CHECK((std::isdigit(static_cast<unsigned char>(date[0])) && std::isdigit(static_cast<unsigned char>(date[1])) &&
         date[2] == ' ' && std::isupper(static_cast<unsigned char>(date[3])) && date[6] == ' ' &&
         std::isdigit(static_cast<unsigned char>(date[10]))));
  CHECK(text.compare(at + 23, 2, "\n\n") == 0);
  CHECK(wt::apply_chat_template(t, {}, true, &text).code() == WT_ERR_INVALID_ARGUMENT);  // Jinja raises on none
  // Llama 3 (3.0) has no block: its template is read as before.
  REQUIRE(wt::recognise_chat_template(read_text(kDir + "llama3.jinja"), "<|begin_of_text|>", "", &t).is_ok());
  CHECK_FALSE(t.llama3_system_block);
  // An expression more, another date, text of its own: refused, naming it.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"{{- system_message }}", "{{- system_message }}{{- '!' }}"},
           {"strftime_now(\"%d %b %Y\")", "strftime_now(\"%Y-%m-%d\")"},
           {"{{- \"<|eot_id|>\" }}\n", "{{- \"<|eot_id|>\" }}\nx"},
           {"'content']|trim %}", "'content'] %}"}})
    expect_refused_with(llama32, from, to, "<|begin_of_text|>", "<|eot_id|>", "Llama 3.1");
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
