// Model-level parity of a device backend against the CPU reference on the real default
// model (SmolLM2-135M Q4_1): logits of three prompts, 64 greedy tokens for full KV and for
// pruned prefills (FastKV, ASL, SlimInfer at a keep ratio that prunes), and two contexts of
// one device model on two threads. Without a model or a device every case skips visibly: a
// "SKIPPED" message, and exit code 77 (ctest: Skipped).
//
// One source, two binaries (CMakeLists.txt): whittle_model_vulkan tests WT_BACKEND_VULKAN,
// whittle_model_cuda (compiled with WT_MODEL_TEST_CUDA) WT_BACKEND_CUDA; case names start
// with the backend's name. The Vulkan-only cases (loading with every driver hidden) are
// left out of the CUDA binary.
//
// Sizes: lavapipe decodes this model at ~2 tokens/s on a 2-core machine, so the default
// ctest run uses 12-20 token logits prompts and 64 greedy tokens after a 40-token prompt
// (about half a minute per case). WT_VULKAN_MODEL_FULL=1 runs logits prompts of 100-160
// tokens and 64 greedy tokens after 240 (about 10 minutes on lavapipe, seconds on a GPU).
//
// Like with like: both sides run WT_MATMUL_F32 (the CPU default quantizes activations to int8
// per block of 32, which moves logits by up to ~2 on this model,
// tests/unit/test_reference_logits.cpp; CUDA's default puts prompts of 64 tokens or more on
// tensor cores, TF32 and f16, checked by its own case below). What remains is float
// summation order (dot products, attention's online softmax, rmsnorm reductions) through
// 30 layers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model_vulkan.h"
#include "backends/weight_types.h"
#include "support/gguf_writer.h"
#include "support/random_kquant.h"
#include "support/real_model.h"
#include "support/context_measure.h"
#include "whittle.h"

// The backend under test; string literals, so test case names can be made from them.
#if defined(WT_MODEL_TEST_CUDA)
#define WT_MODEL_BACKEND "cuda"
#define WT_MODEL_BACKEND_TITLE "CUDA"
#else
#define WT_MODEL_BACKEND "vulkan"
#define WT_MODEL_BACKEND_TITLE "Vulkan"
#endif

namespace {

using wt::test::real_model;

#if defined(WT_MODEL_TEST_CUDA)
constexpr wt_backend_kind kBackend = WT_BACKEND_CUDA;
#else
constexpr wt_backend_kind kBackend = WT_BACKEND_VULKAN;
#endif

// Max |vulkan - cpu| over every logit of every row, and the same relative to the largest
// |cpu logit| of the row (at least 1). Measured on lavapipe (printed by the test): 3.0e-5
// abs, 1.3e-6 rel over the three short prompts. The bounds leave ~30x room for other
// drivers' summation orders and longer prompts, and stay far below the int8 activation
// noise (~1) and the argmax margins the greedy tests rely on.
constexpr float kMaxAbs = 1e-3f;
constexpr float kMaxRel = 1e-4f;

struct Sizes {
  size_t logit_prompt[3];  // tokens of the three logits prompts (the third is code, cut)
  size_t greedy_prompt;
  int greedy_tokens;
  size_t thread_prompt;
  int thread_tokens;
};

const Sizes& sizes() {
  // 40 prompt tokens, not fewer: at 32, ASL's per-head KV choice at layer 18 (one slot,
  // positions 0 and 2 nearly tied) fell differently on the two backends — a discrete
  // selection amplifies a 1e-7 score difference — and decode logits then moved by ~0.4.
  static const Sizes small{{12, 16, 20}, 40, 64, 12, 8};
  static const Sizes full{{160, 100, 120}, 240, 64, 96, 12};
  return std::getenv("WT_VULKAN_MODEL_FULL") ? full : small;
}

// Pruning parameters that prune at both sizes: keep 0.3 with an observation window of 8
// and SlimInfer blocks of 8 tokens (the defaults, 32 and 64, cover a short prompt whole).
wt_prune_params method(wt_prune_method m) {
  wt_prune_params p = wt_prune_default_params();
  p.method = m;
  p.keep = 0.3f;
  p.window = 8;
  p.slim_block = 8;
  p.slim_unit = 4;
  return p;
}

// The device model, loaded once per process; null (after a SKIPPED message) when the model
// file or a device is missing.
struct DeviceModelHolder {
  wt_model* model = nullptr;
  // Constructed before the load, so exit() runs this after the driver's own teardown: safe
  // (whittle.h, wt_model_free; Vulkan makes no driver call then, test_vulkan_exit.cpp).
  ~DeviceModelHolder() { wt_model_free(model); }
};

wt_model* device_model() {
  static DeviceModelHolder holder;
  wt_model*& model = holder.model;
  static bool tried = false;
  static std::string why;
  if (!tried) {
    tried = true;
    if (real_model().ok()) {
      wt_model_params mp = wt_model_default_params();
      mp.backend = kBackend;
      const wt_status st = wt_model_load(wt::test::real_model_path().c_str(), &mp, &model);
      if (st != WT_OK) {
        model = nullptr;
        why = std::string("no " WT_MODEL_BACKEND_TITLE " model (") + wt_status_string(st) + "): " + wt_last_error();
      }
    } else {
      why = wt::test::real_model_path() + " not present (scripts/fetch-model.sh fetches it)";
    }
  }
  if (!model) {
    MESSAGE("SKIPPED: " << why);
    wt::test::g_vulkan_skipped = true;
  } else {
    wt::test::g_vulkan_ran = true;
  }
  return model;
}

wt_context* make_ctx(const wt_model* m, const wt_prune_params& pp, size_t n_ctx, bool logits_all,
                     wt_matmul_mode mode = WT_MATMUL_F32) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(n_ctx);
  cp.n_threads = 2;
  cp.logits_all = logits_all;
  cp.matmul_mode = mode;
  cp.prune = pp;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  return ctx;
}

int32_t argmax(const float* v, int32_t n) { return static_cast<int32_t>(std::max_element(v, v + n) - v); }

struct Greedy {
  std::vector<wt_token> tokens;
  std::vector<int32_t> kv_rows;      // per layer, after the prefill
  std::vector<int32_t> hidden_rows;  // per layer, rows computed in the (last) pass
};

