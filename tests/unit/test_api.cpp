// The C API: argument checks, status codes and messages, chat formatting, generation.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "whittle.h"

namespace {

const std::string kModel = std::string(WT_MODELS_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kTiny = std::string(WT_TEST_DATA_DIR) + "/reference/tiny_qwen2.gguf";

wt_model* load(const std::string& path) {
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(path.c_str(), nullptr, &m) == WT_OK, wt_last_error());
  return m;
}

bool contains(const char* haystack, const char* needle) { return std::strstr(haystack, needle) != nullptr; }

}  // namespace

TEST_CASE("api: version and status strings") {
  CHECK(std::string(wt_version()) == "0.1.0");
  CHECK(wt_api_version() == WT_API_VERSION);
  CHECK(std::string(wt_status_string(WT_ERR_FORMAT)) == "WT_ERR_FORMAT");
  CHECK(std::string(wt_status_string(static_cast<wt_status>(999))) == "WT_ERR_UNKNOWN");
}

TEST_CASE("api: bad arguments return statuses with messages, never crash") {
  wt_model* m = nullptr;
  CHECK(wt_model_load(nullptr, nullptr, &m) == WT_ERR_INVALID_ARGUMENT);
  CHECK(contains(wt_last_error(), "path"));
  CHECK(wt_model_load("/nonexistent/model.gguf", nullptr, &m) == WT_ERR_IO);
  CHECK(m == nullptr);
  wt_model_params mp = wt_model_default_params();
  mp.backend = WT_BACKEND_CUDA;
  CHECK(wt_model_load(kTiny.c_str(), &mp, &m) == WT_ERR_UNSUPPORTED);

  m = load(kTiny);
  wt_context* ctx = nullptr;
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = -5;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(contains(wt_last_error(), "n_ctx"));
  cp.n_ctx = 8;
  cp.n_threads = 2;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_OK);

  const float* logits = nullptr;
  CHECK(wt_context_logits(ctx, -1, &logits) == WT_ERR_INVALID_ARGUMENT);  // nothing run yet
  wt_sampler* s = nullptr;
  REQUIRE(wt_sampler_create(m, nullptr, &s) == WT_OK);
  wt_token tok = -1;
  CHECK(wt_sampler_sample(s, ctx, &tok) == WT_ERR_INVALID_ARGUMENT);

  const wt_token bad[2] = {5, 100000};
  CHECK(wt_context_prefill(ctx, bad, 2) == WT_ERR_INVALID_ARGUMENT);
  CHECK(contains(wt_last_error(), "100000"));
  CHECK(wt_context_prefill(ctx, bad, 0) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_prefill(nullptr, bad, 1) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_decode(ctx, -1) == WT_ERR_INVALID_ARGUMENT);

  const wt_token nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  CHECK(wt_context_prefill(ctx, nine, 9) == WT_ERR_CONTEXT_FULL);
  CHECK(wt_context_n_past(ctx) == 0);
  REQUIRE(wt_context_prefill(ctx, nine, 8) == WT_OK);
  CHECK(wt_context_decode(ctx, 3) == WT_ERR_CONTEXT_FULL);
  CHECK(wt_context_logits(ctx, 0, &logits) == WT_ERR_INVALID_ARGUMENT);  // not logits_all
  CHECK(wt_context_logits(ctx, -1, &logits) == WT_OK);
  CHECK(wt_sampler_sample(s, ctx, &tok) == WT_OK);
  CHECK(tok >= 0);
  wt_context_reset(ctx);
  CHECK(wt_context_n_past(ctx) == 0);

  wt_sampler_params sp = wt_sampler_default_params();
  wt_sampler* s2 = nullptr;
  sp.top_p = 0.0f;
  CHECK(wt_sampler_create(m, &sp, &s2) == WT_ERR_INVALID_ARGUMENT);
  CHECK(contains(wt_last_error(), "top_p"));
  sp.top_p = 1.0f;
  sp.top_k = -1;
  CHECK(wt_sampler_create(m, &sp, &s2) == WT_ERR_INVALID_ARGUMENT);

  size_t n = 0;
  char buf[4];
  CHECK(wt_token_to_bytes(m, 1 << 20, buf, sizeof buf, &n) == WT_ERR_INVALID_ARGUMENT);
  wt_token few[1];
  CHECK(wt_tokenize(m, "hello world", 11, nullptr, few, 1, &n) == WT_ERR_BUFFER_TOO_SMALL);
  CHECK(n > 1);

  wt_sampler_free(s);
  wt_context_free(ctx);
  wt_model_free(m);
  wt_model_free(nullptr);
  wt_context_free(nullptr);
}

