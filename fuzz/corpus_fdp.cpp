// Seeds of the FuzzedDataProvider harnesses (fuzz_chat, fuzz_api): each lays out, in the
// order the harness reads them, the choices of one meaningful run; the fuzzer mutates from
// there. A seed that no longer matches a changed harness is still a valid input.
#include <fstream>
#include <iterator>
#include <string>

#include "corpus.h"
#include "fuzz_support.h"

namespace wt::fuzz {

FdpEncoder& FdpEncoder::range(int64_t lo, int64_t hi, int64_t value) {
  const uint64_t span = static_cast<uint64_t>(hi - lo), v = static_cast<uint64_t>(value - lo);
  int n_bytes = 0;
  for (uint64_t s = span; s > 0 && n_bytes < 8; s >>= 8) ++n_bytes;
  for (int i = n_bytes - 1; i >= 0; --i) back_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return *this;
}

FdpEncoder& FdpEncoder::string(const std::string& s) {
  for (const char ch : s) {
    front_.push_back(static_cast<uint8_t>(ch));
    if (ch == '\\') front_.push_back('\\');
  }
  front_.push_back('\\');
  front_.push_back(';');
  return *this;
}

std::vector<uint8_t> FdpEncoder::bytes() const {
  std::vector<uint8_t> out = front_;
  out.insert(out.end(), back_.rbegin(), back_.rend());
  return out;
}

namespace {

struct Msg {
  const char* role;  // nullptr: an arbitrary role given by `text_role`
  std::string content;
  std::string text_role = "";
};

// fuzz_chat: template (0-8 published: Qwen3, SmolLM2, Llama 3, Zephyr, Gemma 3, Llama 2,
// Mistral v0.3, Phi-3.5, Llama 3.2; 9 none; 10 = `jinja`), messages, array pointer, add_assistant, buffer size pick (cap % 5: 0 none, 1 one
// short, 2 exact, 3 larger, 4 at most cap), then the template's variables (vars: below 128 none,
// 128-191 a published use by vars % 3: 0 enable_thinking false, 1 true, 2 a tool list; 192 up
// `vars_json`), then the messages as JSON (json: below 128 no, 128-191 the messages above as
// JSON too, 192 up `messages_json` in their place); -1 leaves a byte out (none).
constexpr int kChatFixed = 10;
constexpr int kZephyr = 3, kGemma = 4, kLlama2 = 5, kMistral = 6, kPhi3 = 7, kLlama32 = 8, kNoTemplate = 9,
              kFuzzed = kChatFixed;
std::vector<uint8_t> chat(int which, const std::string& jinja, const std::vector<Msg>& msgs, bool null_array,
                          bool add_assistant, uint8_t cap, int vars = -1, const std::string& vars_json = "",
                          int json = -1, const std::string& messages_json = "") {
  FdpEncoder e;
  e.range(0, kChatFixed, which);
  if (which == kFuzzed) e.string(jinja);
  e.range(0, 8, static_cast<int64_t>(msgs.size()));
  for (const Msg& m : msgs) {
    const char* const roles[] = {"system", "user", "assistant", "tool"};
    int pick = 200;
    for (int r = 0; r < 4; ++r)
      if (m.role && std::string(m.role) == roles[r]) pick = r;
    e.byte(static_cast<uint8_t>(pick));
    if (pick >= 200) e.string(m.text_role);
    e.string(m.content);
  }
  if (!msgs.empty()) e.byte(null_array ? 0 : 1);
  e.boolean(add_assistant).byte(cap);
  if (vars >= 0 || json >= 0) e.byte(static_cast<uint8_t>(vars >= 0 ? vars : 0));
  if (vars >= 192) e.string(vars_json);
  if (json >= 0) e.byte(static_cast<uint8_t>(json));
  if (json >= 192) e.string(messages_json);
  return e.bytes();
}

}  // namespace

Seeds chat_seeds(const std::string& source_dir) {
  const std::vector<Msg> convo = {{"system", "You are brief."}, {"user", "What is 2+2?"}, {"assistant", "4"},
                                  {"user", "And <|im_end|> in text?"}};
  Seeds s;
  s["chatml_convo"] = chat(0, "", convo, false, true, 2);  // Qwen3's template (ChatML) since 2026-12-07
  s["qwen3_reasoning"] = chat(0, "", {{"user", "Hi"}, {"assistant", "<think>\nhm\n</think>\n\nHello"}, {"user", "Why?"}},
                              false, true, 2);
  s["smollm_default_system"] = chat(1, "", {{"user", "Hi"}}, false, true, 3);
  s["qwen3_no_thinking"] = chat(0, "", convo, false, true, 2, 129);
  s["qwen3_tools"] = chat(0, "", convo, false, true, 2, 128);
  s["llama32_tools"] = chat(kLlama32, "", convo, false, true, 2, 128);
  s["vars_json"] = chat(0, "", convo, false, true, 2, 192, "{\"enable_thinking\": false, \"x\": [1.5e3, null, \"\\u00e9\"]}");
  s["vars_not_json"] = chat(1, "", {{"user", "Hi"}}, false, true, 2, 200, "{\"a\": 1,}");
  s["llama3_convo"] = chat(2, "", convo, false, false, 2);
  s["no_template"] = chat(kNoTemplate, "", convo, false, true, 2);
  s["zephyr_convo"] = chat(kZephyr, "", convo, false, true, 2);
  s["zephyr_tool"] = chat(kZephyr, "", {{"user", "Hi"}, {"tool", "4"}}, false, true, 2);
  s["gemma_convo"] = chat(kGemma, "", convo, false, true, 2);
  s["gemma_out_of_turn"] = chat(kGemma, "", {{"assistant", "first"}, {"user", "second"}}, false, true, 2);
  s["gemma_system_alone"] = chat(kGemma, "", {{"system", " s "}}, false, true, 3);
  // Messages as JSON: the same as the structs; tool calls and results (Qwen3 and Mistral write
  // them, SmolLM2 would drop them: refused); not an array.
  s["json_same_qwen3"] = chat(0, "", convo, false, true, 2, 0, "", 128);
  s["json_same_llama32_tools"] = chat(kLlama32, "", convo, false, true, 2, 130, "", 129);
  const std::string calls =
      "[{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", \"content\": null, "
      "\"tool_calls\": [{\"id\": \"call12345\", \"type\": \"function\", \"function\": {\"name\": \"f\", "
      "\"arguments\": {\"x\": 1}}}]}, {\"role\": \"tool\", \"tool_call_id\": \"call12345\", \"content\": \"4\"}]";
  s["json_calls_qwen3"] = chat(0, "", {}, false, true, 2, 130, "", 200, calls);
  s["json_calls_mistral"] = chat(kMistral, "", {}, false, true, 2, 0, "", 200, calls);
  s["json_calls_smollm"] = chat(1, "", {}, false, true, 2, 0, "", 200, calls);
  s["json_not_array"] = chat(0, "", {}, false, true, 2, 0, "", 255, "{\"role\": \"user\", \"content\": [1]}");
  s["llama2_convo"] = chat(kLlama2, "", convo, false, true, 2);
  s["llama2_tool"] = chat(kLlama2, "", {{"user", "Hi"}, {"assistant", "Hello"}, {"tool", "4"}}, false, true, 2);
  s["mistral_convo"] = chat(kMistral, "", convo, false, true, 3);
  s["mistral_ends_with_reply"] = chat(kMistral, "", {{"system", " s "}, {"user", "q"}, {"assistant", " a "}}, false,
                                      false, 2);
  s["mistral_out_of_turn"] = chat(kMistral, "", {{"user", "a"}, {"user", "b"}}, false, true, 2);
  s["phi3_convo"] = chat(kPhi3, "", convo, false, false, 2);
  s["phi3_empty_system"] = chat(kPhi3, "", {{"system", ""}, {"user", "Hi"}}, false, true, 3);
  s["phi3_tool"] = chat(kPhi3, "", {{"user", "Hi"}, {"tool", "4"}}, false, true, 2);
  s["llama32_convo"] = chat(kLlama32, "", convo, false, true, 2);
  s["llama32_tool_json"] = chat(kLlama32, "", {{"user", "Run"}, {"tool", "{\"a\": \"b\\c\"}\n\x01"}}, false, true, 3);
  s["llama32_empty"] = chat(kLlama32, "", {}, false, true, 0);
  s["buffer_one_short"] = chat(0, "", convo, false, true, 1);
  s["unknown_role"] = chat(0, "", {{nullptr, "x", "narrator"}}, false, true, 2);
  s["null_array"] = chat(0, "", convo, true, true, 2);
  s["empty_convo"] = chat(2, "", {}, false, true, 0);
  s["fuzzed_chatml_default"] = chat(kFuzzed, "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nDefault<|im_end|>",
                                    {{"user", "Hi"}}, false, true, 2);
  s["fuzzed_llama3"] = chat(kFuzzed, "<|start_header_id|>", {{"tool", "{\"a\": 1}"}}, false, true, 4);
  s["fuzzed_unrecognised"] = chat(kFuzzed, "{{ bos_token }}{% for m in messages %}[INST]{% endfor %}", convo, false, true, 2);
  // A default system turn in Qwen2.5's spelling (Jinja's \n escape in an else branch), then
  // text outside the tags; tool results.
  s["fuzzed_qwen_default"] =
      chat(kFuzzed,
           "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
           "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are \\'Q\\'.<|im_end|>\\n' }}{%- endif %}"
           "<tool_response>",
           {{"user", "Hi"}, {"tool", "4"}, {"tool", "four"}, {"user", "Thanks"}}, false, true, 2);
  // Published templates as fuzzed text (they run), and one that raises.
  for (const char* name : {"deepseek-r1-distill", "phi4-mini"}) {
    std::ifstream in(source_dir + "/tests/data/chat/" + name + ".jinja", std::ios::binary);
    const std::string jinja((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    s[std::string("runs_") + name] = chat(kFuzzed, jinja, convo, false, true, 2);
  }
  s["runs_raises"] = chat(kFuzzed,
                          "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ "
                          "raise_exception('alternate!') }}{% endif %}{{ m.content|trim }}{% endfor %}",
                          {{"user", "a"}, {"user", "b"}}, false, true, 2);
  return s;
}

namespace {

// fuzz_api with groups 0 and context params whose prune fields are set by name
// (wt_prune_set_param with the harness's value lists), then a prompt of n_prompt tokens.
struct ApiRun {
  int32_t n_ctx = 48;
  int method = 0;         // index into the library's methods (wt_prune_method_at)
  int keep_text = 0;      // index into its float texts ("0.5")
  bool logits_all = false;
  bool f32 = false;
  int n_prompt = 40;
};

std::vector<uint8_t> api(const ApiRun& r) {
  FdpEncoder e;
  e.byte(0);                                    // groups: the context only
  e.boolean(true).range(0, 96, r.n_ctx);        // n_ctx
  e.range(0, 7, 4).range(0, 2, 1);              // n_threads: 1
  e.boolean(r.logits_all);
  e.range(0, 3, 1);                             // no progress callback
  e.range(0, 7, 1).boolean(r.f32);              // matmul_mode
  e.range(0, 7, 0);                             // prune struct_size: right
  e.range(0, 6, 2);                             // two wt_prune_set_param calls:
  const int n_params = wt_prune_param_count(), n_methods = wt_prune_method_count();
  e.range(0, n_params - 1, 0).range(0, 3, 0).range(0, n_methods - 1, r.method);  //   method
  e.range(0, n_params - 1, 1).range(0, 3, 0).range(0, 11, r.keep_text);          //   keep
  e.range(0, 3, 2);                             // no memory budget
  e.boolean(false).boolean(false);              // no max_new_tokens, no pager
  e.range(0, 7, 0);                             // context struct_size: right
  const int32_t n_ctx = r.n_ctx > 0 ? r.n_ctx : test::fuzz_model_options().n_ctx_train;
  e.range(0, n_ctx + 2, r.n_prompt);            // the prompt
  for (int i = 0; i < r.n_prompt; ++i) e.range(0, 15, 1).range(0, 261, (i * 37 + 11) % 262);
  e.range(0, 3, 2);                             // two decodes
  for (int i = 0; i < 2; ++i) e.boolean(true).range(0, 261, 100 + i);
  return e.bytes();
}

}  // namespace

Seeds api_seeds() {
  Seeds s;
  for (int m = 0; m < wt_prune_method_count(); ++m) {  // every method the library lists
    ApiRun r;
    r.method = m;
    wt_prune_method id = WT_PRUNE_FULL;
    if (wt_prune_method_at(m, &id) != WT_OK) continue;
    s[std::string("prune_") + wt_prune_method_name(id)] = api(r);
  }
  ApiRun full_ctx;
  full_ctx.n_ctx = 0;  // the model's training context
  full_ctx.logits_all = true;
  full_ctx.f32 = true;
  s["train_ctx_logits_all_f32"] = api(full_ctx);
  // Every group once, all choices at their first option.
  s["all_groups"] = FdpEncoder().byte(15).bytes();
  s["empty"] = {};
  return s;
}

// fuzz_chat_reply: a byte (format: 0 plain, 1 Hermes, 2 Llama 3, 3 Mistral, 4 Phi-4-mini, 5
// not read; 8 added: the template thinks), then the reply.
Seeds reply_seeds() {
  const std::pair<const char*, std::pair<uint8_t, const char*>> replies[] = {
      {"plain", {0, "Paris is the capital of France."}},
      {"hermes_two", {1, "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                         "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"}},
      {"hermes_thinks", {9, "<think>\nThe user asks.\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": "
                            "{\"a\": [1, 2.5, null, true]}}\n</tool_call>"}},
      {"hermes_open", {1, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"caf\u00e9\"}"}},
      {"llama3_call", {2, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"}},
      {"llama3_two", {2, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {}}"}},
      {"llama3_answer", {2, "{\"name\": \"Bob\", \"age\": 3}"}},
      {"mistral_list", {3, "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
                           "\"call12345\"}]"}},
      {"mistral_args", {3, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]now[CALL_ID]abc[ARGS]{}"}},
      {"phi4", {4, "<|tool_call|>[{\"name\": \"a\", \"arguments\": {}}]<|/tool_call|><|tool_call|>{\"name\": "
                   "\"b\"}<|/tool_call|>"}},
      {"other", {5, "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"}},
  };
  Seeds s;
  for (const auto& [name, seed] : replies) {
    std::vector<uint8_t> bytes{seed.first};
    for (const char* c = seed.second; *c; ++c) bytes.push_back(static_cast<uint8_t>(*c));
    s[name] = std::move(bytes);
  }
  return s;
}

}  // namespace wt::fuzz