// Prefill, then n_new argmax steps (end tokens included: the sequences are compared, not
// the text). No doctest assertions: it also runs on worker threads.
wt_status run_greedy(const wt_model* m, const wt_prune_params& pp, const std::vector<wt_token>& prompt, int n_new,
                     Greedy* g, wt_kv_type kv_type = WT_KV_F32) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(prompt.size()) + n_new + 8;
  cp.n_threads = 2;
  cp.matmul_mode = WT_MATMUL_F32;
  cp.prune = pp;
  cp.kv_type = kv_type;
  wt_context* ctx = nullptr;
  wt_model_info info;
  wt_status st = wt_model_get_info(m, &info);
  if (st == WT_OK) st = wt_context_create(m, &cp, &ctx);
  if (st == WT_OK) st = wt_context_prefill(ctx, prompt.data(), prompt.size());
  wt_prune_stats ps;
  if (st == WT_OK) st = wt_context_get_prune_stats(ctx, &ps);
  if (st == WT_OK && ps.kv_rows) g->kv_rows.assign(ps.kv_rows, ps.kv_rows + ps.n_layer);
  if (st == WT_OK && ps.hidden_rows) g->hidden_rows.assign(ps.hidden_rows, ps.hidden_rows + ps.n_layer);
  for (int i = 0; i < n_new && st == WT_OK; ++i) {
    const float* logits = nullptr;
    st = wt_context_logits(ctx, -1, &logits);
    if (st != WT_OK) break;
    const wt_token t = argmax(logits, info.n_vocab);
    g->tokens.push_back(t);
    if (i + 1 < n_new) st = wt_context_decode(ctx, t);
  }
  wt_context_free(ctx);
  return st;
}

Greedy greedy(const wt_model* m, const wt_prune_params& pp, const std::vector<wt_token>& prompt, int n_new,
              wt_kv_type kv_type = WT_KV_F32) {
  Greedy g;
  REQUIRE_MESSAGE(run_greedy(m, pp, prompt, n_new, &g, kv_type) == WT_OK, wt_last_error());
  return g;
}

std::vector<wt_token> tokenize(const wt_model* m, const std::string& text) {
  std::vector<wt_token> t(text.size() + 8);
  size_t n = 0;
  const wt_tokenize_params tp = wt_tokenize_default_params();
  REQUIRE(wt_tokenize(m, text.data(), text.size(), &tp, t.data(), t.size(), &n) == WT_OK);
  t.resize(n);
  return t;
}

}  // namespace

#if defined(WT_MODEL_TEST_CUDA)
// CUDA keeps an f32 KV cache only for now (issue 27): the context says so, allocating
// nothing, rather than let the device kernels misread the cache.
TEST_CASE(WT_MODEL_BACKEND " model: an f16 or q8_0 KV cache is refused with WT_ERR_UNSUPPORTED for now") {
  wt_model* dev = device_model();
  if (!dev) return;
  for (wt_kv_type type : {WT_KV_F16, WT_KV_Q8_0}) {
    CAPTURE(type);
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 64;
    cp.kv_type = type;
    wt_context* ctx = nullptr;
    CHECK(wt_context_create(dev, &cp, &ctx) == WT_ERR_UNSUPPORTED);
    CHECK(std::string(wt_last_error()).find("does not keep a KV cache of") != std::string::npos);
    CHECK(ctx == nullptr);
    wt_context_plan_info plan{};
    CHECK(wt_context_plan(dev, &cp, &plan) == WT_ERR_UNSUPPORTED);
  }
}
#endif