TEST_CASE("api: the copy bandwidth probe times a copy and refuses sizes outside 1 MiB to 1 GiB") {
  wt_model* m = load(kTiny);
  double gbs = -1;
  REQUIRE_MESSAGE(wt_model_copy_bandwidth(m, uint64_t{4} << 20, &gbs) == WT_OK, wt_last_error());
  CHECK(gbs > 0);
  CHECK(std::isfinite(gbs));
  for (uint64_t bad : {uint64_t{0}, (uint64_t{1} << 20) - 1, (uint64_t{1} << 30) + 1, ~uint64_t{0}}) {
    CAPTURE(bad);
    CHECK(wt_model_copy_bandwidth(m, bad, &gbs) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), "1 MiB, 1 GiB"));
  }
  CHECK(wt_model_copy_bandwidth(m, uint64_t{1} << 20, nullptr) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_model_copy_bandwidth(nullptr, uint64_t{1} << 20, &gbs) == WT_ERR_INVALID_ARGUMENT);
  wt_model_free(m);
}

TEST_CASE("api: sampling is deterministic for a seed and greedy at temperature 0") {
  wt_model* m = load(kTiny);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 16;
  cp.n_threads = 1;
  wt_context* ctx = nullptr;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_OK);
  const wt_token prompt[3] = {10, 20, 30};
  REQUIRE(wt_context_prefill(ctx, prompt, 3) == WT_OK);
  const float* logits = nullptr;
  REQUIRE(wt_context_logits(ctx, -1, &logits) == WT_OK);
  int32_t best = 0;
  for (int32_t i = 1; i < 300; ++i) best = logits[i] > logits[best] ? i : best;

  wt_sampler* greedy = nullptr;
  REQUIRE(wt_sampler_create(m, nullptr, &greedy) == WT_OK);
  wt_token tok = -1;
  REQUIRE(wt_sampler_sample(greedy, ctx, &tok) == WT_OK);
  CHECK(tok == best);

  wt_sampler_params sp = wt_sampler_default_params();
  sp.temperature = 1.5f;
  sp.top_k = 50;
  sp.top_p = 0.9f;
  sp.seed = 42;
  std::vector<wt_token> a, b;
  for (int run = 0; run < 2; ++run) {
    wt_sampler* s = nullptr;
    REQUIRE(wt_sampler_create(m, &sp, &s) == WT_OK);
    for (int i = 0; i < 20; ++i) {
      REQUIRE(wt_sampler_sample(s, ctx, &tok) == WT_OK);
      (run == 0 ? a : b).push_back(tok);
    }
    wt_sampler_free(s);
  }
  CHECK(a == b);
  bool varied = false;
  for (wt_token t : a) varied |= t != a[0];
  CHECK(varied);
  wt_sampler_free(greedy);
  wt_context_free(ctx);
  wt_model_free(m);
}

