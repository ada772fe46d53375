// wt_chat_apply with fuzzed conversations: message counts, roles (the four known, arbitrary
// text, NULL), contents, add_assistant and caller buffers (none, too small by one, exact,
// larger). The template is one of nine published ones (tests/data/chat/: Qwen3, SmolLM2,
// Llama 3, Zephyr, Gemma 3, Llama 2, Mistral v0.3, Phi-3.5, Llama 3.2), none, or fuzzed
// text: a GGUF's tokenizer.chat_template is untrusted input, so it goes through
// wt::parse_chat_template and Whittle's Jinja as wt_model_load's does. The template's
// variables (wt_chat_apply_vars) are none, a published use (Qwen3's enable_thinking, a tool
// list) or fuzzed JSON text. The messages go in as structs, also as JSON (wt_chat_apply_json:
// the same status and text), or fuzzed JSON text takes their place (tool calls, nulls, ...).
//
// Checked: the status is the one the input calls for (WT_ERR_INVALID_ARGUMENT for a NULL
// array, role or content or an unknown role, or variables wt::read_chat_vars refuses, before
// the template is looked at; WT_ERR_UNSUPPORTED with a message for a
// template Whittle cannot run; where the template raises or fails, or drops a message,
// WT_ERR_INVALID_ARGUMENT or WT_ERR_UNSUPPORTED with a message: a tool message of more than
// whitespace for Zephyr and Phi-3.5, which have no tool role, is always refused, and the
// templates that write every message (SmolLM2's, Llama 3's; Qwen3's and Llama 3.2's given
// one message or more; Zephyr's and Phi-3.5's without a tool message) never refuse;
// otherwise WT_OK or WT_ERR_BUFFER_TOO_SMALL with the needed length, which then suffices), the text is
// NUL-terminated at the reported length, and for the published templates every message's
// content, trimmed, is in it (each writes every message it does not refuse: the content, or
// the content trimmed, or inside a system block; but Qwen3's reasoning, which it rewrites,
// and Llama 3.2's tool results, written as JSON).
#include <fuzzer/FuzzedDataProvider.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "runtime/api/handles.h"
#include "runtime/model/chat_template.h"
#include "runtime/model/jinja_json.h"
#include "runtime/model/jinja_text.h"

using wt::fuzz::expect_status;
using wt::fuzz::fail;

