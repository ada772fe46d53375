// wt_chat_apply with fuzzed conversations: message counts, roles (the four known, arbitrary
// text, NULL), contents, add_assistant and caller buffers (none, too small by one, exact,
// larger). The template is one of ten fixed ones (ChatML, ChatML with a default system turn
// as SmolLM2's, Llama 3, Zephyr, Gemma 3, Llama 2, Mistral v0.3, Phi-3.5, Llama 3.2, none) or fuzzed
// text: a GGUF's tokenizer.chat_template is untrusted input, so it goes through the
// recognisers and, where they refuse it, Whittle's Jinja (wt::parse_chat_template), as
// wt_model_load does.
//
// Checked: the status is the one the input calls for (WT_ERR_INVALID_ARGUMENT for a NULL
// array, role or content or an unknown role; WT_ERR_UNSUPPORTED for a template Whittle does
// not recognise, for a tool message where the template has no tool role (Zephyr, [INST],
// Phi-3) and for a system message Gemma's or Mistral's template has no place for;
// for a template Whittle runs, WT_ERR_INVALID_ARGUMENT or WT_ERR_UNSUPPORTED with a message
// where it raises or fails (its limits on steps and size included), else the text;
// WT_ERR_INVALID_ARGUMENT for Gemma's and [INST] roles out of turn and an empty [INST] or
// Llama 3.2 conversation; otherwise WT_OK or WT_ERR_BUFFER_TOO_SMALL with the needed length, which
// then suffices), the text is NUL-terminated at the reported length, and every message's
// role and content appear in it in order (as its template shows them: trimmed for Llama 3
// and Gemma, Gemma's roles as "model" and the system text inside the first user turn,
// a tool result as a <tool_response> block for Qwen2.5; for [INST] templates, which write no
// role, each content trimmed in order and the system text somewhere where it has a turn;
// Llama 3.2's tool results as "ipython" turns of their content as JSON).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "runtime/api/handles.h"

using wt::fuzz::expect_status;
using wt::fuzz::fail;