TEST_CASE("api: ChatML template of SmolLM2 and the answer to the capital of France" * doctest::test_suite("model")) {
  if (!std::filesystem::exists(kModel)) {
    MESSAGE("SKIPPED: " << kModel << " not present (scripts/fetch-model.sh fetches it)");
    return;
  }
  wt_model* m = load(kModel);
  const wt_chat_message msgs[1] = {{"user", "What is the capital of France?"}};
  std::vector<char> buf(1024);
  size_t len = 0;
  REQUIRE(wt_chat_apply(m, msgs, 1, true, buf.data(), buf.size(), &len) == WT_OK);
  const std::string text(buf.data(), len);
  CHECK(text ==
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(wt_chat_apply(m, msgs, 1, true, buf.data(), 10, &len) == WT_ERR_BUFFER_TOO_SMALL);
  CHECK(len == text.size());

  wt_tokenize_params tp = wt_tokenize_default_params();
  tp.parse_special = true;
  std::vector<wt_token> toks(256);
  size_t n = 0;
  REQUIRE(wt_tokenize(m, text.data(), text.size(), &tp, toks.data(), toks.size(), &n) == WT_OK);
  toks.resize(n);
  CHECK(toks[0] == 1);  // <|im_start|>

  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 128;
  cp.n_threads = 2;
  // f32 activations: with int8 ones the first answer token is a near-tie ("The" vs "L",
  // 0.08 logits apart in the float64 reference) that rounding decides per ISA; NEON picks
  // "L" (test_reference_logits.cpp).
  cp.matmul_mode = WT_MATMUL_F32;
  wt_context* ctx = nullptr;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_OK);
  REQUIRE(wt_context_prefill(ctx, toks.data(), toks.size()) == WT_OK);
  wt_sampler* s = nullptr;
  REQUIRE(wt_sampler_create(m, nullptr, &s) == WT_OK);
  wt_detokenizer* d = nullptr;
  REQUIRE(wt_detokenizer_create(m, &d) == WT_OK);
  struct Acc {
    wt_detokenizer* d;
    const wt_model* m;
    std::string text;
  } acc{d, m, ""};
  auto cb = [](wt_token t, void* user) {
    Acc* a = static_cast<Acc*>(user);
    if (wt_token_is_end(a->m, t)) return false;
    char piece[256];
    size_t l = 0;
    if (wt_detokenizer_push(a->d, t, piece, sizeof piece, &l) == WT_OK) a->text.append(piece, l);
    return true;
  };
  int32_t produced = 0;
  REQUIRE(wt_generate(ctx, s, 24, cb, &acc, &produced) == WT_OK);
  MESSAGE("answer: " << acc.text);
  CHECK(acc.text.find("Paris") != std::string::npos);
  CHECK(produced > 0);
  wt_detokenizer_free(d);
  wt_sampler_free(s);
  wt_context_free(ctx);
  wt_model_free(m);
}

TEST_CASE("api: progress callbacks report and can abort load and prefill") {
  struct Count {
    int calls = 0;
    int stop_after = 1 << 30;
    float last = 0;
  };
  auto cb = [](float progress, void* user) {
    Count* c = static_cast<Count*>(user);
    c->last = progress;
    return ++c->calls < c->stop_after;
  };
  Count load_count;
  wt_model_params mp = wt_model_default_params();
  mp.progress = cb;
  mp.progress_user = &load_count;
  wt_model* m = nullptr;
  REQUIRE(wt_model_load(kTiny.c_str(), &mp, &m) == WT_OK);
  CHECK(load_count.calls > 0);
  CHECK(load_count.last == doctest::Approx(1.0f));
  Count abort_load;
  abort_load.stop_after = 1;
  mp.progress_user = &abort_load;
  wt_model* m2 = nullptr;
  CHECK(wt_model_load(kTiny.c_str(), &mp, &m2) == WT_ERR_ABORTED);
  CHECK(m2 == nullptr);

  Count prefill_count;
  prefill_count.stop_after = 2;  // abort after the second layer
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 16;
  cp.n_threads = 1;
  cp.progress = cb;
  cp.progress_user = &prefill_count;
  wt_context* ctx = nullptr;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_OK);
  const wt_token prompt[4] = {10, 20, 30, 40};
  CHECK(wt_context_prefill(ctx, prompt, 4) == WT_ERR_ABORTED);
  CHECK(wt_context_n_past(ctx) == 0);
  const float* logits = nullptr;
  CHECK(wt_context_logits(ctx, -1, &logits) == WT_ERR_INVALID_ARGUMENT);
  wt_context_free(ctx);
  wt_model_free(m);
}