TEST_CASE(WT_MODEL_BACKEND " model: logits of three prompts match the CPU with f32 activations") {
  wt_model* dev = device_model();
  if (!dev) return;
  const wt_model* cpu = real_model().model;
  wt_model_info info;
  REQUIRE(wt_model_get_info(cpu, &info) == WT_OK);
  const Sizes& z = sizes();
  const auto& text = real_model().text;
  std::vector<wt_token> code =
      tokenize(cpu, "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    a, b = 0, 1\n"
                    "    for _ in range(n):\n        a, b = b, a + b\n    return a\n\nprint(fibonacci(10))\n"
                    "# The first ten numbers of the sequence, one per line:\nfor i in range(10):\n"
                    "    print(i, fibonacci(i))\n");
  while (code.size() < z.logit_prompt[2]) code.insert(code.end(), code.begin(), code.end());
  code.resize(z.logit_prompt[2]);
  const std::vector<std::vector<wt_token>> prompts = {
      real_model().prompt(z.logit_prompt[0]),
      std::vector<wt_token>(text.begin() + 600, text.begin() + 600 + static_cast<long>(z.logit_prompt[1])),
      code,
  };
  for (size_t p = 0; p < prompts.size(); ++p) {
    CAPTURE(p);
    const std::vector<wt_token>& prompt = prompts[p];
    const wt_prune_params full = wt_prune_default_params();
    wt_context* a = make_ctx(cpu, full, prompt.size() + 4, true);
    wt_context* b = make_ctx(dev, full, prompt.size() + 4, true);
    REQUIRE_MESSAGE(wt_context_prefill(a, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
    REQUIRE_MESSAGE(wt_context_prefill(b, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
    // Every prompt row, then one decode step (the decode path: attention_decode, KV append).
    float max_abs = 0, max_rel = 0;
    int argmax_diff = 0, non_finite = 0;
    auto compare = [&](int32_t row) {
      const float *la = nullptr, *lb = nullptr;
      REQUIRE(wt_context_logits(a, row, &la) == WT_OK);
      REQUIRE(wt_context_logits(b, row, &lb) == WT_OK);
      float row_abs = 0, row_scale = 0;
      for (int32_t i = 0; i < info.n_vocab; ++i) {
        non_finite += !std::isfinite(lb[i]);
        row_abs = std::max(row_abs, std::fabs(la[i] - lb[i]));
        row_scale = std::max(row_scale, std::fabs(la[i]));
      }
      max_abs = std::max(max_abs, row_abs);
      max_rel = std::max(max_rel, row_abs / std::max(row_scale, 1.0f));
      argmax_diff += argmax(la, info.n_vocab) != argmax(lb, info.n_vocab);
    };
    for (int32_t r = 0; r < static_cast<int32_t>(prompt.size()); ++r) compare(r);
    const float* last = nullptr;
    REQUIRE(wt_context_logits(a, -1, &last) == WT_OK);
    const wt_token next = argmax(last, info.n_vocab);
    REQUIRE(wt_context_decode(a, next) == WT_OK);
    REQUIRE(wt_context_decode(b, next) == WT_OK);
    compare(0);
    MESSAGE("prompt " << p << " (" << prompt.size() << " tokens + 1 decode): max abs " << max_abs << ", max rel "
                      << max_rel << ", argmax differs at " << argmax_diff << " rows");
    CHECK(non_finite == 0);
    CHECK(max_abs <= kMaxAbs);
    CHECK(max_rel <= kMaxRel);
    wt_context_free(a);
    wt_context_free(b);
  }
}

#if defined(WT_MODEL_TEST_CUDA)
// CUDA's default mode runs prompts of 64 tokens or more on tensor cores (TF32 matmuls, f16
// attention inputs: kernels/cuda/tensor_core_paths.h). The bound is measured, not assumed:
// over every row of a 300-token prompt, CUDA's distance from the CPU's f32 logits (max abs,
// and root mean square) stays within the distance of the CPU's own default (int8
// activations) from them.
TEST_CASE("cuda model: tensor-core prompts stay as close to f32 logits as the CPU's fast path") {
  wt_model* dev = device_model();
  if (!dev) return;
  const wt_model* cpu = real_model().model;
  wt_model_info info;
  REQUIRE(wt_model_get_info(cpu, &info) == WT_OK);
  const std::vector<wt_token> prompt = real_model().prompt(300);
  const wt_prune_params full = wt_prune_default_params();
  wt_context* ref = make_ctx(cpu, full, prompt.size() + 4, true, WT_MATMUL_F32);
  wt_context* fast = make_ctx(cpu, full, prompt.size() + 4, true, WT_MATMUL_FAST);
  wt_context* tc = make_ctx(dev, full, prompt.size() + 4, true, WT_MATMUL_FAST);
  for (wt_context* c : {ref, fast, tc})
    REQUIRE_MESSAGE(wt_context_prefill(c, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  double cpu_max = 0, tc_max = 0, cpu_sq = 0, tc_sq = 0;
  int cpu_argmax = 0, tc_argmax = 0, non_finite = 0;
  for (int32_t r = 0; r < static_cast<int32_t>(prompt.size()); ++r) {
    const float *lr = nullptr, *lf = nullptr, *lt = nullptr;
    REQUIRE(wt_context_logits(ref, r, &lr) == WT_OK);
    REQUIRE(wt_context_logits(fast, r, &lf) == WT_OK);
    REQUIRE(wt_context_logits(tc, r, &lt) == WT_OK);
    for (int32_t i = 0; i < info.n_vocab; ++i) {
      non_finite += !std::isfinite(lt[i]);
      const double df = std::fabs(double{lf[i]} - lr[i]), dt = std::fabs(double{lt[i]} - lr[i]);
      cpu_max = std::max(cpu_max, df);
      tc_max = std::max(tc_max, dt);
      cpu_sq += df * df;
      tc_sq += dt * dt;
    }
    const int32_t want = argmax(lr, info.n_vocab);
    cpu_argmax += argmax(lf, info.n_vocab) != want;
    tc_argmax += argmax(lt, info.n_vocab) != want;
  }
  const double n = static_cast<double>(prompt.size()) * info.n_vocab;
  const double cpu_rms = std::sqrt(cpu_sq / n), tc_rms = std::sqrt(tc_sq / n);
  MESSAGE(prompt.size() << " rows against the CPU's f32 logits: CUDA tensor cores max abs " << tc_max << ", rms " << tc_rms
                        << ", argmax differs at " << tc_argmax << " rows; CPU int8 activations max abs " << cpu_max
                        << ", rms " << cpu_rms << ", argmax differs at " << cpu_argmax << " rows");
  CHECK(non_finite == 0);
  CHECK(tc_max <= cpu_max);
  CHECK(tc_rms <= cpu_rms);
  for (wt_context* c : {ref, fast, tc}) wt_context_free(c);
}
#endif

namespace {

void check_greedy(wt_prune_method m, wt_kv_type kv_type = WT_KV_F32) {
  wt_model* dev = device_model();
  if (!dev) return;
  const wt_model* cpu = real_model().model;
  const Sizes& z = sizes();
  const std::vector<wt_token> prompt = real_model().prompt(z.greedy_prompt);
  const std::string name = std::string(wt_prune_method_name(m)) +
                           (kv_type == WT_KV_F16 ? " (f16 KV)" : kv_type == WT_KV_Q8_0 ? " (q8_0 KV)" : "");
  const wt_prune_params pp = method(m);
  const Greedy want = greedy(cpu, pp, prompt, z.greedy_tokens, kv_type);
  const Greedy got = greedy(dev, pp, prompt, z.greedy_tokens, kv_type);
  int first_diff = -1;
  for (size_t i = 0; i < want.tokens.size() && first_diff < 0; ++i)
    if (want.tokens[i] != got.tokens[i]) first_diff = static_cast<int>(i);
  const int32_t n = static_cast<int32_t>(prompt.size());
  int32_t min_kv = n, min_hidden = n;
  for (int32_t r : want.kv_rows) min_kv = std::min(min_kv, r);
  for (int32_t r : want.hidden_rows) min_hidden = r > 0 ? std::min(min_hidden, r) : min_hidden;
  MESSAGE(name << ": " << z.greedy_tokens << " greedy tokens after " << n << " prompt tokens, first difference at "
               << (first_diff < 0 ? std::string("none") : std::to_string(first_diff)) << "; fewest KV rows in a layer "
               << min_kv << ", fewest hidden rows " << min_hidden);
  CHECK(first_diff == -1);
  // The policy decided the same on both backends, and (except full KV) it pruned.
  CHECK(got.kv_rows == want.kv_rows);
  CHECK(got.hidden_rows == want.hidden_rows);
  if (m != WT_PRUNE_FULL) CHECK((min_kv < n || min_hidden < n));
}

}  // namespace

TEST_CASE(WT_MODEL_BACKEND " model: greedy tokens identical to the CPU (full KV)") { check_greedy(WT_PRUNE_FULL); }
// The pruned and two-thread cases carry the "long" label: minutes each on lavapipe. The
// Release stage of scripts/test.sh runs them; the ASan stage leaves them out (the host code
// they reach is also reached under ASan by the full-KV case and the CPU pruning tests).
// No commas in these names: doctest_discover_tests would drop the label.
TEST_CASE(WT_MODEL_BACKEND " model: greedy tokens identical to the CPU (FastKV)" * doctest::test_suite("long")) { check_greedy(WT_PRUNE_FASTKV); }
TEST_CASE(WT_MODEL_BACKEND " model: greedy tokens identical to the CPU (ASL)" * doctest::test_suite("long")) { check_greedy(WT_PRUNE_ASL); }
TEST_CASE(WT_MODEL_BACKEND " model: greedy tokens identical to the CPU (SlimInfer)" * doctest::test_suite("long")) {
  check_greedy(WT_PRUNE_SLIMINFER);
}
namespace {

// Generation that keeps every step's logits, on a context with or without the KV pager
// (kv_device_blocks 0: every block resident): greedy, or with `forced` the given tokens as
// inputs (teacher forcing: the same inputs on every backend, so one different argmax does
// not change every later step).
struct Steps {
  std::vector<wt_token> tokens;
  std::vector<std::vector<float>> logits;
  wt_context_stats stats{};
};

Steps record_steps(const wt_model* m, const wt_prune_params& pp, const std::vector<wt_token>& prompt, int n_new,
                   int32_t device_blocks, wt_kv_type kv_type, const std::vector<wt_token>* forced = nullptr) {
  Steps s;
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(prompt.size()) + n_new + 8;
  cp.n_threads = 2;
  cp.matmul_mode = WT_MATMUL_F32;
  cp.prune = pp;
  cp.kv_device_blocks = device_blocks;
  cp.kv_block_tokens = 8;
  cp.kv_type = kv_type;
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  for (int i = 0; i < n_new; ++i) {
    const float* logits = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &logits) == WT_OK);
    s.logits.emplace_back(logits, logits + info.n_vocab);
    s.tokens.push_back(forced ? (*forced)[static_cast<size_t>(i)] : argmax(logits, info.n_vocab));
    if (i + 1 < n_new) REQUIRE_MESSAGE(wt_context_decode(ctx, s.tokens.back()) == WT_OK, wt_last_error());
  }
  REQUIRE(wt_context_get_stats(ctx, &s.stats) == WT_OK);
  wt_context_free(ctx);
  return s;
}

}  // namespace

#if !defined(WT_MODEL_TEST_CUDA)
// An f16 KV cache (issue 27), read and written by the device kernels directly: the same
// tokens as the CPU with the same cache type. Full KV, and SlimInfer (its block scores and
// active-block attention read the cache; its prefill gathers rows into it).
TEST_CASE(WT_MODEL_BACKEND " model: greedy tokens identical to the CPU with an f16 KV cache" * doctest::test_suite("long")) {
  check_greedy(WT_PRUNE_FULL, WT_KV_F16);
  check_greedy(WT_PRUNE_SLIMINFER, WT_KV_F16);
}

// A q8_0 KV cache rounds each value to 1/127 of its block's largest: a key or value whose
// f32 result differs between the backends by float rounding can land on the other side of a
// rounding boundary, so the two caches differ by whole quantization steps here and there,
// and greedy sequences drift apart after a few dozen tokens (at 14 and 27 on lavapipe). Through
// 30 layers the two caches become two draws of q8_0's rounding noise: the device's logits
// differ from the CPU's q8_0 ones about as much as those differ from f32 (lavapipe, this
// prompt: rms 0.114 vs 0.109 full KV, 0.069 vs 0.117 SlimInfer). So the check is that the
// device's cache is a q8_0 cache like the CPU's, on the CPU's own tokens (teacher forcing, so
// one different argmax does not change every later input): its top-1 agrees with the CPU's
// q8_0 run at >= 97% of the steps (the cache type's bar, issue 27), and its rms distance from
// the f32 logits is within 1.5x the CPU q8_0 run's (measured 1.30x and 1.06x). A misread
// cache (a wrong scale, a shifted block) moves logits by whole units, tens of times more.
// (Both q8_0 runs agree with f32 at 58-59 of 64 steps on this short prompt, full KV: q8_0's
// own cost here, printed, not checked.)
TEST_CASE(WT_MODEL_BACKEND " model: with a q8_0 KV cache the device stays within q8_0's own distance of the CPU" *
          doctest::test_suite("long")) {
  wt_model* dev = device_model();
  if (!dev) return;
  const wt_model* cpu = real_model().model;
  const Sizes& z = sizes();
  const std::vector<wt_token> prompt = real_model().prompt(z.greedy_prompt);
  for (wt_prune_method m : {WT_PRUNE_FULL, WT_PRUNE_SLIMINFER}) {
    const std::string name = wt_prune_method_name(m);
    CAPTURE(name);
    const wt_prune_params pp = method(m);
    const std::vector<wt_token> tokens = greedy(cpu, pp, prompt, z.greedy_tokens, WT_KV_Q8_0).tokens;
    const int n = static_cast<int>(tokens.size());
    const auto want = record_steps(cpu, pp, prompt, n, 0, WT_KV_Q8_0, &tokens).logits;
    const auto f32 = record_steps(cpu, pp, prompt, n, 0, WT_KV_F32, &tokens).logits;
    const auto got = record_steps(dev, pp, prompt, n, 0, WT_KV_Q8_0, &tokens).logits;
    int agree = 0, agree_f32 = 0, cpu_agree_f32 = 0;
    double dev_cpu = 0, dev_f32 = 0, cpu_f32 = 0;  // sums of squared logit differences
    for (size_t i = 0; i < want.size(); ++i) {
      const int32_t n = static_cast<int32_t>(want[i].size());
      agree += argmax(got[i].data(), n) == argmax(want[i].data(), n);
      agree_f32 += argmax(got[i].data(), n) == argmax(f32[i].data(), n);
      cpu_agree_f32 += argmax(want[i].data(), n) == argmax(f32[i].data(), n);
      for (int32_t j = 0; j < n; ++j) {
        const double g = got[i][j], w = want[i][j], f = f32[i][j];
        dev_cpu += (g - w) * (g - w);
        dev_f32 += (g - f) * (g - f);
        cpu_f32 += (w - f) * (w - f);
      }
    }
    const double cells = static_cast<double>(want.size() * want[0].size());
    MESSAGE(name << " (q8_0 KV): " << want.size() << " teacher-forced steps; device top-1 agrees with the CPU's q8_0 at "
                 << agree << ", with f32 at " << agree_f32 << " (the CPU's q8_0 at " << cpu_agree_f32
                 << "); rms logit distance device-CPU q8_0 "
                 << std::sqrt(dev_cpu / cells) << ", device-f32 " << std::sqrt(dev_f32 / cells) << ", CPU q8_0-f32 "
                 << std::sqrt(cpu_f32 / cells));
    const int need = (97 * static_cast<int>(want.size()) + 99) / 100;
    CHECK(agree >= need);
    CHECK(dev_f32 <= 1.5 * 1.5 * cpu_f32);
  }
}
#endif

// The KV pager on the device: prefill into blocks, paged decode attention through the block
// table, prefetch on the copy stream (lavapipe has one queue family: both streams share one
// queue, so ordering comes only from the timeline semaphores; nothing overlaps there).
TEST_CASE(WT_MODEL_BACKEND " model: a device pool of a quarter of the KV gives the resident tokens and logits" *
          doctest::test_suite("long")) {
  wt_model* dev = device_model();
  if (!dev) return;
  const std::vector<wt_token> prompt = real_model().prompt(sizes().greedy_prompt);
  const int n_new = 16;
  wt_model_info info;
  REQUIRE(wt_model_get_info(dev, &info) == WT_OK);
  const int32_t layer_blocks = (static_cast<int32_t>(prompt.size()) + n_new + 8 + 7) / 8;
  const int32_t quarter = std::max(layer_blocks, layer_blocks * info.n_layer / 4);
  struct Run {
    wt_prune_method method;
    wt_kv_type kv_type;
  };
  std::vector<Run> runs = {{WT_PRUNE_FULL, WT_KV_F32}, {WT_PRUNE_SLIMINFER, WT_KV_F32}};
#if !defined(WT_MODEL_TEST_CUDA)
  // The pool and the pinned tier hold the cache's type; blocks move as bytes (issue 27).
  runs.insert(runs.end(), {{WT_PRUNE_FULL, WT_KV_F16}, {WT_PRUNE_FULL, WT_KV_Q8_0}, {WT_PRUNE_SLIMINFER, WT_KV_Q8_0}});
#endif
  for (const Run& run : runs) {
    const wt_prune_method m = run.method;
    const std::string name = std::string(wt_prune_method_name(m)) +
                             (run.kv_type == WT_KV_F16 ? " (f16 KV)" : run.kv_type == WT_KV_Q8_0 ? " (q8_0 KV)" : "");
    CAPTURE(name);
    wt_prune_params pp = method(m);
    pp.slim_decode_keep = 0.5f;  // SlimInfer re-selects active blocks each step
    const Steps want = record_steps(dev, pp, prompt, n_new, 0, run.kv_type);
    const Steps got = record_steps(dev, pp, prompt, n_new, quarter, run.kv_type);
    float worst = 0;
    for (size_t i = 0; i < want.logits.size(); ++i)
      for (size_t j = 0; j < want.logits[i].size(); ++j) worst = std::max(worst, std::fabs(want.logits[i][j] - got.logits[i][j]));
    MESSAGE(name << ": pool " << quarter << " of " << layer_blocks * info.n_layer << " blocks; " << n_new
                 << " greedy tokens; max abs logit difference " << worst << "; fetched "
                 << got.stats.pager_blocks_in << " blocks (" << got.stats.pager_blocks_on_demand << " on demand), evicted "
                 << got.stats.pager_blocks_evicted);
    CHECK(got.tokens == want.tokens);
    CHECK(worst == 0.0f);
    if (m == WT_PRUNE_FULL) CHECK(got.stats.pager_blocks_in > 0);
  }
}

namespace {

// Issue 30: a context's state saved after the prompt and loaded into a fresh context of
// `into` (the same model on a device, or the CPU), then a question and greedy tokens in
// both: the tokens of the saved context going on.
struct Continued {
  std::vector<wt_token> tokens;
  float max_abs = 0;  // largest logit difference from the saved context's run, every step
};

std::vector<std::vector<float>> go_on(wt_context* ctx, const std::vector<wt_token>& question, int n_new,
                                      std::vector<wt_token>* tokens) {
  wt_model_info info;
  REQUIRE(wt_model_get_info(real_model().model, &info) == WT_OK);
  std::vector<std::vector<float>> logits;
  REQUIRE_MESSAGE(wt_context_prefill(ctx, question.data(), question.size()) == WT_OK, wt_last_error());
  for (int i = 0; i < n_new; ++i) {
    const float* l = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    logits.emplace_back(l, l + info.n_vocab);
    tokens->push_back(argmax(l, info.n_vocab));
    REQUIRE_MESSAGE(wt_context_decode(ctx, tokens->back()) == WT_OK, wt_last_error());
  }
  return logits;
}

void check_state_round_trip(const wt_model* from, const wt_model* into, wt_prune_method m) {
  const Sizes& z = sizes();
  const std::vector<wt_token> prompt = real_model().prompt(z.greedy_prompt);
  const std::vector<wt_token> question(real_model().text.begin() + 500, real_model().text.begin() + 508);
  const int n_new = 32;
  const wt_prune_params pp = method(m);
  const size_t n_ctx = prompt.size() + question.size() + n_new + 64;  // the oracle's answer too
  wt_context* saved = make_ctx(from, pp, n_ctx, false);
  REQUIRE_MESSAGE(wt_context_prefill(saved, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  size_t n = 0;
  REQUIRE(wt_context_state_size(saved, &n) == WT_OK);
  std::vector<uint8_t> state(n);
  REQUIRE_MESSAGE(wt_context_state_save(saved, state.data(), state.size(), &n) == WT_OK, wt_last_error());
  wt_context* loaded = make_ctx(into, pp, n_ctx, false);
  REQUIRE_MESSAGE(wt_context_state_load(loaded, state.data(), state.size()) == WT_OK, wt_last_error());
  std::vector<wt_token> want, got;
  const auto lw = go_on(saved, question, n_new, &want);
  const auto lg = go_on(loaded, question, n_new, &got);
  float worst = 0;
  for (size_t i = 0; i < lw.size(); ++i)
    for (size_t j = 0; j < lw[i].size(); ++j) worst = std::max(worst, std::fabs(lw[i][j] - lg[i][j]));
  MESSAGE(std::string(wt_prune_method_name(m)) << ": state of " << prompt.size() << " prompt tokens, " << state.size()
                                               << " bytes, saved on " << std::string(from == into ? WT_MODEL_BACKEND : "cpu")
                                               << ", loaded on " WT_MODEL_BACKEND "; " << n_new
                                               << " tokens after a question; max abs logit difference " << worst);
  CHECK(got == want);
  if (from == into) CHECK(worst == 0.0f);  // the same kernels over the same bytes
  wt_context_free(saved);
  wt_context_free(loaded);
}

}  // namespace

TEST_CASE(WT_MODEL_BACKEND " model: a saved state loads into a fresh context and goes on with the same tokens" *
          doctest::test_suite("long")) {
  wt_model* dev = device_model();
  if (!dev) return;
  // Full KV, the policies with decode state (SlimInfer's blocks, Token Filtering's
  // thresholds and anchors) and GemFilter's re-indexed positions; every method: the "slow"
  // case below.
  for (wt_prune_method m : {WT_PRUNE_FULL, WT_PRUNE_SLIMINFER, WT_PRUNE_TOKENFILTER, WT_PRUNE_GEMFILTER}) {
    const std::string name = wt_prune_method_name(m);
    CAPTURE(name);
    check_state_round_trip(dev, dev, m);
  }
}

TEST_CASE(WT_MODEL_BACKEND " model: a state saved on the CPU goes on with the CPU's tokens" * doctest::test_suite("long")) {
  wt_model* dev = device_model();
  if (!dev) return;
  for (wt_prune_method m : {WT_PRUNE_FULL, WT_PRUNE_SLIMINFER}) {
    const std::string name = wt_prune_method_name(m);
    CAPTURE(name);
    check_state_round_trip(real_model().model, dev, m);
  }
}

// Every method (minutes on lavapipe, so out of the default run: ctest -L slow).
TEST_CASE(WT_MODEL_BACKEND " model: a saved state goes on with the same tokens for every method" *
          doctest::test_suite("slow")) {
  wt_model* dev = device_model();
  if (!dev) return;
  for (int32_t i = 0; i < wt_prune_method_count(); ++i) {
    wt_prune_method m;
    REQUIRE(wt_prune_method_at(i, &m) == WT_OK);
    const std::string name = wt_prune_method_name(m);
    CAPTURE(name);
    check_state_round_trip(dev, dev, m);
  }
}

TEST_CASE(WT_MODEL_BACKEND " model: two contexts on two threads share the device and match a lone run" *
          doctest::test_suite("long")) {
  wt_model* dev = device_model();
  if (!dev) return;
  const Sizes& z = sizes();
  const std::vector<wt_token> p1 = real_model().prompt(z.thread_prompt);
  const std::vector<wt_token> p2(real_model().text.begin() + 300,
                                 real_model().text.begin() + 300 + static_cast<long>(z.thread_prompt + 4));
  const wt_prune_params full = wt_prune_default_params();
  const wt_prune_params fastkv = method(WT_PRUNE_FASTKV);
  const int n = z.thread_tokens;
  const Greedy want1 = greedy(dev, full, p1, n);
  const Greedy want2 = greedy(dev, fastkv, p2, n);
  Greedy got1, got2;
  wt_status st1 = WT_OK, st2 = WT_OK;
  std::thread t1([&] { st1 = run_greedy(dev, full, p1, n, &got1); });
  std::thread t2([&] { st2 = run_greedy(dev, fastkv, p2, n, &got2); });
  t1.join();
  t2.join();
  CHECK(st1 == WT_OK);
  CHECK(st2 == WT_OK);
  CHECK(got1.tokens == want1.tokens);
  CHECK(got2.tokens == want2.tokens);
  CHECK(got2.kv_rows == want2.kv_rows);
}

#if !defined(WT_MODEL_TEST_CUDA)
TEST_CASE("vulkan model: without a device loading for Vulkan is WT_ERR_UNSUPPORTED with a message") {
  // Run by ctest with every Vulkan driver hidden (vulkan_model_without_device); in the
  // ordinary run it checks only that the status is one of the two documented outcomes.
  const bool expect_none = std::getenv("WT_TEST_EXPECT_NO_VULKAN") != nullptr;
  if (!real_model().ok()) {
    MESSAGE("SKIPPED: " << wt::test::real_model_path() << " not present");
    wt::test::g_vulkan_skipped = true;
    return;
  }
  wt::test::g_vulkan_ran = true;
  wt_model_params mp = wt_model_default_params();
  mp.backend = WT_BACKEND_VULKAN;
  wt_model* m = nullptr;
  const wt_status st = wt_model_load(wt::test::real_model_path().c_str(), &mp, &m);
  if (expect_none) {
    CHECK(st == WT_ERR_UNSUPPORTED);
    CHECK(m == nullptr);
  } else {
    CHECK((st == WT_OK || st == WT_ERR_UNSUPPORTED));
  }
  if (st != WT_OK) {
    const std::string msg = wt_last_error();
    MESSAGE("wt_model_load(WT_BACKEND_VULKAN): " << msg);
    CHECK(msg.find("WT_BACKEND_VULKAN") != std::string::npos);
  }
  wt_model_free(m);
}

#endif  // the Vulkan-only case

// A tiny model with K-quant matrices (rows of 256): blk.0.ffn_down Q4_K, blk.0.ffn_up Q6_K,
// blk.0.attn_output Q5_K, random valid blocks (tests/support/random_kquant.h).
std::string write_kquant_model(const char* name) {
  wt::test::TinyModelOptions o;
  o.n_embd = 256;
  o.n_ff = 256;
  wt::test::GgufWriter w = wt::test::make_tiny_llama(o);
  std::mt19937 rng(20261126u);
  for (auto [tensor, type] : {std::pair{"blk.0.ffn_down.weight", wt::test::ggml::q4_k},
                              std::pair{"blk.0.ffn_up.weight", wt::test::ggml::q6_k},
                              std::pair{"blk.0.attn_output.weight", wt::test::ggml::q5_k}}) {
    wt::test::GgufWriter::TensorEntry* t = w.find_tensor(tensor);
    REQUIRE(t != nullptr);
    t->type = type;
    const size_t blocks = static_cast<size_t>(t->dims[0] / 256 * t->dims[1]);
    t->data.assign(blocks * (type == wt::test::ggml::q4_k ? 144 : type == wt::test::ggml::q6_k ? 210 : 176), 0);
    REQUIRE(wt::test::fill_random_kquant(type, t->data.data(), blocks, rng));
  }
  const std::string path = wt::test::temp_file(name);
  REQUIRE(wt::test::write_file(path, w.build()));
  return path;
}

TEST_CASE(WT_MODEL_BACKEND " model: K-quant weights run where the backend reads them, else are refused at load") {
  // Where weight_types_of lists the K-quants (CUDA and Vulkan now), the model's logits match
  // the CPU's; where not, the device must say so when the model is loaded, naming the
  // tensor, not at the first matmul.
  const bool reads = (wt::weight_types_of(kBackend) & wt::dtype_bit(wt::DType::q4_k)) != 0;
  const std::string path = write_kquant_model(WT_MODEL_BACKEND "_kquant.gguf");
  wt_model* cpu = nullptr;
  CHECK_MESSAGE(wt_model_load(path.c_str(), nullptr, &cpu) == WT_OK, wt_last_error());

  wt_model_params mp = wt_model_default_params();
  mp.backend = kBackend;
  wt_model* m = nullptr;
  const wt_status st = wt_model_load(path.c_str(), &mp, &m);
  std::filesystem::remove(path);
  const std::string msg = st == WT_OK ? "" : wt_last_error();
  if (st == WT_ERR_UNSUPPORTED && msg.find("blk.0.") == std::string::npos) {
    MESSAGE("SKIPPED: no " WT_MODEL_BACKEND_TITLE " device: " << msg);
    wt::test::g_vulkan_skipped = true;
    wt_model_free(cpu);
    return;
  }
  wt::test::g_vulkan_ran = true;
  if (!reads) {
    CHECK(st == WT_ERR_UNSUPPORTED);
    CHECK(m == nullptr);
    MESSAGE("wt_model_load(" << std::string(kBackend == WT_BACKEND_CUDA ? "WT_BACKEND_CUDA" : "WT_BACKEND_VULKAN") << "): " << msg);
    CHECK(msg.find("blk.0.") != std::string::npos);
    CHECK((msg.find("Q4_K") != std::string::npos || msg.find("Q5_K") != std::string::npos ||
           msg.find("Q6_K") != std::string::npos));
    wt_model_free(cpu);
    return;
  }
  REQUIRE_MESSAGE(st == WT_OK, msg);
  wt_model_info info;
  REQUIRE(wt_model_get_info(cpu, &info) == WT_OK);
  const std::vector<wt_token> prompt = {1, 17, 42, 99, 5, 200, 33, 7, 64, 128, 3, 250};
  wt_context* a = make_ctx(cpu, wt_prune_default_params(), prompt.size() + 4, true);
  wt_context* b = make_ctx(m, wt_prune_default_params(), prompt.size() + 4, true);
  REQUIRE_MESSAGE(wt_context_prefill(a, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  REQUIRE_MESSAGE(wt_context_prefill(b, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  REQUIRE(wt_context_decode(a, 9) == WT_OK);
  REQUIRE(wt_context_decode(b, 9) == WT_OK);
  const float *la = nullptr, *lb = nullptr;
  REQUIRE(wt_context_logits(a, -1, &la) == WT_OK);
  REQUIRE(wt_context_logits(b, -1, &lb) == WT_OK);
  float max_abs = 0, scale = 0;
  for (int32_t i = 0; i < info.n_vocab; ++i) {
    max_abs = std::max(max_abs, std::fabs(la[i] - lb[i]));
    scale = std::max(scale, std::fabs(la[i]));
  }
  MESSAGE("K-quant tiny model, 12 tokens + 1 decode: max abs logit difference " << max_abs << " (largest logit " << scale << ")");
  CHECK(std::isfinite(max_abs));
  CHECK(scale > 0.0f);
  CHECK(max_abs <= kMaxAbs);
  wt_context_free(a);
  wt_context_free(b);
  wt_model_free(m);
  wt_model_free(cpu);
}

#if !defined(WT_MODEL_TEST_CUDA)
// The default model's layer shape (576 wide, 9/3 heads of 64, ffn 1536), or with `narrow`
// 128 wide, 2/1 heads of 64, ffn 384 (a 4.5th of its attention work), with `n_layer` layers
// of random f32 weights and the tiny byte vocabulary: the measured-memory check at 4k and 8k
// tokens, where lavapipe would need hours for 30 layers. Null if not loadable.
wt_model* layer_shaped_model(int32_t n_layer, bool narrow, std::string* why) {
  wt::test::TinyModelOptions o;
  o.n_layer = n_layer;
  o.n_embd = narrow ? 128 : 576;
  o.n_head = narrow ? 2 : 9;
  o.n_head_kv = narrow ? 1 : 3;
  o.n_ff = narrow ? 384 : 1536;
  o.n_ctx_train = 8192;
  o.tied_output = true;
  const std::string path = wt::test::temp_file(WT_MODEL_BACKEND "_layer_shaped.gguf");
  if (!wt::test::write_file(path, wt::test::make_tiny_llama(o).build())) {
    *why = "cannot write " + path;
    return nullptr;
  }
  wt_model_params mp = wt_model_default_params();
  mp.backend = kBackend;
  wt_model* m = nullptr;
  const wt_status st = wt_model_load(path.c_str(), &mp, &m);
  std::filesystem::remove(path);
  if (st != WT_OK) *why = std::string(wt_status_string(st)) + ": " + wt_last_error();
  return st == WT_OK ? m : nullptr;
}

// Issue 8's measured-vs-planned check on Vulkan, as tests/unit/test_planner.cpp makes it on
// the CPU: the growth of the peak resident set from before wt_context_create to after a
// prompt of n_ctx - 16 tokens and 16 decode steps, against the plan's context bytes and
// the driver's bound for queued work (wt_context_plan_info::driver_bytes). On lavapipe
// device memory is host memory, so the resident set holds the arena and pools, and the
// driver's command storage. Minutes on lavapipe: only with WT_VULKAN_PLAN_MEASURE_CTX=<n_ctx> (e.g. 1024),
// visibly skipped otherwise (docs/results/plans.md has the figures); with
// WT_VULKAN_PLAN_MEASURE_LAYERS=<n> (4 at least: SlimInfer's three pruning layers) on a
// model of the default model's layer shape with n layers instead of the default model, and
// with WT_VULKAN_PLAN_MEASURE_NARROW=1 on the narrow shape. Not in the CUDA binary: a discrete GPU's memory is
// not in the resident set.
TEST_CASE("vulkan model: measured memory of a context is within 10% of its plan and below it" *
          doctest::test_suite("long")) {
  const char* env = std::getenv("WT_VULKAN_PLAN_MEASURE_CTX");
  if (!env) {
    MESSAGE("SKIPPED: set WT_VULKAN_PLAN_MEASURE_CTX=1024 (or 4096, 8192) to measure; minutes on lavapipe");
    wt::test::g_vulkan_skipped = true;
    return;
  }
  const int32_t n_ctx = std::max(256, std::atoi(env));
  const char* layers_env = std::getenv("WT_VULKAN_PLAN_MEASURE_LAYERS");
  struct ModelFree {
    void operator()(wt_model* m) const { wt_model_free(m); }
  };
  std::unique_ptr<wt_model, ModelFree> own;
  wt_model* dev = nullptr;
  std::vector<wt_token> text(static_cast<size_t>(n_ctx));
  if (layers_env) {
    std::string why;
    own.reset(layer_shaped_model(std::max(1, std::atoi(layers_env)), std::getenv("WT_VULKAN_PLAN_MEASURE_NARROW") != nullptr,
                                 &why));
    dev = own.get();
    if (!dev) {
      MESSAGE("SKIPPED: no " WT_MODEL_BACKEND_TITLE " model of the default model's layer shape: " << why);
      wt::test::g_vulkan_skipped = true;
      return;
    }
    wt::test::g_vulkan_ran = true;
    for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<wt_token>((i * 7) % 256);  // byte tokens
  } else {
    dev = device_model();
    if (!dev) return;
    const std::vector<wt_token>& src = real_model().text;
    REQUIRE(!src.empty());
    for (size_t i = 0; i < text.size(); ++i) text[i] = src[i % src.size()];
  }
  wt_model_info info;
  REQUIRE(wt_model_get_info(dev, &info) == WT_OK);
  MESSAGE("model: " << info.n_layer << " layers, n_embd " << info.n_embd << ", vocab " << info.n_vocab);
  auto params_for = [&](const wt::test::MeasureCase c) {
    wt_context_params cp = wt::test::measure_params(c, n_ctx, info.n_layer);
    cp.matmul_mode = WT_MATMUL_F32;
    return cp;
  };
  // Each case once unmeasured first, exactly as it is measured: the first use of an op at a
  // shape compiles its pipeline (lavapipe JIT-compiles the shader then) and grows the
  // driver's caches - the process's memory, once, not a context's. Warming with a shorter
  // prompt or fewer decode steps left FastKV's first measured run 0.3 MiB over its plan, in
  // memory still resident after the context was freed (docs/results/plans.md).
  for (const wt::test::MeasureCase c : wt::test::kMeasureCases) {  // a bad parameter fails in seconds, not hours
    const wt_context_params cp = params_for(c);
    wt_context_plan_info plan{};
    REQUIRE_MESSAGE(wt_context_plan(dev, &cp, &plan) == WT_OK, (wt::test::case_name(c) + ": " + wt_last_error()));
  }
  for (const wt::test::MeasureCase c : wt::test::kMeasureCases) {
    wt::test::ContextMeasure unused;
    std::string why;
    REQUIRE_MESSAGE(wt::test::measure_context(dev, params_for(c), text, &unused, &why), (wt::test::case_name(c) + ": " + why));
  }
  for (const wt::test::MeasureCase c : wt::test::kMeasureCases) {
    const std::string name = wt::test::case_name(c);
    CAPTURE(name);
    wt::test::ContextMeasure r;
    std::string why;
    REQUIRE_MESSAGE(wt::test::measure_context(dev, params_for(c), text, &r, &why), why);
    // The plan of a run: what the context allocates, and what the driver may hold for the
    // work queued between two synchronizations (bounded by the backend's batch cap).
    const uint64_t planned = r.plan.context_bytes + r.plan.driver_bytes;
    MESSAGE(name << " at n_ctx " << n_ctx << ": planned " << planned / 1048576.0 << " MiB (context "
                 << r.plan.context_bytes / 1048576.0 << " + driver " << r.plan.driver_bytes / 1048576.0
                 << "), measured peak RSS growth " << r.peak_growth / 1048576.0 << " MiB ("
                 << 100.0 * static_cast<double>(r.peak_growth) / static_cast<double>(planned)
                 << "%); resident at the end +" << r.end_growth / 1048576.0 << " MiB, in:\n" << r.grew
                 << "still resident after wt_context_free:\n" << r.kept);
    CHECK(r.plan.context_bytes == r.stats.arena_bytes + r.stats.pager_device_bytes + r.stats.pager_host_bytes);
    CHECK(r.plan.driver_bytes > 0);
    CHECK(r.peak_growth <= planned);
    CHECK(static_cast<double>(r.peak_growth) >= 0.9 * static_cast<double>(planned));
  }
}
#endif
