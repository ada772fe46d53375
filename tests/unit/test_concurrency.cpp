// One model shared by contexts on several threads (whittle.h: a model is immutable once
// loaded; a context is used by one thread at a time): every thread's logits are bitwise
// those of the same run made alone, and a second thread's call on a busy context or sampler
// is refused with WT_ERR_BUSY. Suite "concurrency": the TSan stage (scripts/tsan-test.sh)
// runs these; the default model's case is suite "model" (a case has one suite), too slow
// for TSan and for qemu, run by the native stages.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/gguf_writer.h"
#include "support/real_model.h"
#include "whittle.h"

namespace {

// 6 layers of a random model with a byte vocabulary, written once per process.
struct TinyModel {
  wt::test::TempPath file{"concurrency_tiny.gguf"};  // removed once the model is freed
  wt_model* model = nullptr;
  TinyModel() {
    wt::test::TinyModelOptions o;
    o.n_layer = 6;
    o.n_ctx_train = 1024;
    REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(o).build()));
    REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &model) == WT_OK, wt_last_error());
  }
  ~TinyModel() { wt_model_free(model); }
};

struct Config {
  const char* name;
  wt_prune_method method;
  bool pager;  // the KV pager with a quarter of the KV on the device (its copy worker is a thread)
};

const Config kConfigs[] = {
    {"full", WT_PRUNE_FULL, false},         {"snapkv", WT_PRUNE_SNAPKV, false},
    {"fastkv", WT_PRUNE_FASTKV, false},     {"sliminfer", WT_PRUNE_SLIMINFER, false},
    {"full with the pager", WT_PRUNE_FULL, true},
};

// What a run produced: every step's last-row logits and the greedy tokens.
struct Run {
  wt_status status = WT_OK;
  std::string error;
  std::vector<float> logits;
  std::vector<wt_token> tokens;
};

std::vector<wt_token> prompt_of(int32_t n, int32_t n_vocab, uint32_t seed) {
  std::vector<wt_token> t(static_cast<size_t>(n));
  for (wt_token& v : t) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<wt_token>((seed >> 16) % static_cast<uint32_t>(n_vocab));
  }
  return t;
}

// Prefill, then n_new greedy decodes; each context has two worker threads of its own.
Run greedy(const wt_model* model, const Config& c, const std::vector<wt_token>& prompt, int32_t n_ctx,
           int32_t block_tokens, int32_t n_new) {
  Run r;
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  cp.prune.method = c.method;
  cp.prune.keep = 0.3f;
  cp.kv_block_tokens = block_tokens;
  wt_context* ctx = nullptr;
  auto fail = [&](wt_status st) {
    r.status = st;
    r.error = wt_last_error();
    wt_context_free(ctx);
    return r;
  };
  wt_model_info info{};
  if (wt_status st = wt_model_get_info(model, &info); st != WT_OK) return fail(st);
  if (c.pager) cp.kv_device_blocks = info.n_layer * (n_ctx / block_tokens) / 4;
  if (c.pager) cp.kv_pager_flags = WT_KV_PAGER_COPY;  // the copying pager: its copy worker runs
  if (wt_status st = wt_context_create(model, &cp, &ctx); st != WT_OK) return fail(st);
  if (wt_status st = wt_context_prefill(ctx, prompt.data(), prompt.size()); st != WT_OK) return fail(st);
  for (int32_t i = 0;; ++i) {
    const float* l = nullptr;
    if (wt_status st = wt_context_logits(ctx, -1, &l); st != WT_OK) return fail(st);
    r.logits.insert(r.logits.end(), l, l + info.n_vocab);
    wt_token best = 0;
    for (int32_t v = 1; v < info.n_vocab; ++v)
      if (l[v] > l[best]) best = v;
    r.tokens.push_back(best);
    if (i == n_new) break;
    if (wt_status st = wt_context_decode(ctx, best); st != WT_OK) return fail(st);
  }
  wt_context_free(ctx);
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every config twice, all at once on their own threads, against each config run alone.
void check_threads_match_alone(const wt_model* model, int32_t n_prompt, int32_t n_ctx, int32_t block_tokens,
                               int32_t n_new, int32_t n_vocab) {
  constexpr size_t kN = std::size(kConfigs);
  std::vector<Run> alone(kN);
  for (size_t i = 0; i < kN; ++i) {
    alone[i] = greedy(model, kConfigs[i], prompt_of(n_prompt, n_vocab, 7 + static_cast<uint32_t>(i)), n_ctx,
                      block_tokens, n_new);
    REQUIRE_MESSAGE(alone[i].status == WT_OK, kConfigs[i].name, ": ", alone[i].error);
  }
  std::vector<Run> together(2 * kN);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < together.size(); ++t)
    threads.emplace_back([&, t] {
      const size_t i = t % kN;
      together[t] = greedy(model, kConfigs[i], prompt_of(n_prompt, n_vocab, 7 + static_cast<uint32_t>(i)), n_ctx,
                           block_tokens, n_new);
    });
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < together.size(); ++t) {
    const size_t i = t % kN;
    CAPTURE(kConfigs[i].name);
    CAPTURE(t);
    REQUIRE_MESSAGE(together[t].status == WT_OK, together[t].error);
    CHECK(together[t].tokens == alone[i].tokens);
    CHECK(same_bits(together[t].logits, alone[i].logits));
  }
}

}  // namespace