TEST_CASE("api: wt_context_abort stops a prefill from another thread at a layer boundary" *
          doctest::test_suite("concurrency")) {
  wt_model* m = load(kTiny);
  // The handshake: the prefill's first progress call lets the other thread in and waits
  // until it has called wt_context_abort, so the stop lands between two layers for sure.
  struct Shared {
    wt_context* ctx = nullptr;
    std::atomic<int> stage{0};  // 1: prefill inside layer callbacks, 2: abort called
    int calls = 0;
  } sh;
  auto cb = [](float, void* user) {
    Shared* s = static_cast<Shared*>(user);
    if (++s->calls == 1) {
      s->stage.store(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (s->stage.load() != 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
    return true;  // never stops on its own
  };
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 16;
  cp.n_threads = 1;
  cp.progress = cb;
  cp.progress_user = &sh;
  REQUIRE(wt_context_create(m, &cp, &sh.ctx) == WT_OK);
  const wt_token prompt[4] = {10, 20, 30, 40};

  std::thread other([&] {
    while (sh.stage.load() != 1) std::this_thread::yield();
    wt_context_abort(sh.ctx);
    sh.stage.store(2);
  });
  const wt_status st = wt_context_prefill(sh.ctx, prompt, 4);
  other.join();
  CHECK(st == WT_ERR_ABORTED);
  CHECK(contains(wt_last_error(), "wt_context_abort"));
  CHECK(sh.calls == 1);  // stopped at the next boundary, before the second callback
  CHECK(wt_context_n_past(sh.ctx) == 0);

  // The request was consumed: the next prefill runs to the end.
  CHECK(wt_context_prefill(sh.ctx, prompt, 4) == WT_OK);
  CHECK(wt_context_n_past(sh.ctx) == 4);
  // A request while idle stops the next prefill; decode never looks at it.
  wt_context_reset(sh.ctx);
  wt_context_abort(sh.ctx);
  wt_context_abort(nullptr);  // ignored
  CHECK(wt_context_prefill(sh.ctx, prompt, 4) == WT_ERR_ABORTED);
  CHECK(wt_context_prefill(sh.ctx, prompt, 4) == WT_OK);
  CHECK(wt_context_decode(sh.ctx, 50) == WT_OK);
  wt_context_free(sh.ctx);
  wt_model_free(m);
}

TEST_CASE("api: a context over its memory budget is refused with WT_ERR_BUDGET and the n_ctx that fits") {
  wt_model* m = load(kTiny);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 256;
  cp.n_threads = 1;
  // Rows set: with the default (0) a context over its budget runs fewer rows at once instead
  // (the test of fit_batch_rows below).
  cp.n_batch_rows = 256;
  wt_context* ctx = nullptr;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_OK);
  wt_context_stats st{};
  REQUIRE(wt_context_get_stats(ctx, &st) == WT_OK);
  wt_context_free(ctx);
  const uint64_t need = st.arena_bytes;
  REQUIRE(need > 0);

  cp.memory_budget_bytes = need;  // exactly enough
  ctx = nullptr;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_OK);
  wt_context_free(ctx);

  // Half of it: the KV cache, the largest part, is what a shorter context saves.
  cp.memory_budget_bytes = need / 2;
  ctx = nullptr;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_BUDGET);
  CHECK(ctx == nullptr);
  const std::string msg = wt_last_error();
  INFO(msg);
  CHECK(msg.find("memory_budget_bytes") != std::string::npos);
  CHECK(msg.find("short by") != std::string::npos);
  CHECK(msg.find("kv cache") != std::string::npos);
  // The suggested n_ctx fits that budget, one more row does not.
  const size_t at = msg.find("n_ctx of at most ");
  REQUIRE(at != std::string::npos);
  const int32_t fits = std::atoi(msg.c_str() + at + std::strlen("n_ctx of at most "));
  CHECK(fits > 0);
  CHECK(fits < 200);
  cp.n_ctx = fits;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_OK);
  wt_context_free(ctx);
  cp.n_ctx = fits + 1;
  ctx = nullptr;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_BUDGET);

  // A budget no context fits in says so.
  cp.memory_budget_bytes = 1;
  CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_BUDGET);
  CHECK(contains(wt_last_error(), "No n_ctx fits"));
  wt_model_free(m);
}

TEST_CASE("api: log callback receives the library's info lines") {
  struct Log {
    int n = 0;
    std::string text;
  } log;
  wt_set_log_callback(
      [](wt_log_level level, const char* text, void* user) {
        Log* l = static_cast<Log*>(user);
        if (level == WT_LOG_INFO) {
          ++l->n;
          l->text += text;
        }
      },
      &log);
  wt_model* m = load(kTiny);
  wt_set_log_callback(nullptr, nullptr);
  CHECK(log.n >= 1);
  CHECK(log.text.find("qwen2") != std::string::npos);
  wt_model_free(m);
}