namespace {

const char* const kTemplates[] = {
    // Qwen2-style ChatML, no default system turn.
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    // SmolLM2-style ChatML: a default system turn when the first message is not one.
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}",
    // Llama 3.
    "{{ '<|begin_of_text|>' }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}",
    // Zephyr (TinyLlama-Chat): every turn ends with the EOS text.
    "{% for message in messages %}{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + "
    "eos_token }}{% endif %}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}{% endfor %}",
    // Gemma 3: BOS, the system message in front of the first user turn, roles that alternate.
    "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- set first_user_prefix = messages[0]['content'] + "
    "'\\n\\n' -%}{%- endif -%}{{ '<start_of_turn>' + role + '\\n' }}{{ message['content'] | trim }}<end_of_turn>",
    // Llama 2 chat: BOS before every user turn, a first system message as a <<SYS>> block, stripped contents.
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% endif %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{{ ' '  + content.strip() + ' ' + eos_token }}",
    // Mistral v0.3: a first system message in front of the last message when that is a user turn.
    "{{- bos_token }}{%- if loop.last and system_message is defined %}{{- \"[INST] \" + system_message + \"\\n\\n\" + "
    "message[\"content\"] + \"[/INST]\" }}{%- endif %}{{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}"
    "{{- \" \" + message[\"content\"]|trim + eos_token}}",
    // Phi-3.5: "<|role|>\n" + content + "<|end|>\n", an empty system message left out, EOS without the prompt.
    "{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% elif %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}{{'<|assistant|>\\n' + message['content'] + "
    "'<|end|>\\n'}}{{ eos_token }}",
    // Llama 3.2: a system block of its own (dates, the first system message), tool results as JSON.
    "{{- bos_token }}{%- if strftime_now is defined %}{%- set date_string = strftime_now(\"%d %b %Y\") %}{%- else %}"
    "{%- set date_string = \"26 Jul 2024\" %}{%- endif %}{%- if messages[0]['role'] == 'system' %}{%- set "
    "system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}{%- endif %}"
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}"
    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}{{- \"Today Date: \" + date_string + \"\\n\\n\" }}"
    "{{- system_message }}{{- \"<|eot_id|>\" }}{%- for message in messages %}{{- '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}"
    "{{- \"<|start_header_id|>ipython<|end_header_id|>\\n\\n\" }}{{- message.content | tojson }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}",
    // None: the model has no tokenizer.chat_template.
    "",
};
constexpr int kNumTemplates = sizeof(kTemplates) / sizeof(kTemplates[0]);
// corpus_fdp.cpp's seeds number the templates as kTemplates does.
static_assert(kNumTemplates == 10, "fuzz/corpus_fdp.cpp encodes ten fixed templates");
const char* const kRoles[] = {"system", "user", "assistant", "tool"};

wt_model* g_models[kNumTemplates] = {};
// A handle whose chat template each run replaces by the fuzzed one (the rest of the model
// is never read by wt_chat_apply).
wt_model* g_scratch = nullptr;

bool known_role(const char* role) {
  for (const char* r : kRoles)
    if (!std::strcmp(role, r)) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wt::fuzz::quiet_logs();
  for (int i = 0; i < kNumTemplates; ++i) {
    wt::test::TinyModelOptions o = wt::fuzz::seed_model_options();
    o.chat_template = kTemplates[i];
    g_models[i] = wt::fuzz::load_model_bytes(wt::test::make_tiny_llama(o).build(), "chat" + std::to_string(i));
    // Every fixed template but the last (none) is one Whittle recognises, or its runs test nothing.
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

  // First without a buffer: the needed length, or the input's error.
  size_t needed = SIZE_MAX;
  const wt_status st = wt_chat_apply(model, array, n, add_assistant, nullptr, 0, &needed);
  if (null_array) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply with a NULL message array");
    return 0;
  }
  if (!template_ok) {
    expect_status(st, {WT_ERR_UNSUPPORTED, bad_message ? WT_ERR_INVALID_ARGUMENT : WT_ERR_UNSUPPORTED},
                  "wt_chat_apply with an unrecognised template");
    return 0;
  }
  if (bad_message) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply with a NULL or unknown role or content");
    return 0;
  }
  // A template Whittle runs (jinja.h) may raise (INVALID_ARGUMENT) or fail on this
  // conversation (UNSUPPORTED), saying why; what it writes is its own.
  const bool runs_jinja = model->chat.format == wt::ChatFormat::jinja;
  if (runs_jinja && st != WT_ERR_BUFFER_TOO_SMALL) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT, WT_ERR_UNSUPPORTED}, "wt_chat_apply with a template Whittle runs");
    if (std::strlen(wt_last_error()) == 0) fail("a template that failed to run without saying why");
    return 0;
  }
  bool has_tool = false;
  for (const std::string& r : roles) has_tool |= r == "tool";
  const bool inst = model->chat.format == wt::ChatFormat::inst;
  const bool phi3 = model->chat.format == wt::ChatFormat::phi3;
  if (has_tool && (model->chat.format == wt::ChatFormat::zephyr || inst || phi3)) {
    expect_status(st, {WT_ERR_UNSUPPORTED}, "wt_chat_apply with a tool message for a template without a tool role");
    return 0;
  }
  const bool gemma = model->chat.format == wt::ChatFormat::gemma;
  const bool gemma_system = gemma && n > 0 && roles[0] == "system";
  if (gemma_system && !model->chat.system_prefix) {
    expect_status(st, {WT_ERR_UNSUPPORTED}, "wt_chat_apply with a system message for Gemma 1 or 2");
    return 0;
  }
  const bool inst_system = inst && n > 0 && roles[0] == "system";
  if (inst_system && model->chat.inst.system == wt::InstStyle::System::none) {
    expect_status(st, {WT_ERR_UNSUPPORTED}, "wt_chat_apply with a system message for Mistral v0.1");
    return 0;
  }
  const bool llama31 = model->chat.format == wt::ChatFormat::llama3 && model->chat.llama3_system_block;
  if ((inst || llama31) && n == 0) {  // the templates that index messages[0] raise on none
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply with no message for a template that reads the first");
    return 0;
  }
  bool out_of_turn = false;  // Gemma's test: user at even places (after the system message), others at odd
  for (size_t i = gemma_system ? 1 : 0, turn = 0; gemma && i < n; ++i, ++turn)
    out_of_turn |= (roles[i] == "user") != (turn % 2 == 0);
  for (size_t i = inst_system ? 1 : 0, turn = 0; inst && i < n; ++i, ++turn)  // [INST]: user, assistant, ...
    out_of_turn |= roles[i] != (turn % 2 == 0 ? "user" : "assistant");
  if (out_of_turn) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_chat_apply with Gemma's or [INST] roles out of turn");
    return 0;
  }
  expect_status(st, {WT_ERR_BUFFER_TOO_SMALL}, "wt_chat_apply without a buffer");
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
  const wt_status st2 = wt_chat_apply(model, array, n, add_assistant, buf.get(), capacity, &len);
  if (len != needed) fail("wt_chat_apply: length %zu, %zu reported before", len, needed);
  if (capacity < needed + 1) {
    expect_status(st2, {WT_ERR_BUFFER_TOO_SMALL}, "wt_chat_apply with a buffer too small");
    return 0;
  }
  expect_status(st2, {WT_OK}, "wt_chat_apply with room for the text");
  if (buf[len] != '\0') fail("wt_chat_apply: no NUL at the reported length %zu", len);
  // A fuzzed template's default system text may hold a NUL of its own; the fixed ones do not.
  if (!fuzzed_template && std::strlen(buf.get()) != len) fail("wt_chat_apply: a NUL inside the text");
  if (runs_jinja) return 0;  // the template's text: nothing to find in it but what it wrote

  // Each message as its template shows it, in order: role then content; Llama 3 trims the
  // content (jinja_trim; its own test compares it with jinja2's); a ChatML template that knows <tool_response> (Qwen2.5) shows
  // a tool message as a block of the user turn instead of a turn of its own.
  const std::string text(buf.get(), len);
  const wt::ChatTemplate& tmpl = model->chat;
  // Llama 3.1-3.3: the text opens with the template's dated system block, and has a system
  // header for each system message past the first (the first is inside the block), where no
  // content writes such a header of its own.
  if (llama31) {
    const std::string block = tmpl.bos_token + "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
                                               "December 2023\nToday Date: ";
    if (text.compare(0, block.size(), block) != 0) fail("the text does not open with the dated system block");
    bool header_in_content = false;
    size_t later_systems = 0;
    for (size_t i = 0; i < n; ++i) {
      header_in_content |= contents[i].find("<|start_header_id|>") != std::string::npos;
      later_systems += i > 0 && roles[i] == "system";
    }
    size_t headers = 0;
    for (size_t at = text.find("<|start_header_id|>system"); at != std::string::npos;
         at = text.find("<|start_header_id|>system", at + 1))
      ++headers;
    if (!header_in_content && headers != 1 + later_systems)
      fail("%zu system headers for %zu system messages past the first", headers, later_systems);
  }
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string content = contents[i];
    if (tmpl.format == wt::ChatFormat::llama3 || (gemma && !(gemma_system && i == 0))) content = wt::jinja_trim(content);
    std::string role = roles[i];
    if (inst) {
      content = wt::jinja_trim(content), role.clear();
      if (inst_system && i == 0) {  // written in front of a user turn, where the template has one for it
        const bool placed = n > 1 && (tmpl.inst.system != wt::InstStyle::System::last_message || roles[n - 1] == "user");
        if (placed && text.find(content) == std::string::npos) fail("the system message is missing from the chat text");
        continue;
      }
    }
    if (phi3 && role == "system" && content.empty() && tmpl.skip_empty_system) continue;  // left out
    if (llama31 && role == "tool") role = "ipython", content = wt::json_string(contents[i]);  // an ipython turn of JSON
    if (gemma && role == "assistant") role = "model";
    // Gemma's system text sits inside the first user turn: after its role, before its content.
    if (gemma_system && i == 0) role = n > 1 ? "user" : "";
    if (gemma_system && i == 1) role.clear();
    if (gemma_system && i == 0 && n == 1) content.clear();  // a system message alone: written nowhere
    if (tmpl.format == wt::ChatFormat::chatml && tmpl.tool_responses && role == "tool") {
      role = "<tool_response>\n";
      content += "\n</tool_response>";
    }
    for (const std::string* part : {&role, &content}) {
      const size_t found = text.find(*part, at);
      if (found == std::string::npos) fail("message %zu's role or content is missing from the chat text", i);
      at = found + part->size();
    }
  }
  return 0;
}