TEST_CASE("concurrency: contexts of one tiny model on ten threads give each run's lone logits" *
          doctest::test_suite("concurrency")) {
  TinyModel tiny;
  check_threads_match_alone(tiny.model, 200, 256, 16, 8, wt::test::kTinyVocab);
}

TEST_CASE("concurrency: contexts of the default model on ten threads give each run's lone logits" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt::test::RealModel& rm = wt::test::real_model();
  wt_model_info info{};
  REQUIRE(wt_model_get_info(rm.model, &info) == WT_OK);
  check_threads_match_alone(rm.model, 192, 256, 64, 4, info.n_vocab);
}

TEST_CASE("concurrency: a call on a context or sampler another thread is inside is WT_ERR_BUSY" *
          doctest::test_suite("concurrency")) {
  TinyModel tiny;
  // The handshake: the prefill's first progress call lets the other thread in and waits
  // until it has made its calls, so they surely land while the prefill holds the context.
  struct Shared {
    wt_context* ctx = nullptr;
    std::atomic<int> stage{0};  // 1: the prefill is inside, 2: the other thread is done
    int calls = 0;
    wt_status nested = WT_ERR_INTERNAL;
  } sh;
  auto cb = [](float, void* user) {
    Shared* s = static_cast<Shared*>(user);
    if (++s->calls == 1) {
      // A call from the callback, on the thread inside the prefill, passes.
      wt_context_stats st{};
      s->nested = wt_context_get_stats(s->ctx, &st);
      s->stage.store(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (s->stage.load() != 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
    return true;
  };
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.n_threads = 1;
  cp.progress = cb;
  cp.progress_user = &sh;
  REQUIRE(wt_context_create(tiny.model, &cp, &sh.ctx) == WT_OK);
  wt_sampler* sampler = nullptr;
  REQUIRE(wt_sampler_create(tiny.model, nullptr, &sampler) == WT_OK);
  const std::vector<wt_token> prompt = prompt_of(16, wt::test::kTinyVocab, 3);

  std::vector<std::pair<std::string, wt_status>> refused;
  std::string message;
  std::thread other([&] {
    while (sh.stage.load() != 1) std::this_thread::yield();
    const float* l = nullptr;
    wt_context_stats st{};
    wt_prune_stats ps{};
    uint64_t dev = 0, host = 0;
    wt_token tok = 0;
    int32_t n = 0;
    refused = {
        {"prefill", wt_context_prefill(sh.ctx, prompt.data(), 1)},
        {"decode", wt_context_decode(sh.ctx, 1)},
        {"logits", wt_context_logits(sh.ctx, -1, &l)},
        {"get_stats", wt_context_get_stats(sh.ctx, &st)},
        {"get_prune_stats", wt_context_get_prune_stats(sh.ctx, &ps)},
        {"get_kv_residency", wt_context_get_kv_residency(sh.ctx, 0, &dev, &host)},
        {"sampler_sample", wt_sampler_sample(sampler, sh.ctx, &tok)},
        {"generate", wt_generate(sh.ctx, sampler, 1, nullptr, nullptr, &n)},
    };
    message = wt_last_error();
    sh.stage.store(2);
  });
  const wt_status st = wt_context_prefill(sh.ctx, prompt.data(), prompt.size());
  other.join();
  CHECK(st == WT_OK);
  CHECK(sh.nested == WT_OK);
  for (const auto& [call, status] : refused) {
    CAPTURE(call);
    CHECK(status == WT_ERR_BUSY);
  }
  CHECK(message.find("ctx is in use by another thread") != std::string::npos);
  CHECK(std::string(wt_status_string(WT_ERR_BUSY)) == "WT_ERR_BUSY");
  // Released when the call returns: the other thread's calls now pass.
  std::thread later([&] {
    const float* l = nullptr;
    CHECK(wt_context_logits(sh.ctx, -1, &l) == WT_OK);
    CHECK(wt_context_decode(sh.ctx, 1) == WT_OK);
  });
  later.join();
  CHECK(wt_context_n_past(sh.ctx) == 17);

  // A sampler inside a generate on one thread is busy for another thread's context too.
  wt_context* second = nullptr;
  cp.progress = nullptr;
  REQUIRE(wt_context_create(tiny.model, &cp, &second) == WT_OK);
  REQUIRE(wt_context_prefill(second, prompt.data(), prompt.size()) == WT_OK);
  struct Gen {
    wt_sampler* sampler;
    wt_context* second;
    wt_status seen = WT_ERR_INTERNAL, accepted = WT_ERR_INTERNAL, reset = WT_ERR_INTERNAL;
  } g{sampler, second};
  auto on_token = [](wt_token, void* user) {
    Gen* gen = static_cast<Gen*>(user);
    std::thread t([gen] {
      wt_token tok = 0;
      gen->seen = wt_sampler_sample(gen->sampler, gen->second, &tok);
      gen->accepted = wt_sampler_accept(gen->sampler, &tok, 1);
      gen->reset = wt_sampler_reset(gen->sampler);
    });
    t.join();
    return false;  // one token is enough
  };
  int32_t n = 0;
  CHECK(wt_generate(sh.ctx, sampler, 4, on_token, &g, &n) == WT_OK);
  CHECK(n == 1);
  CHECK(g.seen == WT_ERR_BUSY);
  CHECK(g.accepted == WT_ERR_BUSY);
  CHECK(g.reset == WT_ERR_BUSY);
  wt_token tok = 0;
  CHECK(wt_sampler_sample(sampler, second, &tok) == WT_OK);

  wt_context_free(second);
  wt_sampler_free(sampler);
  wt_context_free(sh.ctx);
}

// Issue 29 item 5: a prefill's progress callback (or generate's token callback) that runs
// the same context again on its own thread used to pass and silently change the outer
// call's result. Those calls are now WT_ERR_BUSY (reset does nothing), and the outer call's
// logits are those of the same prompt run with no callback.
TEST_CASE("concurrency: running a context from its own callback is WT_ERR_BUSY and changes nothing" *
          doctest::test_suite("concurrency")) {
  TinyModel tiny;
  wt_model_info info{};
  REQUIRE(wt_model_get_info(tiny.model, &info) == WT_OK);
  const std::vector<wt_token> prompt = prompt_of(16, wt::test::kTinyVocab, 5);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.n_threads = 1;

  // The reference: the prompt and one decode, no callback.
  wt_context* ref = nullptr;
  REQUIRE(wt_context_create(tiny.model, &cp, &ref) == WT_OK);
  REQUIRE(wt_context_prefill(ref, prompt.data(), prompt.size()) == WT_OK);
  const float* lr = nullptr;
  REQUIRE(wt_context_logits(ref, -1, &lr) == WT_OK);
  const std::vector<float> after_prefill(lr, lr + info.n_vocab);

  struct Nested {
    wt_context* ctx = nullptr;
    std::vector<wt_token> prompt;
    wt_status prefill = WT_OK, decode = WT_OK, logits = WT_ERR_INTERNAL;
    std::string message;
    int calls = 0;
  } nest;
  nest.prompt = prompt;
  cp.progress = [](float, void* user) {
    Nested* n = static_cast<Nested*>(user);
    if (++n->calls == 2) {
      n->prefill = wt_context_prefill(n->ctx, n->prompt.data(), 3);
      n->message = wt_last_error();
      n->decode = wt_context_decode(n->ctx, 1);
      wt_context_reset(n->ctx);
      const float* l = nullptr;
      n->logits = wt_context_logits(n->ctx, -1, &l);  // reading passes (no logits yet: refused as such)
    }
    return true;
  };
  cp.progress_user = &nest;
  REQUIRE(wt_context_create(tiny.model, &cp, &nest.ctx) == WT_OK);
  REQUIRE(wt_context_prefill(nest.ctx, prompt.data(), prompt.size()) == WT_OK);
  CHECK(nest.calls >= 2);
  CHECK(nest.prefill == WT_ERR_BUSY);
  CHECK(nest.decode == WT_ERR_BUSY);
  CHECK(nest.message.find("called from a callback of a call running on the same context") != std::string::npos);
  CHECK(nest.logits == WT_ERR_INVALID_ARGUMENT);  // not BUSY: a read from a callback is served
  CHECK(wt_context_n_past(nest.ctx) == static_cast<int32_t>(prompt.size()));
  const float* ln = nullptr;
  REQUIRE(wt_context_logits(nest.ctx, -1, &ln) == WT_OK);
  float worst = 0;
  for (int32_t i = 0; i < info.n_vocab; ++i) worst = std::max(worst, std::fabs(ln[i] - after_prefill[static_cast<size_t>(i)]));
  CHECK(worst == 0.0f);

  // generate's token callback: a decode on the same context is refused, generate goes on.
  wt_sampler* sampler = nullptr;
  REQUIRE(wt_sampler_create(tiny.model, nullptr, &sampler) == WT_OK);
  struct Gen {
    wt_context* ctx;
    wt_status decode = WT_OK;
  } g{nest.ctx};
  auto on_token = [](wt_token, void* user) {
    Gen* gen = static_cast<Gen*>(user);
    gen->decode = wt_context_decode(gen->ctx, 1);
    return true;
  };
  int32_t n = 0;
  CHECK(wt_generate(nest.ctx, sampler, 3, on_token, &g, &n) == WT_OK);
  CHECK(n == 3);
  CHECK(g.decode == WT_ERR_BUSY);
  CHECK(wt_context_n_past(nest.ctx) == static_cast<int32_t>(prompt.size()) + 2);

  wt_sampler_free(sampler);
  wt_context_free(nest.ctx);
  wt_context_free(ref);
}