// ---- Binary compatibility: params structs read by their struct_size -------------------

namespace {

// wt_context_params as an application built against an older whittle.h has it: API version
// 1 ended with prune, version 2 with memory_budget_bytes (include/whittle.h).
struct context_params_api1 {
  size_t struct_size;
  int32_t n_ctx;
  int32_t n_threads;
  bool logits_all;
  wt_progress_callback progress;
  void* progress_user;
  wt_matmul_mode matmul_mode;
  wt_prune_params prune;
};
struct context_params_api2 {
  size_t struct_size;
  int32_t n_ctx;
  int32_t n_threads;
  bool logits_all;
  wt_progress_callback progress;
  void* progress_user;
  wt_matmul_mode matmul_mode;
  wt_prune_params prune;
  uint64_t memory_budget_bytes;
};
// Fields are only appended: the older layouts are prefixes of the current one.
static_assert(offsetof(context_params_api1, prune) == offsetof(wt_context_params, prune));
static_assert(offsetof(context_params_api2, memory_budget_bytes) == offsetof(wt_context_params, memory_budget_bytes));
static_assert(sizeof(context_params_api1) < sizeof(context_params_api2) &&
              sizeof(context_params_api2) < sizeof(wt_context_params));

template <typename Old>
Old old_context_params(int32_t n_ctx) {
  const wt_context_params now = wt_context_default_params();
  Old p;
  std::memcpy(static_cast<void*>(&p), &now, sizeof p);  // the fields the old layout has
  p.struct_size = sizeof p;
  p.n_ctx = n_ctx;
  p.n_threads = 1;
  return p;
}

wt_context_stats stats_of(wt_context* ctx) {
  wt_context_stats st{};
  REQUIRE(wt_context_get_stats(ctx, &st) == WT_OK);
  return st;
}

}  // namespace

TEST_CASE("api: the default functions set struct_size, and their structs are accepted") {
  CHECK(wt_model_default_params().struct_size == sizeof(wt_model_params));
  CHECK(wt_tokenize_default_params().struct_size == sizeof(wt_tokenize_params));
  CHECK(wt_prune_default_params().struct_size == sizeof(wt_prune_params));
  CHECK(wt_context_default_params().struct_size == sizeof(wt_context_params));
  CHECK(wt_context_default_params().prune.struct_size == sizeof(wt_prune_params));
  CHECK(wt_sampler_default_params().struct_size == sizeof(wt_sampler_params));

  const wt_model_params mp = wt_model_default_params();
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTiny.c_str(), &mp, &m) == WT_OK, wt_last_error());
  const wt_tokenize_params tp = wt_tokenize_default_params();
  wt_token toks[16];
  size_t n = 0;
  CHECK(wt_tokenize(m, "hello", 5, &tp, toks, 16, &n) == WT_OK);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 32;
  cp.n_threads = 1;
  CHECK(wt_prune_set_param(&cp.prune, "method", "snapkv") == WT_OK);
  CHECK(wt_prune_set_param(&cp.prune, "record_ranking", "1") == WT_OK);  // the newest field
  wt_context* ctx = nullptr;
  CHECK_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  const wt_sampler_params sp = wt_sampler_default_params();
  wt_sampler* s = nullptr;
  CHECK(wt_sampler_create(m, &sp, &s) == WT_OK);
  wt_sampler_free(s);
  wt_context_free(ctx);
  wt_model_free(m);
}

