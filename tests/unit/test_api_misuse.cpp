// API misuse (issue 10): every entry point of include/whittle.h with NULL handles and NULL
// out-params, params structs it cannot read, lengths no buffer can have, token ids and
// indices out of range, and calls out of order or after an error. Each returns a status
// with a wt_last_error() message naming what was wrong, never crashes, and leaves the
// objects it was given usable. test_api.cpp has the first cases of several of these (a
// NULL path, n_ctx -5, bad ids in prefill and decode, a full context, struct_size 0 / too
// small / too large for every params struct); the tables here cover every function.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "base/fault_injection.h"
#include "support/gguf_writer.h"
#include "whittle.h"

namespace {

const std::string kOtherVocab = std::string(WT_TEST_DATA_DIR) + "/reference/tiny_qwen2.gguf";  // 300 tokens

const std::string& tiny_path() {
  const std::string& path = wt::test::tiny_chat_model_path();
  REQUIRE_MESSAGE(!path.empty(), "cannot write the tiny model to the temp folder");
  return path;
}

wt_model* load(const std::string& path) {
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(path.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  return m;
}

wt_context_params small_params(wt_prune_method method = WT_PRUNE_FULL) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 16;
  cp.n_threads = 1;
  cp.prune.method = method;
  cp.prune.keep = 0.5f;
  cp.prune.window = 2;
  cp.prune.record_ranking = method != WT_PRUNE_FULL;
  return cp;
}

wt_context* make_ctx(const wt_model* m, const wt_context_params& cp) {
  wt_context* c = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &c) == WT_OK, wt_last_error());
  return c;
}

const wt_token kPrompt[8] = {10, 20, 30, 40, 50, 60, 70, 80};

std::vector<float> logits_of(const wt_context* c, int32_t n_vocab) {
  const float* l = nullptr;
  REQUIRE_MESSAGE(wt_context_logits(c, -1, &l) == WT_OK, wt_last_error());
  return std::vector<float>(l, l + n_vocab);
}

// One misuse: the call, the status it must return and a word its message must contain.
struct Misuse {
  const char* what;
  wt_status want;
  const char* says;  // "" = any non-empty message
  std::function<wt_status()> call;
};

void check_all(const std::vector<Misuse>& table) {
  for (const Misuse& m : table) {
    CAPTURE(std::string(m.what));
    wt_prune_method unused;
    (void)wt_prune_method_from_name("stale-message", &unused);  // a message the call must replace
    const wt_status st = m.call();
    const std::string msg = wt_last_error();
    CAPTURE(msg);
    CHECK(std::string(wt_status_string(st)) == wt_status_string(m.want));
    if (m.want == WT_OK) {
      CHECK(msg.empty());
    } else {
      CHECK(msg.find("stale-message") == std::string::npos);
      CHECK(msg.find(m.says) != std::string::npos);
    }
  }
}

// The objects the tables misuse, made once per test case.
struct Fixture {
  wt_model* m = load(tiny_path());
  wt_model* other = load(kOtherVocab);  // another vocabulary
  int32_t n_vocab = 0;
  int32_t n_layer = 0;
  wt_context* ctx = nullptr;     // after a prefill of kPrompt
  wt_context* fresh = nullptr;   // nothing run yet
  wt_context* pruned = nullptr;  // SnapKV with the ranking tap, nothing run yet
  wt_sampler* sampler = nullptr;
  wt_sampler* other_sampler = nullptr;  // of the other vocabulary
  wt_detokenizer* detok = nullptr;

  Fixture() {
    wt_model_info info;
    REQUIRE(wt_model_get_info(m, &info) == WT_OK);
    n_vocab = info.n_vocab;
    n_layer = info.n_layer;
    ctx = make_ctx(m, small_params());
    REQUIRE(wt_context_prefill(ctx, kPrompt, 8) == WT_OK);
    fresh = make_ctx(m, small_params());
    pruned = make_ctx(m, small_params(WT_PRUNE_SNAPKV));
    REQUIRE(wt_sampler_create(m, nullptr, &sampler) == WT_OK);
    REQUIRE(wt_sampler_create(other, nullptr, &other_sampler) == WT_OK);
    REQUIRE(wt_detokenizer_create(m, &detok) == WT_OK);
  }
  ~Fixture() {
    wt_detokenizer_free(detok);
    wt_sampler_free(other_sampler);
    wt_sampler_free(sampler);
    wt_context_free(pruned);
    wt_context_free(fresh);
    wt_context_free(ctx);
    wt_model_free(other);
    wt_model_free(m);
  }
};

}  // namespace