namespace {

// The published templates, by their file names in tests/data/chat/ ("" for none).
const char* const kTemplates[] = {"qwen3", "smollm2", "llama3", "zephyr", "gemma3", "llama2",
                                  "mistral-v0.3", "phi3.5", "llama3.2", ""};
constexpr int kNumTemplates = sizeof(kTemplates) / sizeof(kTemplates[0]);
// corpus_fdp.cpp's seeds number the templates as kTemplates does.
static_assert(kNumTemplates == 10, "fuzz/corpus_fdp.cpp encodes ten fixed templates");
const char* const kRoles[] = {"system", "user", "assistant", "tool"};
// Template variables as published templates read them (Qwen3's reasoning switch, a tool list).
constexpr const char* kTools =
    "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {}}}}]}";
const char* const kVars[] = {"{\"enable_thinking\": false}", "{\"enable_thinking\": true}", kTools};

wt_model* g_models[kNumTemplates] = {};
std::string g_sources[kNumTemplates];  // their text: a variable none of them names changes nothing

std::string read_template(const std::string& name) {
  std::ifstream f(std::string(WT_CHAT_DIR) + name + ".jinja", std::ios::binary);
  if (!f.good()) fail("cannot read %s%s.jinja", WT_CHAT_DIR, name.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
// A handle whose chat template each run replaces by the fuzzed one (the rest of the model
// is never read by wt_chat_apply).
wt_model* g_scratch = nullptr;

bool known_role(const char* role) {
  for (const char* r : kRoles)
    if (!std::strcmp(role, r)) return true;
  return false;
}

// A status and, on success, the whole text: asked with no buffer, then with room for it.
template <typename Call>
wt_status render_all(Call call, std::string* out) {
  size_t need = SIZE_MAX;
  wt_status st = call(nullptr, 0, &need);
  if (st != WT_ERR_BUFFER_TOO_SMALL) return st;
  std::vector<char> buf(need + 1);
  size_t len = SIZE_MAX;
  st = call(buf.data(), buf.size(), &len);
  if (st != WT_OK || len != need || buf[len] != '\0') fail("a chat call: status %d or length %zu after %zu asked", st, len, need);
  out->assign(buf.data(), len);
  return st;
}

// Fuzzed text as wt_chat_apply_json's messages: what wt::read_chat_messages refuses (all that
// nlohmann's reader refuses among it) is WT_ERR_INVALID_ARGUMENT; the rest formats, or is
// refused with a message.
void check_json_messages(wt_model* model, const std::string& json, bool add_assistant, const std::string& vars) {
  std::vector<wt::ChatMessage> read;
  const wt::Status read_st = wt::read_chat_messages(json, &read);
  if (read_st.is_ok() && !nlohmann::ordered_json::accept(json)) fail("read_chat_messages read text that is not JSON");
  std::string text;
  const wt_status st = render_all(
      [&](char* b, size_t c, size_t* l) { return wt_chat_apply_json(model, json.c_str(), add_assistant, vars.c_str(), b, c, l); },
      &text);
  if (!read_st.is_ok()) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply_json with messages read_chat_messages refuses");
    if (read_st.message().empty()) fail("read_chat_messages refused text without saying why");
    return;
  }
  expect_status(st, {WT_OK, WT_ERR_INVALID_ARGUMENT, WT_ERR_UNSUPPORTED}, "wt_chat_apply_json");
  if (st != WT_OK && std::strlen(wt_last_error()) == 0) fail("wt_chat_apply_json refused without saying why");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wt::fuzz::quiet_logs();
  for (int i = 0; i < kNumTemplates; ++i) {
    wt::test::TinyModelOptions o = wt::fuzz::seed_model_options();
    if (*kTemplates[i]) o.chat_template = g_sources[i] = read_template(kTemplates[i]);
    g_models[i] = wt::fuzz::load_model_bytes(wt::test::make_tiny_llama(o).build(), "chat" + std::to_string(i));
    // Every fixed template but the last (none) is one Whittle runs, or its runs test nothing.
    if (i + 1 < kNumTemplates && !g_models[i]->chat_status.is_ok())
      fail("fixed template %d is refused: %s", i, g_models[i]->chat_status.message().c_str());
  }
  g_scratch = wt::fuzz::load_model_bytes(wt::test::make_tiny_llama(wt::fuzz::seed_model_options()).build(), "scratch");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const int which = fdp.ConsumeIntegralInRange<int>(0, kNumTemplates);
  wt_model* model = nullptr;
  bool fuzzed_template = false;
  if (which < kNumTemplates) {
    model = g_models[which];
  } else {
    const std::string jinja = fdp.ConsumeRandomLengthString(4096);
    g_scratch->chat = wt::ChatTemplate{};
    g_scratch->chat_status = wt::parse_chat_template(jinja, "<s>", "</s>", &g_scratch->chat);
    expect_status(g_scratch->chat_status.code(), {WT_OK, WT_ERR_UNSUPPORTED}, "wt::parse_chat_template");
    if (!g_scratch->chat_status.is_ok() && g_scratch->chat_status.message().empty())
      fail("parse_chat_template refused a template without saying why");
    model = g_scratch;
    fuzzed_template = true;
  }
  const bool template_ok = model->chat_status.is_ok();

  const size_t n = fdp.ConsumeIntegralInRange<size_t>(0, 8);
  std::vector<std::string> roles(n), contents(n);
  std::vector<wt_chat_message> msgs(n);
  bool bad_message = false;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t pick = fdp.ConsumeIntegral<uint8_t>();
    roles[i] = pick < 200 ? kRoles[pick % 4] : fdp.ConsumeRandomLengthString(16);
    contents[i] = fdp.ConsumeRandomLengthString(256);
    // The C strings end at their first NUL: keep what the library sees, for the checks below.
    roles[i].resize(std::strlen(roles[i].c_str()));
    contents[i].resize(std::strlen(contents[i].c_str()));
    msgs[i].role = pick == 255 ? nullptr : roles[i].c_str();
    msgs[i].content = pick == 254 ? nullptr : contents[i].c_str();
    bad_message |= !msgs[i].role || !msgs[i].content || !known_role(msgs[i].role);
  }
  const bool null_array = n > 0 && fdp.ConsumeIntegral<uint8_t>() == 0;
  const bool add_assistant = fdp.ConsumeBool();
  const uint8_t cap_pick = fdp.ConsumeIntegral<uint8_t>();
  const wt_chat_message* array = null_array ? nullptr : msgs.data();
  // The template's variables (read last, so older seeds keep their meaning): none, a published
  // use, or fuzzed text, which wt::read_chat_vars (the call's own reader) accepts or not.
  const uint8_t vars_pick = fdp.ConsumeIntegral<uint8_t>();
  std::string vars;
  if (vars_pick >= 192) {
    vars = fdp.ConsumeRandomLengthString(512);
    vars.resize(std::strlen(vars.c_str()));
  } else if (vars_pick >= 128) {
    vars = kVars[vars_pick % 3];
  }
  const bool fuzzed_vars = vars_pick >= 192 && !vars.empty();
  wt::JinjaDict read_vars;
  const wt::Status vars_st = vars.empty() ? wt::Status::ok() : wt::read_chat_vars(vars, &read_vars);
  if (!vars_st.is_ok() && vars_st.code() != WT_ERR_INVALID_ARGUMENT) fail("read_chat_vars: not INVALID_ARGUMENT");
  if (!vars_st.is_ok() && vars_st.message().empty()) fail("read_chat_vars refused JSON without saying why");
  if (fuzzed_vars) {
    // The JSON reader against an independent one (nlohmann's): what it reads is JSON, and what
    // it refuses of JSON is one of its documented refusals.
    wt::JinjaValue value;
    const wt::Status js = wt::jinja_from_json(vars, &value);
    const bool valid = nlohmann::ordered_json::accept(vars);
    if (js.is_ok() && !valid) fail("jinja_from_json read text nlohmann's reader refuses");
    if (!js.is_ok() && valid) {
      bool documented = false;
      for (const char* why : {"twice", "outside 64 bits", "nested more than", "more than", "may hold"})
        documented |= js.message().find(why) != std::string::npos;
      if (!documented) fail("jinja_from_json refused JSON nlohmann's reader reads: %s", js.message().c_str());
    }
  }

  // Whole messages as JSON (wt_chat_apply_json; read last, so older seeds keep their meaning):
  // below 128 none, 128-191 the messages above as JSON, which must format as they do, 192 up
  // fuzzed JSON text in their place.
  const uint8_t json_pick = fdp.ConsumeIntegral<uint8_t>();
  if (json_pick >= 192) {
    std::string json = fdp.ConsumeRandomLengthString(2048);
    json.resize(std::strlen(json.c_str()));
    check_json_messages(model, json, add_assistant, vars);
    return 0;
  }

  // First without a buffer: the needed length, or the input's error.
  size_t needed = SIZE_MAX;
  const wt_status st = wt_chat_apply_vars(model, array, n, add_assistant, vars.c_str(), nullptr, 0, &needed);
  if (null_array) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply with a NULL message array");
    return 0;
  }
  if (json_pick >= 128) {
    bool null_string = false;
    nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
    for (const wt_chat_message& m : msgs) {
      null_string |= !m.role || !m.content;
      if (!null_string) conversation.push_back({{"role", m.role}, {"content", m.content}});
    }
    std::string json;
    try {  // text that is not UTF-8 has no JSON: nothing to compare
      json = conversation.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
    } catch (const nlohmann::ordered_json::exception&) {
      null_string = true;
    }
    if (!null_string) {
      std::string as_structs, as_json;
      const wt_status s1 = render_all(
          [&](char* b, size_t c, size_t* l) { return wt_chat_apply_vars(model, array, n, add_assistant, vars.c_str(), b, c, l); },
          &as_structs);
      const wt_status s2 = render_all(
          [&](char* b, size_t c, size_t* l) { return wt_chat_apply_json(model, json.c_str(), add_assistant, vars.c_str(), b, c, l); },
          &as_json);
      if (s1 != s2) fail("wt_chat_apply_json: status %d where wt_chat_apply_vars has %d", s2, s1);
      if (as_structs != as_json) fail("wt_chat_apply_json formats the same messages otherwise");
    }
  }
  // The caller's arguments are checked before the model's template.
  if (bad_message) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply with a NULL or unknown role or content");
    return 0;
  }
  if (!vars_st.is_ok()) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply_vars with variables that are not a JSON object's");
    return 0;
  }
  if (!template_ok) {
    expect_status(st, {WT_ERR_UNSUPPORTED}, "wt_chat_apply with a template Whittle cannot run");
    return 0;
  }
  // A template may raise (INVALID_ARGUMENT), fail or drop a message (UNSUPPORTED), saying why.
  bool has_tool = false;
  for (size_t i = 0; i < n; ++i) has_tool |= roles[i] == "tool" && !wt::jinja_trim(contents[i]).empty();
  const std::string name = fuzzed_template ? "" : kTemplates[which];
  const bool no_tool_role = name == "zephyr" || name == "phi3.5";
  if (has_tool && no_tool_role && !fuzzed_vars) {
    expect_status(st, {WT_ERR_UNSUPPORTED}, "wt_chat_apply with a tool message for a template without a tool role");
    return 0;
  }
  // Llama 3.2 raises when given tools and no first user message; fuzzed variables may make
  // any template fail (a `tools` of the wrong type, a name shadowing `namespace`).
  const bool tools = vars.find("tools") != std::string::npos;
  const bool writes_all = !fuzzed_vars && (name == "smollm2" || name == "llama3" || no_tool_role ||
                                           ((name == "qwen3" || (name == "llama3.2" && !tools)) && n > 0));
  if (writes_all) expect_status(st, {WT_ERR_BUFFER_TOO_SMALL}, "wt_chat_apply with a template that writes every message");
  if (st != WT_ERR_BUFFER_TOO_SMALL) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT, WT_ERR_UNSUPPORTED}, "wt_chat_apply with a template Whittle runs");
    if (std::strlen(wt_last_error()) == 0) fail("a template that failed to run without saying why");
    return 0;
  }
  if (needed == SIZE_MAX) fail("wt_chat_apply reported no length");

  // Then a buffer of a fuzzed size around the need; exact-size on the heap for ASan.
  size_t capacity = needed + 1;
  switch (cap_pick % 5) {
    case 0: capacity = 0; break;
    case 1: capacity = needed; break;  // no room for the NUL
    case 2: capacity = needed + 1; break;
    case 3: capacity = needed + 1 + cap_pick; break;
    case 4: capacity = cap_pick <= needed ? cap_pick : needed; break;
  }
  std::unique_ptr<char[]> buf(new char[capacity == 0 ? 1 : capacity]);
  size_t len = SIZE_MAX;
  const wt_status st2 = wt_chat_apply_vars(model, array, n, add_assistant, vars.c_str(), buf.get(), capacity, &len);
  if (len != needed) fail("wt_chat_apply: length %zu, %zu reported before", len, needed);
  if (capacity < needed + 1) {
    expect_status(st2, {WT_ERR_BUFFER_TOO_SMALL}, "wt_chat_apply with a buffer too small");
    return 0;
  }
  expect_status(st2, {WT_OK}, "wt_chat_apply with room for the text");
  if (buf[len] != '\0') fail("wt_chat_apply: no NUL at the reported length %zu", len);
  // A fuzzed template may write a NUL of its own; the published ones do not.
  if (!fuzzed_template && std::strlen(buf.get()) != len) fail("wt_chat_apply: a NUL inside the text");
  if (fuzzed_template) return 0;  // the template's text: nothing to find in it but what it wrote
  const std::string text(buf.get(), len);
  if (fuzzed_vars) {
    // Variables the template never names change nothing.
    for (const auto& v : read_vars)
      if (g_sources[which].find(v.first) != std::string::npos) return 0;
    std::unique_ptr<char[]> plain(new char[len + 1]);
    size_t plain_len = 0;
    expect_status(wt_chat_apply(model, array, n, add_assistant, plain.get(), len + 1, &plain_len), {WT_OK},
                  "wt_chat_apply without the variables a template never names");
    if (std::string(plain.get(), plain_len) != text) fail("variables the template never names changed its text");
    return 0;
  }

  for (size_t i = 0; i < n; ++i) {
    if (name == "qwen3" && roles[i] == "assistant" && contents[i].find("think>") != std::string::npos) continue;
    if (name == "llama3.2" && roles[i] == "tool") continue;
    if (text.find(wt::jinja_trim(contents[i])) == std::string::npos)
      fail("message %zu's content is missing from the chat text", i);
  }
  return 0;
}