TEST_CASE("api: a rope scaling asked for at load: YaRN lengthens n_ctx_train, bad values are refused") {
  wt_model_params mp = wt_model_default_params();
  mp.rope_scaling = WT_ROPE_SCALING_YARN;
  mp.rope_scaling_factor = 4.0f;
  wt_model* m = nullptr;
  REQUIRE_MESSAGE(wt_model_load(kTiny.c_str(), &mp, &m) == WT_OK, wt_last_error());
  wt_model_info info{};
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  CHECK(info.n_ctx_train == 4 * 2048);  // factor x the file's context_length
  wt_model_free(m);
  const std::pair<void (*)(wt_model_params*), const char*> bad[] = {
      {[](wt_model_params* p) { p->rope_scaling = static_cast<wt_rope_scaling>(9); }, "unknown rope_scaling 9"},
      {[](wt_model_params* p) { p->rope_scaling_factor = 0.5f; }, "rope_scaling_factor"},
      {[](wt_model_params* p) { p->rope_scaling_factor = std::numeric_limits<float>::quiet_NaN(); }, "rope_scaling_factor"},
      {[](wt_model_params* p) { p->rope_orig_ctx = -1; }, "rope_orig_ctx"},
      // Every field is checked, whatever the kind (whittle.h).
      {[](wt_model_params* p) { p->rope_scaling = WT_ROPE_SCALING_FILE, p->rope_orig_ctx = -1; }, "rope_orig_ctx"},
  };
  for (const auto& [mutate, needle] : bad) {
    wt_model_params p = mp;
    mutate(&p);
    wt_model* none = nullptr;
    CHECK(wt_model_load(kTiny.c_str(), &p, &none) == WT_ERR_INVALID_ARGUMENT);
    CHECK(none == nullptr);
    CHECK_MESSAGE(contains(wt_last_error(), needle), wt_last_error());
  }
}

TEST_CASE("api: a struct_size of 0, too small, too large or between layouts is refused, naming the struct") {
  wt_model* m = load(kTiny);
  const size_t sizes[] = {0, sizeof(size_t), 1 << 20};
  for (size_t size : sizes) {
    INFO("struct_size " << size);
    wt_model_params mp = wt_model_default_params();
    mp.struct_size = size;
    wt_model* m2 = nullptr;
    CHECK(wt_model_load(kTiny.c_str(), &mp, &m2) == WT_ERR_INVALID_ARGUMENT);
    CHECK(m2 == nullptr);
    CHECK(contains(wt_last_error(), "wt_model_params.struct_size is"));

    wt_tokenize_params tp = wt_tokenize_default_params();
    tp.struct_size = size;
    wt_token toks[16];
    size_t n = 0;
    CHECK(wt_tokenize(m, "hello", 5, &tp, toks, 16, &n) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), "wt_tokenize_params.struct_size is"));

    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 32;
    cp.struct_size = size;
    wt_context* ctx = nullptr;
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
    CHECK(ctx == nullptr);
    CHECK(contains(wt_last_error(), "wt_context_params.struct_size is"));
    cp.struct_size = sizeof cp;
    cp.prune.struct_size = size;
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), "wt_context_params.prune.struct_size is"));
    CHECK(wt_prune_set_param(&cp.prune, "keep", "0.5") == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), "wt_prune_params.struct_size is"));

    wt_sampler_params sp = wt_sampler_default_params();
    sp.struct_size = size;
    wt_sampler* s = nullptr;
    CHECK(wt_sampler_create(m, &sp, &s) == WT_ERR_INVALID_ARGUMENT);
    CHECK(contains(wt_last_error(), "wt_sampler_params.struct_size is"));
  }

  // The messages say what is wrong and which sizes the library reads.
  wt_context_params cp = wt_context_default_params();
  wt_context* ctx = nullptr;
  cp.struct_size = 0;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  std::string msg = wt_last_error();
  INFO(msg);
  CHECK(msg.find("wt_context_default_params()") != std::string::npos);
  CHECK(msg.find(std::to_string(sizeof(context_params_api1)) + " (API 1)") != std::string::npos);
  CHECK(msg.find("(API 4)") != std::string::npos);  // the newest params layout (API 5 grew output structs)
  cp.struct_size = sizeof cp + 8;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(contains(wt_last_error(), "newer whittle.h"));
  // Inside memory_budget_bytes: neither the API 1 nor the API 2 layout.
  cp.struct_size = offsetof(wt_context_params, memory_budget_bytes) + 4;
  REQUIRE(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
  CHECK(contains(wt_last_error(), "no layout"));
  wt_model_free(m);
}