TEST_CASE("api misuse: model and tokenizer entry points refuse NULL and out-of-range arguments") {
  Fixture f;
  const wt_model* m = f.m;
  const int32_t nv = f.n_vocab;
  const std::string path = tiny_path();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  wt_model* out_model = nullptr;
  wt_model_info info;
  wt_token toks[64];
  size_t n = 0;
  char buf[256];
  size_t len = 0;
  wt_detokenizer* out_detok = nullptr;
  wt_prune_method method = WT_PRUNE_FULL;
  const wt_chat_message chat[1] = {{"user", "hi"}};
  const wt_chat_message no_role[1] = {{nullptr, "hi"}};
  const wt_chat_message no_content[1] = {{"user", nullptr}};
  const wt_chat_message bad_role[1] = {{"wizard", "hi"}};
  const size_t huge = std::numeric_limits<size_t>::max();
  const size_t past_any_object = static_cast<size_t>(PTRDIFF_MAX) + 1;

  const std::vector<Misuse> table = {
      {"load: NULL out_model", WT_ERR_INVALID_ARGUMENT, "out_model",
       [&] { return wt_model_load(path.c_str(), nullptr, nullptr); }},
      {"load: unknown backend kind", WT_ERR_INVALID_ARGUMENT, "backend",
       [&] {
         wt_model_params mp = wt_model_default_params();
         mp.backend = static_cast<wt_backend_kind>(99);
         return wt_model_load(path.c_str(), &mp, &out_model);
       }},
      {"load: a directory", WT_ERR_IO, "regular file", [&] { return wt_model_load(dir.c_str(), nullptr, &out_model); }},
      {"load: empty path", WT_ERR_IO, "cannot open", [&] { return wt_model_load("", nullptr, &out_model); }},
      {"get_info: NULL model", WT_ERR_INVALID_ARGUMENT, "model", [&] { return wt_model_get_info(nullptr, &info); }},
      {"get_info: NULL out_info", WT_ERR_INVALID_ARGUMENT, "out_info", [&] { return wt_model_get_info(m, nullptr); }},

      {"tokenize: NULL model", WT_ERR_INVALID_ARGUMENT, "model",
       [&] { return wt_tokenize(nullptr, "a", 1, nullptr, toks, 64, &n); }},
      {"tokenize: NULL out_n_tokens", WT_ERR_INVALID_ARGUMENT, "out_n_tokens",
       [&] { return wt_tokenize(m, "a", 1, nullptr, toks, 64, nullptr); }},
      {"tokenize: NULL text of length 5", WT_ERR_INVALID_ARGUMENT, "text",
       [&] { return wt_tokenize(m, nullptr, 5, nullptr, toks, 64, &n); }},
      {"tokenize: text_len SIZE_MAX", WT_ERR_INVALID_ARGUMENT, "text_len",
       [&] { return wt_tokenize(m, "a", huge, nullptr, toks, 64, &n); }},
      {"tokenize: text_len past any object", WT_ERR_INVALID_ARGUMENT, "text_len",
       [&] { return wt_tokenize(m, "a", past_any_object, nullptr, toks, 64, &n); }},
      {"tokenize: capacity 0", WT_ERR_BUFFER_TOO_SMALL, "fit",
       [&] { return wt_tokenize(m, "hello", 5, nullptr, toks, 0, &n); }},
      {"tokenize: NULL tokens with a capacity", WT_ERR_INVALID_ARGUMENT, "tokens is NULL with a capacity of 64",
       [&] { return wt_tokenize(m, "hello", 5, nullptr, nullptr, 64, &n); }},
      {"tokenize: NULL tokens, capacity 0 (asks for the count)", WT_ERR_BUFFER_TOO_SMALL, "fit",
       [&] { return wt_tokenize(m, "hello", 5, nullptr, nullptr, 0, &n); }},
      {"tokenize: NULL text of length 0 is the empty text", WT_OK, "",
       [&] { return wt_tokenize(m, nullptr, 0, nullptr, toks, 64, &n); }},

      {"token_to_bytes: NULL model", WT_ERR_INVALID_ARGUMENT, "model",
       [&] { return wt_token_to_bytes(nullptr, 0, buf, sizeof buf, &len); }},
      {"token_to_bytes: NULL out_len", WT_ERR_INVALID_ARGUMENT, "out_len",
       [&] { return wt_token_to_bytes(m, 0, buf, sizeof buf, nullptr); }},
      {"token_to_bytes: token -1", WT_ERR_INVALID_ARGUMENT, "-1",
       [&] { return wt_token_to_bytes(m, -1, buf, sizeof buf, &len); }},
      {"token_to_bytes: token n_vocab", WT_ERR_INVALID_ARGUMENT, "outside",
       [&] { return wt_token_to_bytes(m, nv, buf, sizeof buf, &len); }},
      {"token_to_bytes: INT32_MIN", WT_ERR_INVALID_ARGUMENT, "outside",
       [&] { return wt_token_to_bytes(m, INT32_MIN, buf, sizeof buf, &len); }},
      {"token_to_bytes: capacity 0", WT_ERR_BUFFER_TOO_SMALL, "needs",
       [&] { return wt_token_to_bytes(m, 'a', buf, 0, &len); }},
      {"token_to_bytes: NULL buf", WT_ERR_BUFFER_TOO_SMALL, "needs",
       [&] { return wt_token_to_bytes(m, 'a', nullptr, 8, &len); }},

      {"detokenizer_create: NULL model", WT_ERR_INVALID_ARGUMENT, "model",
       [&] { return wt_detokenizer_create(nullptr, &out_detok); }},
      {"detokenizer_create: NULL out_detok", WT_ERR_INVALID_ARGUMENT, "out_detok",
       [&] { return wt_detokenizer_create(m, nullptr); }},
      {"detokenizer_push: NULL detok", WT_ERR_INVALID_ARGUMENT, "detok",
       [&] { return wt_detokenizer_push(nullptr, 'a', buf, sizeof buf, &len); }},
      {"detokenizer_push: NULL out_len", WT_ERR_INVALID_ARGUMENT, "out_len",
       [&] { return wt_detokenizer_push(f.detok, 'a', buf, sizeof buf, nullptr); }},
      {"detokenizer_push: token -7", WT_ERR_INVALID_ARGUMENT, "-7",
       [&] { return wt_detokenizer_push(f.detok, -7, buf, sizeof buf, &len); }},
      {"detokenizer_push: token n_vocab", WT_ERR_INVALID_ARGUMENT, "outside",
       [&] { return wt_detokenizer_push(f.detok, nv, buf, sizeof buf, &len); }},
      {"detokenizer_push: capacity 0", WT_ERR_BUFFER_TOO_SMALL, "buffer",
       [&] { return wt_detokenizer_push(f.detok, 'a', buf, 0, &len); }},
      {"detokenizer_push: NULL buf", WT_ERR_BUFFER_TOO_SMALL, "buffer",
       [&] { return wt_detokenizer_push(f.detok, 'a', nullptr, 64, &len); }},
      {"detokenizer_flush: NULL detok", WT_ERR_INVALID_ARGUMENT, "detok",
       [&] { return wt_detokenizer_flush(nullptr, buf, sizeof buf, &len); }},
      {"detokenizer_flush: NULL out_len", WT_ERR_INVALID_ARGUMENT, "out_len",
       [&] { return wt_detokenizer_flush(f.detok, buf, sizeof buf, nullptr); }},
      {"detokenizer_flush: capacity 0 (the NUL does not fit)", WT_ERR_BUFFER_TOO_SMALL, "buffer",
       [&] { return wt_detokenizer_flush(f.detok, buf, 0, &len); }},

      {"chat_apply: NULL model", WT_ERR_INVALID_ARGUMENT, "model",
       [&] { return wt_chat_apply(nullptr, chat, 1, true, buf, sizeof buf, &len); }},
      {"chat_apply: NULL out_len", WT_ERR_INVALID_ARGUMENT, "out_len",
       [&] { return wt_chat_apply(m, chat, 1, true, buf, sizeof buf, nullptr); }},
      {"chat_apply: NULL messages", WT_ERR_INVALID_ARGUMENT, "messages",
       [&] { return wt_chat_apply(m, nullptr, 1, true, buf, sizeof buf, &len); }},
      {"chat_apply: NULL role", WT_ERR_INVALID_ARGUMENT, "NULL role",
       [&] { return wt_chat_apply(m, no_role, 1, true, buf, sizeof buf, &len); }},
      {"chat_apply: NULL content", WT_ERR_INVALID_ARGUMENT, "NULL role or content",
       [&] { return wt_chat_apply(m, no_content, 1, true, buf, sizeof buf, &len); }},
      {"chat_apply: unknown role", WT_ERR_INVALID_ARGUMENT, "wizard",
       [&] { return wt_chat_apply(m, bad_role, 1, true, buf, sizeof buf, &len); }},
      {"chat_apply: n_messages SIZE_MAX", WT_ERR_INVALID_ARGUMENT, "n_messages",
       [&] { return wt_chat_apply(m, chat, huge, true, buf, sizeof buf, &len); }},
      {"chat_apply: capacity 0", WT_ERR_BUFFER_TOO_SMALL, "buffer",
       [&] { return wt_chat_apply(m, chat, 1, true, buf, 0, &len); }},
      {"chat_apply: NULL buf", WT_ERR_BUFFER_TOO_SMALL, "buffer",
       [&] { return wt_chat_apply(m, chat, 1, true, nullptr, 64, &len); }},
      {"chat_apply: no messages opens the assistant turn", WT_OK, "",
       [&] { return wt_chat_apply(m, nullptr, 0, true, buf, sizeof buf, &len); }},
      {"chat_apply_vars: not JSON", WT_ERR_INVALID_ARGUMENT, "at byte 1",
       [&] { return wt_chat_apply_vars(m, chat, 1, true, "{enable_thinking: false}", buf, sizeof buf, &len); }},
      {"chat_apply_vars: not an object", WT_ERR_INVALID_ARGUMENT, "a JSON object expected",
       [&] { return wt_chat_apply_vars(m, chat, 1, true, "[1]", buf, sizeof buf, &len); }},
      {"chat_apply_vars: a name the call sets", WT_ERR_INVALID_ARGUMENT, "'add_generation_prompt'",
       [&] { return wt_chat_apply_vars(m, chat, 1, true, "{\"add_generation_prompt\": false}", buf, sizeof buf, &len); }},
      {"chat_apply_vars: a name twice", WT_ERR_INVALID_ARGUMENT, "twice",
       [&] { return wt_chat_apply_vars(m, chat, 1, true, "{\"a\": 1, \"a\": 2}", buf, sizeof buf, &len); }},
      {"chat_apply_vars: NULL model", WT_ERR_INVALID_ARGUMENT, "model",
       [&] { return wt_chat_apply_vars(nullptr, chat, 1, true, "{}", buf, sizeof buf, &len); }},
      {"chat_apply_vars: \"\" is no variables", WT_OK, "",
       [&] { return wt_chat_apply_vars(m, chat, 1, true, "", buf, sizeof buf, &len); }},
      {"chat_apply_vars: NULL is no variables", WT_OK, "",
       [&] { return wt_chat_apply_vars(m, chat, 1, true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: NULL model", WT_ERR_INVALID_ARGUMENT, "model",
       [&] { return wt_chat_apply_json(nullptr, "[]", true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: NULL out_len", WT_ERR_INVALID_ARGUMENT, "out_len",
       [&] { return wt_chat_apply_json(m, "[]", true, nullptr, buf, sizeof buf, nullptr); }},
      {"chat_apply_json: NULL messages_json", WT_ERR_INVALID_ARGUMENT, "messages_json",
       [&] { return wt_chat_apply_json(m, nullptr, true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: not JSON", WT_ERR_INVALID_ARGUMENT, "at byte 2",
       [&] { return wt_chat_apply_json(m, "[{role: 1}]", true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: not an array", WT_ERR_INVALID_ARGUMENT, "a JSON array of messages",
       [&] { return wt_chat_apply_json(m, "{\"role\": \"user\"}", true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: a message not an object", WT_ERR_INVALID_ARGUMENT, "message 1 is not a JSON object",
       [&] { return wt_chat_apply_json(m, "[{\"role\": \"user\"}, \"hi\"]", true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: no role", WT_ERR_INVALID_ARGUMENT, "message 0 has no role",
       [&] { return wt_chat_apply_json(m, "[{\"content\": \"hi\"}]", true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: a role not a string", WT_ERR_INVALID_ARGUMENT, "role that is not a string",
       [&] { return wt_chat_apply_json(m, "[{\"role\": null}]", true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: unknown role", WT_ERR_INVALID_ARGUMENT, "wizard",
       [&] { return wt_chat_apply_json(m, "[{\"role\": \"wizard\"}]", true, nullptr, buf, sizeof buf, &len); }},
      {"chat_apply_json: content parts", WT_ERR_INVALID_ARGUMENT, "content parts",
       [&] {
         return wt_chat_apply_json(m, "[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi\"}]}]",
                                   true, nullptr, buf, sizeof buf, &len);
       }},
      {"chat_apply_json: variables as for chat_apply_vars", WT_ERR_INVALID_ARGUMENT, "a JSON object expected",
       [&] { return wt_chat_apply_json(m, "[]", true, "[1]", buf, sizeof buf, &len); }},
      {"chat_apply_json: capacity 0", WT_ERR_BUFFER_TOO_SMALL, "buffer",
       [&] { return wt_chat_apply_json(m, "[{\"role\": \"user\", \"content\": \"hi\"}]", true, nullptr, buf, 0, &len); }},
      {"chat_apply_json: no messages opens the assistant turn", WT_OK, "",
       [&] { return wt_chat_apply_json(m, " [ ] ", true, "", buf, sizeof buf, &len); }},

      {"prune_method_from_name: NULL name", WT_ERR_INVALID_ARGUMENT, "name",
       [&] { return wt_prune_method_from_name(nullptr, &method); }},
      {"prune_method_from_name: NULL out_method", WT_ERR_INVALID_ARGUMENT, "out_method",
       [&] { return wt_prune_method_from_name("snapkv", nullptr); }},
      {"prune_method_from_name: unknown name", WT_ERR_INVALID_ARGUMENT, "nosuch",
       [&] { return wt_prune_method_from_name("nosuch", &method); }},
  };
  check_all(table);
  CHECK(out_model == nullptr);
  CHECK(out_detok == nullptr);
  // A refused push consumed nothing: the detokenizer still works.
  REQUIRE(wt_detokenizer_push(f.detok, 'a', buf, sizeof buf, &len) == WT_OK);
  CHECK(std::string(buf, len) == "a");
}

TEST_CASE("api misuse: context and sampling entry points refuse NULL and out-of-range arguments") {
  Fixture f;
  const wt_model* m = f.m;
  const int32_t nv = f.n_vocab;
  wt_context* out_ctx = nullptr;
  wt_context_plan_info plan;
  wt_context_stats stats;
  wt_prune_stats pstats;
  const float* logits = nullptr;
  const float* scores = nullptr;
  int32_t n_scores = 0;
  const int32_t* kv_pos = nullptr;
  uint64_t dev = 0, host = 0;
  wt_sampler* out_sampler = nullptr;
  wt_token tok = 0;
  int32_t n_gen = 0;
  const wt_token one_bad[3] = {1, nv, 2};
  const wt_token negative[3] = {1, -5, 2};
  auto create_with = [&](const std::function<void(wt_context_params*)>& change) {
    return [&, change] {
      wt_context_params cp = small_params();
      change(&cp);
      return wt_context_create(m, &cp, &out_ctx);
    };
  };
  auto sampler_with = [&](const std::function<void(wt_sampler_params*)>& change) {
    return [&, change] {
      wt_sampler_params sp = wt_sampler_default_params();
      change(&sp);
      return wt_sampler_create(m, &sp, &out_sampler);
    };
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();

  const std::vector<Misuse> table = {
      {"create: NULL model", WT_ERR_INVALID_ARGUMENT, "model", [&] { return wt_context_create(nullptr, nullptr, &out_ctx); }},
      {"create: NULL out_ctx", WT_ERR_INVALID_ARGUMENT, "out_ctx", [&] { return wt_context_create(m, nullptr, nullptr); }},
      {"create: n_ctx above the limit", WT_ERR_INVALID_ARGUMENT, "n_ctx",
       create_with([](wt_context_params* p) { p->n_ctx = (1 << 20) + 1; })},
      {"create: n_ctx INT32_MIN", WT_ERR_INVALID_ARGUMENT, "n_ctx",
       create_with([](wt_context_params* p) { p->n_ctx = INT32_MIN; })},
      {"create: n_threads -1", WT_ERR_INVALID_ARGUMENT, "n_threads",
       create_with([](wt_context_params* p) { p->n_threads = -1; })},
      {"create: n_threads 100000", WT_ERR_INVALID_ARGUMENT, "n_threads",
       create_with([](wt_context_params* p) { p->n_threads = 100000; })},
      {"create: unknown matmul_mode", WT_ERR_INVALID_ARGUMENT, "matmul_mode",
       create_with([](wt_context_params* p) { p->matmul_mode = static_cast<wt_matmul_mode>(7); })},
      {"create: unknown prune method", WT_ERR_INVALID_ARGUMENT, "method",
       create_with([](wt_context_params* p) { p->prune.method = static_cast<wt_prune_method>(-3); })},
      {"create: keep NaN", WT_ERR_INVALID_ARGUMENT, "keep",
       create_with([nan](wt_context_params* p) {
         p->prune.method = WT_PRUNE_SNAPKV;
         p->prune.keep = nan;
       })},
      {"create: kv_device_blocks -1", WT_ERR_INVALID_ARGUMENT, "kv_device_blocks",
       create_with([](wt_context_params* p) { p->kv_device_blocks = -1; })},
      {"create: a pager pool below one layer", WT_ERR_INVALID_ARGUMENT, "kv_device_blocks",
       create_with([](wt_context_params* p) {
         p->kv_device_blocks = 1;
         p->kv_block_tokens = 4;
       })},
      {"create: kv_block_tokens 0", WT_ERR_INVALID_ARGUMENT, "kv_block_tokens",
       create_with([](wt_context_params* p) {
         p->kv_device_blocks = 4;
         p->kv_block_tokens = 0;
       })},
      {"create: max_new_tokens -1", WT_ERR_INVALID_ARGUMENT, "max_new_tokens",
       create_with([](wt_context_params* p) { p->max_new_tokens = -1; })},
      {"plan: NULL model", WT_ERR_INVALID_ARGUMENT, "model", [&] { return wt_context_plan(nullptr, nullptr, &plan); }},
      {"plan: NULL out_plan", WT_ERR_INVALID_ARGUMENT, "out_plan", [&] { return wt_context_plan(m, nullptr, nullptr); }},
      {"plan: struct_size 0", WT_ERR_INVALID_ARGUMENT, "struct_size",
       [&] {
         wt_context_params cp = small_params();
         cp.struct_size = 0;
         return wt_context_plan(m, &cp, &plan);
       }},
      {"plan: n_threads -1", WT_ERR_INVALID_ARGUMENT, "n_threads",
       [&] {
         wt_context_params cp = small_params();
         cp.n_threads = -1;
         return wt_context_plan(m, &cp, &plan);
       }},

      {"prefill: NULL tokens", WT_ERR_INVALID_ARGUMENT, "tokens", [&] { return wt_context_prefill(f.ctx, nullptr, 1); }},
      {"prefill: n_tokens SIZE_MAX", WT_ERR_CONTEXT_FULL, "exceed",
       [&] { return wt_context_prefill(f.ctx, kPrompt, std::numeric_limits<size_t>::max()); }},
      {"prefill: n_tokens INT32_MAX + 1", WT_ERR_CONTEXT_FULL, "exceed",
       [&] { return wt_context_prefill(f.ctx, kPrompt, static_cast<size_t>(INT32_MAX) + 1); }},
      {"prefill: n_tokens INT32_MAX", WT_ERR_CONTEXT_FULL, "do not fit",
       [&] { return wt_context_prefill(f.ctx, kPrompt, static_cast<size_t>(INT32_MAX)); }},
      {"prefill: token n_vocab", WT_ERR_INVALID_ARGUMENT, "outside", [&] { return wt_context_prefill(f.ctx, one_bad, 3); }},
      {"prefill: a negative token", WT_ERR_INVALID_ARGUMENT, "-5", [&] { return wt_context_prefill(f.ctx, negative, 3); }},
      {"decode: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx", [&] { return wt_context_decode(nullptr, 1); }},
      {"decode: token n_vocab", WT_ERR_INVALID_ARGUMENT, "outside", [&] { return wt_context_decode(f.ctx, nv); }},
      {"decode: token INT32_MIN", WT_ERR_INVALID_ARGUMENT, "outside", [&] { return wt_context_decode(f.ctx, INT32_MIN); }},
      {"logits: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx", [&] { return wt_context_logits(nullptr, -1, &logits); }},
      {"logits: NULL out_logits", WT_ERR_INVALID_ARGUMENT, "out_logits",
       [&] { return wt_context_logits(f.ctx, -1, nullptr); }},
      {"logits: row -2", WT_ERR_INVALID_ARGUMENT, "row -2", [&] { return wt_context_logits(f.ctx, -2, &logits); }},
      {"logits: row INT32_MIN", WT_ERR_INVALID_ARGUMENT, "row", [&] { return wt_context_logits(f.ctx, INT32_MIN, &logits); }},
      {"logits: row 8 of 8", WT_ERR_INVALID_ARGUMENT, "row 8", [&] { return wt_context_logits(f.ctx, 8, &logits); }},
      {"logits: row INT32_MAX", WT_ERR_INVALID_ARGUMENT, "row", [&] { return wt_context_logits(f.ctx, INT32_MAX, &logits); }},
      {"get_stats: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx", [&] { return wt_context_get_stats(nullptr, &stats); }},
      {"get_stats: NULL out_stats", WT_ERR_INVALID_ARGUMENT, "out_stats",
       [&] { return wt_context_get_stats(f.ctx, nullptr); }},
      {"kv_residency: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx",
       [&] { return wt_context_get_kv_residency(nullptr, 0, &dev, &host); }},
      {"kv_residency: NULL out_device_bytes", WT_ERR_INVALID_ARGUMENT, "out_device_bytes",
       [&] { return wt_context_get_kv_residency(f.ctx, 0, nullptr, &host); }},
      {"kv_residency: NULL out_host_bytes", WT_ERR_INVALID_ARGUMENT, "out_host_bytes",
       [&] { return wt_context_get_kv_residency(f.ctx, 0, &dev, nullptr); }},
      {"kv_residency: layer -1", WT_ERR_INVALID_ARGUMENT, "layer -1",
       [&] { return wt_context_get_kv_residency(f.ctx, -1, &dev, &host); }},
      {"kv_residency: layer n_layer", WT_ERR_INVALID_ARGUMENT, "outside",
       [&] { return wt_context_get_kv_residency(f.ctx, f.n_layer, &dev, &host); }},
      {"prune_stats: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx", [&] { return wt_context_get_prune_stats(nullptr, &pstats); }},
      {"prune_stats: NULL out_stats", WT_ERR_INVALID_ARGUMENT, "out_stats",
       [&] { return wt_context_get_prune_stats(f.ctx, nullptr); }},
      {"token_ranking: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx",
       [&] { return wt_context_get_token_ranking(nullptr, -1, &scores, &n_scores); }},
      {"token_ranking: NULL out_scores", WT_ERR_INVALID_ARGUMENT, "out_scores",
       [&] { return wt_context_get_token_ranking(f.pruned, -1, nullptr, &n_scores); }},
      {"token_ranking: NULL out_n", WT_ERR_INVALID_ARGUMENT, "out_n",
       [&] { return wt_context_get_token_ranking(f.pruned, -1, &scores, nullptr); }},
      {"token_ranking: layer -2", WT_ERR_INVALID_ARGUMENT, "layer -2",
       [&] { return wt_context_get_token_ranking(f.pruned, -2, &scores, &n_scores); }},
      {"token_ranking: layer n_layer", WT_ERR_INVALID_ARGUMENT, "outside",
       [&] { return wt_context_get_token_ranking(f.pruned, f.n_layer, &scores, &n_scores); }},
      {"token_ranking: a context that does not record", WT_ERR_INVALID_ARGUMENT, "record_ranking",
       [&] { return wt_context_get_token_ranking(f.ctx, -1, &scores, &n_scores); }},
      {"kv_positions: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx",
       [&] { return wt_context_get_kv_positions(nullptr, 0, 0, &kv_pos, &n_scores); }},
      {"kv_positions: NULL out_positions", WT_ERR_INVALID_ARGUMENT, "out_positions",
       [&] { return wt_context_get_kv_positions(f.ctx, 0, 0, nullptr, &n_scores); }},
      {"kv_positions: NULL out_n", WT_ERR_INVALID_ARGUMENT, "out_n",
       [&] { return wt_context_get_kv_positions(f.ctx, 0, 0, &kv_pos, nullptr); }},
      {"kv_positions: layer n_layer", WT_ERR_INVALID_ARGUMENT, "outside",
       [&] { return wt_context_get_kv_positions(f.ctx, f.n_layer, 0, &kv_pos, &n_scores); }},
      {"kv_positions: kv_head -1", WT_ERR_INVALID_ARGUMENT, "kv_head -1",
       [&] { return wt_context_get_kv_positions(f.ctx, 0, -1, &kv_pos, &n_scores); }},
      {"attended_rows: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx",
       [&] { return wt_context_get_attended_rows(nullptr, 0, &kv_pos, &n_scores); }},
      {"attended_rows: NULL out_rows", WT_ERR_INVALID_ARGUMENT, "out_rows",
       [&] { return wt_context_get_attended_rows(f.pruned, 0, nullptr, &n_scores); }},
      {"attended_rows: layer n_layer", WT_ERR_INVALID_ARGUMENT, "outside",
       [&] { return wt_context_get_attended_rows(f.pruned, f.n_layer, &kv_pos, &n_scores); }},
      {"attended_rows: a context that does not record", WT_ERR_INVALID_ARGUMENT, "record_ranking",
       [&] { return wt_context_get_attended_rows(f.ctx, 0, &kv_pos, &n_scores); }},

      {"sampler_create: NULL model", WT_ERR_INVALID_ARGUMENT, "model",
       [&] { return wt_sampler_create(nullptr, nullptr, &out_sampler); }},
      {"sampler_create: NULL out_sampler", WT_ERR_INVALID_ARGUMENT, "out_sampler",
       [&] { return wt_sampler_create(m, nullptr, nullptr); }},
      {"sampler_create: temperature NaN", WT_ERR_INVALID_ARGUMENT, "temperature",
       sampler_with([nan](wt_sampler_params* p) { p->temperature = nan; })},
      {"sampler_create: temperature infinite", WT_ERR_INVALID_ARGUMENT, "temperature",
       sampler_with([](wt_sampler_params* p) { p->temperature = std::numeric_limits<float>::infinity(); })},
      {"sampler_create: top_p NaN", WT_ERR_INVALID_ARGUMENT, "top_p",
       sampler_with([nan](wt_sampler_params* p) { p->top_p = nan; })},
      {"sampler_create: top_p 1.5", WT_ERR_INVALID_ARGUMENT, "top_p",
       sampler_with([](wt_sampler_params* p) { p->top_p = 1.5f; })},
      {"sampler_create: top_k INT32_MIN", WT_ERR_INVALID_ARGUMENT, "top_k",
       sampler_with([](wt_sampler_params* p) { p->top_k = INT32_MIN; })},
      {"sampler_create: min_p NaN", WT_ERR_INVALID_ARGUMENT, "min_p",
       sampler_with([nan](wt_sampler_params* p) { p->min_p = nan; })},
      {"sampler_create: min_p -0.1", WT_ERR_INVALID_ARGUMENT, "min_p",
       sampler_with([](wt_sampler_params* p) { p->min_p = -0.1f; })},
      {"sampler_create: min_p 1.5", WT_ERR_INVALID_ARGUMENT, "min_p",
       sampler_with([](wt_sampler_params* p) { p->min_p = 1.5f; })},
      {"sampler_create: repeat_penalty 0", WT_ERR_INVALID_ARGUMENT, "repeat_penalty",
       sampler_with([](wt_sampler_params* p) { p->repeat_penalty = 0.0f; })},
      {"sampler_create: repeat_penalty NaN", WT_ERR_INVALID_ARGUMENT, "repeat_penalty",
       sampler_with([nan](wt_sampler_params* p) { p->repeat_penalty = nan; })},
      {"sampler_create: frequency_penalty infinite", WT_ERR_INVALID_ARGUMENT, "frequency_penalty",
       sampler_with([](wt_sampler_params* p) { p->frequency_penalty = std::numeric_limits<float>::infinity(); })},
      {"sampler_create: presence_penalty NaN", WT_ERR_INVALID_ARGUMENT, "presence_penalty",
       sampler_with([nan](wt_sampler_params* p) { p->presence_penalty = nan; })},
      {"sampler_create: penalty_last_n -1", WT_ERR_INVALID_ARGUMENT, "penalty_last_n",
       sampler_with([](wt_sampler_params* p) { p->penalty_last_n = -1; })},
      {"sampler_create: penalty_last_n 2^20 + 1", WT_ERR_INVALID_ARGUMENT, "penalty_last_n",
       sampler_with([](wt_sampler_params* p) { p->penalty_last_n = (1 << 20) + 1; })},
      {"sampler_reset: NULL sampler", WT_ERR_INVALID_ARGUMENT, "sampler", [&] { return wt_sampler_reset(nullptr); }},
      {"sampler_accept: NULL sampler", WT_ERR_INVALID_ARGUMENT, "sampler",
       [&] { return wt_sampler_accept(nullptr, &tok, 1); }},
      {"sampler_accept: NULL tokens", WT_ERR_INVALID_ARGUMENT, "tokens",
       [&] { return wt_sampler_accept(f.sampler, nullptr, 2); }},
      {"sampler_accept: a token past the vocabulary", WT_ERR_INVALID_ARGUMENT, "outside the vocabulary",
       [&] {
         const wt_token bad[2] = {0, 1 << 30};
         return wt_sampler_accept(f.sampler, bad, 2);
       }},
      {"sample: NULL sampler", WT_ERR_INVALID_ARGUMENT, "sampler", [&] { return wt_sampler_sample(nullptr, f.ctx, &tok); }},
      {"sample: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx", [&] { return wt_sampler_sample(f.sampler, nullptr, &tok); }},
      {"sample: NULL out_token", WT_ERR_INVALID_ARGUMENT, "out_token",
       [&] { return wt_sampler_sample(f.sampler, f.ctx, nullptr); }},
      {"sample: a sampler of another vocabulary", WT_ERR_INVALID_ARGUMENT, "sampler was created",
       [&] { return wt_sampler_sample(f.other_sampler, f.ctx, &tok); }},
      {"generate: NULL ctx", WT_ERR_INVALID_ARGUMENT, "ctx",
       [&] { return wt_generate(nullptr, f.sampler, 4, nullptr, nullptr, &n_gen); }},
      {"generate: NULL sampler", WT_ERR_INVALID_ARGUMENT, "sampler",
       [&] { return wt_generate(f.ctx, nullptr, 4, nullptr, nullptr, &n_gen); }},
      {"generate: n_max -1", WT_ERR_INVALID_ARGUMENT, "n_max",
       [&] { return wt_generate(f.ctx, f.sampler, -1, nullptr, nullptr, &n_gen); }},
      {"generate: n_max INT32_MIN", WT_ERR_INVALID_ARGUMENT, "n_max",
       [&] { return wt_generate(f.ctx, f.sampler, INT32_MIN, nullptr, nullptr, &n_gen); }},
      {"generate: a sampler of another vocabulary", WT_ERR_INVALID_ARGUMENT, "sampler was created",
       [&] { return wt_generate(f.ctx, f.other_sampler, 4, nullptr, nullptr, &n_gen); }},
  };
  check_all(table);
  CHECK(out_ctx == nullptr);
  CHECK(out_sampler == nullptr);
  // Every refusal left the prefilled context as it was.
  CHECK(wt_context_n_past(f.ctx) == 8);
  CHECK(wt_context_logits(f.ctx, -1, &logits) == WT_OK);
  CHECK(wt_context_decode(f.ctx, 5) == WT_OK);
}

TEST_CASE("api misuse: functions without a status take NULL and out-of-range values quietly") {
  wt_model_free(nullptr);
  wt_context_free(nullptr);
  wt_sampler_free(nullptr);
  wt_detokenizer_free(nullptr);
  wt_context_abort(nullptr);
  wt_context_reset(nullptr);
  wt_set_log_callback(nullptr, nullptr);
  CHECK(wt_context_n_past(nullptr) == 0);
  CHECK(wt_token_bos(nullptr) == -1);
  CHECK(wt_token_eos(nullptr) == -1);
  CHECK_FALSE(wt_token_is_end(nullptr, 0));
  CHECK(std::string(wt_status_string(static_cast<wt_status>(-1))) == "WT_ERR_UNKNOWN");
  CHECK(std::string(wt_prune_method_name(static_cast<wt_prune_method>(99))) == "unknown");
  CHECK(std::string(wt_prune_method_name(static_cast<wt_prune_method>(-1))) == "unknown");
  wt_model* m = load(tiny_path());
  CHECK_FALSE(wt_token_is_end(m, -1));
  CHECK_FALSE(wt_token_is_end(m, INT32_MAX));
  CHECK_FALSE(wt_token_is_end(m, INT32_MIN));
  CHECK(wt_token_is_end(m, wt_token_eos(m)));
  wt_model_free(m);
}

TEST_CASE("api misuse: calls before any prefill") {
  wt_model* m = load(tiny_path());
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  wt_context* full = make_ctx(m, small_params());
  wt_context* pruned = make_ctx(m, small_params(WT_PRUNE_SNAPKV));
  wt_sampler* s = nullptr;
  REQUIRE(wt_sampler_create(m, nullptr, &s) == WT_OK);

  for (wt_context* c : {full, pruned}) {
    const float* l = nullptr;
    CHECK(wt_context_logits(c, -1, &l) == WT_ERR_INVALID_ARGUMENT);
    CHECK(std::string(wt_last_error()).find("prefill") != std::string::npos);
    wt_token t = 0;
    CHECK(wt_sampler_sample(s, c, &t) == WT_ERR_INVALID_ARGUMENT);
    int32_t n_gen = -1;
    CHECK(wt_generate(c, s, 4, nullptr, nullptr, &n_gen) == WT_ERR_INVALID_ARGUMENT);
    CHECK(std::string(wt_last_error()).find("prefill") != std::string::npos);
    // What has nothing to report yet reports zeros.
    wt_context_stats st;
    REQUIRE(wt_context_get_stats(c, &st) == WT_OK);
    CHECK(st.n_prefill_tokens == 0);
    CHECK(st.n_decode_tokens == 0);
    wt_prune_stats ps;
    REQUIRE(wt_context_get_prune_stats(c, &ps) == WT_OK);
    CHECK(ps.n_prompt == 0);
    uint64_t dev = 1, host = 1;
    REQUIRE(wt_context_get_kv_residency(c, 0, &dev, &host) == WT_OK);
    CHECK(dev == 0);
    CHECK(host == 0);
  }
  const float* scores = nullptr;
  int32_t n = 0;
  CHECK(wt_context_get_token_ranking(pruned, -1, &scores, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("no pruned prefill") != std::string::npos);

  // A decode first is a one-token prompt: the logits of a prefill of that token. On a
  // pruned context it is not pruned, and the prefill after it appends.
  REQUIRE(wt_context_decode(full, 42) == WT_OK);
  wt_context* ref = make_ctx(m, small_params());
  const wt_token t42 = 42;
  REQUIRE(wt_context_prefill(ref, &t42, 1) == WT_OK);
  CHECK(logits_of(full, info.n_vocab) == logits_of(ref, info.n_vocab));
  REQUIRE(wt_context_decode(pruned, 42) == WT_OK);
  CHECK(logits_of(pruned, info.n_vocab) == logits_of(ref, info.n_vocab));
  REQUIRE(wt_context_prefill(pruned, kPrompt, 8) == WT_OK);
  CHECK(wt_context_n_past(pruned) == 9);
  CHECK(wt_context_get_token_ranking(pruned, -1, &scores, &n) == WT_ERR_INVALID_ARGUMENT);
  wt_context_free(ref);
  wt_sampler_free(s);
  wt_context_free(pruned);
  wt_context_free(full);
  wt_model_free(m);
}

TEST_CASE("api misuse: refused calls change nothing and the context goes on as if they never came") {
  wt_model* m = load(tiny_path());
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  const int32_t nv = info.n_vocab;
  for (wt_prune_method method : {WT_PRUNE_FULL, WT_PRUNE_SNAPKV}) {
    CAPTURE(std::string(wt_prune_method_name(method)));
    wt_context* ref = make_ctx(m, small_params(method));
    wt_context* c = make_ctx(m, small_params(method));
    REQUIRE(wt_context_prefill(ref, kPrompt, 8) == WT_OK);
    REQUIRE(wt_context_decode(ref, 7) == WT_OK);
    const std::vector<float> want = logits_of(ref, nv);

    const wt_token bad[2] = {3, -1};
    CHECK(wt_context_prefill(c, bad, 2) == WT_ERR_INVALID_ARGUMENT);  // before the first prefill: still pruned later
    REQUIRE(wt_context_prefill(c, kPrompt, 8) == WT_OK);
    const std::vector<float> after_prompt = logits_of(c, nv);
    CHECK(wt_context_decode(c, nv) == WT_ERR_INVALID_ARGUMENT);
    CHECK(wt_context_prefill(c, bad, 2) == WT_ERR_INVALID_ARGUMENT);
    CHECK(wt_context_prefill(c, kPrompt, 0) == WT_ERR_INVALID_ARGUMENT);
    const wt_token nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK(wt_context_prefill(c, nine, 9) == WT_ERR_CONTEXT_FULL);  // 8 + 9 > 16
    CHECK(wt_context_n_past(c) == 8);
    CHECK(logits_of(c, nv) == after_prompt);
    REQUIRE(wt_context_decode(c, 7) == WT_OK);
    CHECK(logits_of(c, nv) == want);
    wt_context_free(c);
    wt_context_free(ref);
  }
  wt_model_free(m);
}

TEST_CASE("api misuse: a full context refuses decode and generate and keeps its tokens and logits") {
  wt_model* m = load(tiny_path());
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  wt_context* c = make_ctx(m, small_params());
  wt_token prompt[15];
  for (int i = 0; i < 15; ++i) prompt[i] = 10 + i;
  REQUIRE(wt_context_prefill(c, prompt, 15) == WT_OK);
  wt_sampler* s = nullptr;
  REQUIRE(wt_sampler_create(m, nullptr, &s) == WT_OK);
  // One decode fills the context; generate's next decode is refused, the token it sampled
  // is counted, and the context holds all 16.
  int32_t n_gen = 0;
  CHECK(wt_generate(c, s, 5, nullptr, nullptr, &n_gen) == WT_ERR_CONTEXT_FULL);
  CHECK(std::string(wt_last_error()).find("do not fit") != std::string::npos);
  CHECK(n_gen == 2);
  CHECK(wt_context_n_past(c) == 16);
  const std::vector<float> last = logits_of(c, info.n_vocab);
  CHECK(wt_context_decode(c, 1) == WT_ERR_CONTEXT_FULL);
  CHECK(wt_context_prefill(c, prompt, 1) == WT_ERR_CONTEXT_FULL);
  CHECK(wt_generate(c, s, 1, nullptr, nullptr, &n_gen) == WT_OK);  // samples one, decodes none
  CHECK(n_gen == 1);
  CHECK(wt_generate(c, s, 0, nullptr, nullptr, &n_gen) == WT_OK);
  CHECK(n_gen == 0);
  CHECK(wt_context_n_past(c) == 16);
  CHECK(logits_of(c, info.n_vocab) == last);
  wt_context_reset(c);
  CHECK(wt_context_prefill(c, prompt, 15) == WT_OK);
  wt_sampler_free(s);
  wt_context_free(c);
  wt_model_free(m);
}

// A failure in the middle of the model (here a backend launch made to fail, as a lost device
// would) resets the context (whittle.h, wt_context_prefill): no tokens, no logits, no ranking,
// and the next prefill runs as on a fresh context. test_alloc_failure.cpp sweeps every launch.
TEST_CASE("api misuse: a prefill or decode that fails while running resets the context") {
  using wt::fault::Site;
  wt_model* m = load(tiny_path());
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  for (wt_prune_method method : {WT_PRUNE_FULL, WT_PRUNE_SNAPKV}) {
    CAPTURE(std::string(wt_prune_method_name(method)));
    wt_context* ref = make_ctx(m, small_params(method));
    REQUIRE(wt_context_prefill(ref, kPrompt, 8) == WT_OK);
    REQUIRE(wt_context_decode(ref, 7) == WT_OK);
    const std::vector<float> want = logits_of(ref, info.n_vocab);
    wt_context_free(ref);

    wt_context* c = make_ctx(m, small_params(method));
    for (int step = 0; step < 2; ++step) {  // the prefill fails, then a decode
      if (step == 1) REQUIRE(wt_context_prefill(c, kPrompt, 8) == WT_OK);
      wt::fault::arm(Site::launch, 5);
      const wt_status st = step == 0 ? wt_context_prefill(c, kPrompt, 8) : wt_context_decode(c, 7);
      wt::fault::disarm(Site::launch);
      CHECK(st == WT_ERR_BACKEND);
      CHECK(std::string(wt_last_error()).find("injected") != std::string::npos);
      CHECK(wt_context_n_past(c) == 0);
      const float* l = nullptr;
      CHECK(wt_context_logits(c, -1, &l) == WT_ERR_INVALID_ARGUMENT);
      const float* scores = nullptr;
      int32_t n = 0;
      if (method != WT_PRUNE_FULL) CHECK(wt_context_get_token_ranking(c, -1, &scores, &n) == WT_ERR_INVALID_ARGUMENT);
      REQUIRE(wt_context_prefill(c, kPrompt, 8) == WT_OK);
      REQUIRE(wt_context_decode(c, 7) == WT_OK);
      CHECK(logits_of(c, info.n_vocab) == want);
      wt_context_reset(c);
    }
    wt_context_free(c);
  }
  wt_model_free(m);
}

// Counts at the largest value accepted (n_ctx's limit, 1048576) and far past it, and floats
// at their edges: each context either runs a prompt and a decode or is refused with a
// message, never crashes. INT32_MAX is refused before anything adds it up.
TEST_CASE("api misuse: extreme pruning parameters run or are refused") {
  wt_model* m = load(tiny_path());
  struct Extreme {
    wt_prune_method method;
    const char* key;
    const char* value;
    bool accepted;
  };
  std::vector<Extreme> cases = {
      {WT_PRUNE_SNAPKV, "keep", "1e-30", true},      {WT_PRUNE_ASL, "asl_tau", "1e30", true},
      {WT_PRUNE_TOKENFILTER, "tf_target", "0.999999", true}, {WT_PRUNE_FASTKV, "layer", "-1", true},
      {WT_PRUNE_FASTKV, "layer", "-7", false},       {WT_PRUNE_GEMFILTER, "layer", "-2", false},
      {WT_PRUNE_ASL, "asl_min_layer", "-2", false},  {WT_PRUNE_ASL, "asl_max_layer", "-2147483648", false},
      {WT_PRUNE_SLIMINFER, "slim_layer1", "-3", false},
      {WT_PRUNE_ASL, "asl_obs_layers", "2147483647", false}, {WT_PRUNE_CLAA, "claa_n_layers", "2147483647", false},
      {WT_PRUNE_TOKENFILTER, "tf_warmup", "2147483647", false},
  };
  const std::pair<wt_prune_method, const char*> counts[] = {
      {WT_PRUNE_SNAPKV, "window"},         {WT_PRUNE_SNAPKV, "budget"},        {WT_PRUNE_SNAPKV, "pool_kernel"},
      {WT_PRUNE_STREAMING, "n_sink"},      {WT_PRUNE_STREAMING, "budget"},     {WT_PRUNE_FASTKV, "fastkv_tsp_len"},
      {WT_PRUNE_GEMFILTER, "budget"},      {WT_PRUNE_ORACLE, "oracle_tokens"}, {WT_PRUNE_SLIMINFER, "slim_block"},
      {WT_PRUNE_SLIMINFER, "slim_query"},  {WT_PRUNE_ASL, "window"},
  };
  for (const auto& [method, key] : counts) {
    // pool_kernel must be odd: the limit minus one is the largest accepted odd kernel.
    const bool odd = std::string(key) == "pool_kernel";
    cases.push_back({method, key, odd ? "1048575" : "1048576", true});
    cases.push_back({method, key, "2147483647", false});
  }
  wt_token prompt[12];
  for (int i = 0; i < 12; ++i) prompt[i] = 3 * i + 1;
  for (const Extreme& e : cases) {
    CAPTURE(std::string(wt_prune_method_name(e.method)) + " " + e.key + "=" + e.value);
    wt_context_params cp = small_params(e.method);
    cp.prune.window = 0;  // the method's default unless the case sets it
    // Defaults the four-layer model cannot take, so that only the case's value is extreme.
    cp.prune.oracle_tokens = 2;
    cp.prune.asl_obs_layers = 2;
    cp.prune.claa_min_layer = 0;
    cp.prune.claa_n_layers = 1;
    REQUIRE(wt_prune_set_param(&cp.prune, e.key, e.value) == WT_OK);
    wt_context* c = nullptr;
    const wt_status st = wt_context_create(m, &cp, &c);
    if (!e.accepted) {
      CHECK(st == WT_ERR_INVALID_ARGUMENT);
      CHECK(c == nullptr);
      CHECK(std::string(wt_last_error()).find(e.key) != std::string::npos);
      continue;
    }
    REQUIRE_MESSAGE(st == WT_OK, wt_last_error());
    const wt_status ps = wt_context_prefill(c, prompt, 12);
    if (ps == WT_OK) {
      CHECK(wt_context_decode(c, 5) == WT_OK);
    } else {
      CHECK(std::string(wt_last_error()).size() > 0);
    }
    wt_context_free(c);
  }
  wt_model_free(m);
}

TEST_CASE("api misuse: a model with more than 64 query heads per KV head loads but its context is refused") {
  // The CPU attention's tiles hold one KV head's query heads side by side, 64 at most
  // (Falcon-7B's 71 heads over 1 KV head would not fit): refused with a message, not run.
  wt::test::TinyModelOptions o;
  o.n_layer = 1;
  o.n_embd = 66 * 4;  // 66 heads of 4
  o.n_head = 66;
  o.n_head_kv = 1;
  const std::string p = wt::test::temp_file("api_misuse_66_heads.gguf");
  REQUIRE(wt::test::write_file(p, wt::test::make_tiny_llama(o).build()));
  wt_model* m = load(p);
  wt_context_params cp = small_params();
  wt_context* c = nullptr;
  CHECK(wt_context_create(m, &cp, &c) == WT_ERR_UNSUPPORTED);
  CHECK(c == nullptr);
  CHECK(std::string(wt_last_error()).find("at most 64 per KV head") != std::string::npos);
  o.n_head = 64;  // the largest group that fits
  o.n_embd = 64 * 4;
  const std::string p64 = wt::test::temp_file("api_misuse_64_heads.gguf");
  REQUIRE(wt::test::write_file(p64, wt::test::make_tiny_llama(o).build()));
  wt_model* m64 = load(p64);
  wt_context* c64 = make_ctx(m64, cp);
  CHECK(wt_context_prefill(c64, kPrompt, 8) == WT_OK);
  wt_context_free(c64);
  wt_model_free(m64);
  wt_model_free(m);
  std::filesystem::remove(p);
  std::filesystem::remove(p64);
}