TEST_CASE("api: an older wt_context_params layout is read up to its struct_size and newer fields take their defaults") {
  wt_model* m = load(kTiny);
  wt_context* ctx = nullptr;
  wt_context_params now = wt_context_default_params();
  now.n_ctx = 48;
  now.n_threads = 1;
  REQUIRE(wt_context_create(m, &now, &ctx) == WT_OK);
  const wt_context_stats want = stats_of(ctx);
  wt_context_free(ctx);

  // Structs declared as the older headers declared them (ASan sees any read past them).
  SUBCASE("API 1 and 2 structs as an older application builds them") {
    context_params_api1 v1 = old_context_params<context_params_api1>(48);
    ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(m, reinterpret_cast<const wt_context_params*>(&v1), &ctx) == WT_OK,
                    wt_last_error());
    CHECK(stats_of(ctx).arena_bytes == want.arena_bytes);  // n_ctx read, pager off
    CHECK(stats_of(ctx).pager_device_bytes == 0);
    const wt_token prompt[3] = {10, 20, 30};
    CHECK(wt_context_prefill(ctx, prompt, 3) == WT_OK);
    wt_context_free(ctx);

    context_params_api2 v2 = old_context_params<context_params_api2>(48);
    v2.memory_budget_bytes = 1;  // a field API 2 has: read
    ctx = nullptr;
    CHECK(wt_context_create(m, reinterpret_cast<const wt_context_params*>(&v2), &ctx) == WT_ERR_BUDGET);
    v2.memory_budget_bytes = want.arena_bytes;
    REQUIRE(wt_context_create(m, reinterpret_cast<const wt_context_params*>(&v2), &ctx) == WT_OK);
    CHECK(stats_of(ctx).pager_device_bytes == 0);
    wt_context_free(ctx);
  }

  // The fields past an older struct_size are not read even when the memory holds values.
  SUBCASE("fields beyond struct_size are ignored") {
    wt_context_params cp = now;
    cp.memory_budget_bytes = 1;  // would be refused (WT_ERR_BUDGET)
    cp.kv_device_blocks = 1;     // would turn the pager on
    cp.struct_size = sizeof(context_params_api1);
    ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    CHECK(stats_of(ctx).arena_bytes == want.arena_bytes);
    CHECK(stats_of(ctx).pager_device_bytes == 0);
    wt_context_free(ctx);

    cp.struct_size = sizeof(context_params_api2);
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_BUDGET);
    cp.memory_budget_bytes = 0;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    CHECK(stats_of(ctx).pager_device_bytes == 0);
    wt_context_free(ctx);

    cp.struct_size = sizeof(wt_context_params);
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    CHECK(stats_of(ctx).pager_device_bytes > 0);
    wt_context_free(ctx);

    // API 7 ends before kv_pager_flags: bits there are not read (the default: in place on
    // the CPU, no host pool); API 8 reads them, and refuses a bit it does not know.
    cp.kv_pager_flags = ~uint64_t{0};
    cp.struct_size = offsetof(wt_context_params, kv_pager_flags);
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    CHECK(stats_of(ctx).pager_device_bytes > 0);
    CHECK(stats_of(ctx).pager_host_bytes == 0);
    wt_context_free(ctx);
    cp.struct_size = sizeof(wt_context_params);
    ctx = nullptr;
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
    CHECK(ctx == nullptr);
    cp.kv_pager_flags = WT_KV_PAGER_COPY;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    CHECK(stats_of(ctx).pager_host_bytes > 0);
    wt_context_free(ctx);

    // API 13 ends before cpu_flags: bits there are not read; API 14 refuses one it does not
    // know, and names the flag it does.
    cp.cpu_flags = ~uint64_t{0};
    cp.struct_size = offsetof(wt_context_params, cpu_flags);
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    wt_context_free(ctx);
    cp.struct_size = sizeof(wt_context_params);
    ctx = nullptr;
    CHECK(wt_context_create(m, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
    CHECK(ctx == nullptr);
    CHECK(std::string(wt_last_error()).find("WT_CPU_FIXED_THREADS") != std::string::npos);
    cp.cpu_flags = WT_CPU_FIXED_THREADS;
    REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
    wt_context_free(ctx);
  }
  wt_model_free(m);
}
