// What the device model tests share (test_vulkan_model.cpp, test_device_kv_state.cpp,
// test_vulkan_gpu_kernels.cpp): the
// backend under test, the sizes, the pruning parameters that prune a short prompt, the device
// model (loaded once per process: the functions are inline, so both files share its static),
// contexts and greedy runs. One source, two binaries: WT_MODEL_TEST_CUDA picks CUDA.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "model_vulkan.h"
#include "runtime/api/handles.h"
#include "runtime/model/gguf.h"
#include "support/real_model.h"
#include "whittle.h"


// The backend under test; string literals, so test case names can be made from them.
#if defined(WT_MODEL_TEST_CUDA)
#define WT_MODEL_BACKEND "cuda"
#define WT_MODEL_BACKEND_TITLE "CUDA"
#else
#define WT_MODEL_BACKEND "vulkan"
#define WT_MODEL_BACKEND_TITLE "Vulkan"
#endif

namespace wt::test::device_cases {

using wt::test::real_model;

#if defined(WT_MODEL_TEST_CUDA)
inline constexpr wt_backend_kind kBackend = WT_BACKEND_CUDA;
#else
inline constexpr wt_backend_kind kBackend = WT_BACKEND_VULKAN;
#endif

// Max |vulkan - cpu| over every logit of every row, and the same relative to the largest
// |cpu logit| of the row (at least 1). Measured on lavapipe (printed by the test): 3.0e-5
// abs, 1.3e-6 rel over the three short prompts. The bounds leave ~30x room for other
// drivers' summation orders and longer prompts, and stay far below the int8 activation
// noise (~1) and the argmax margins the greedy tests rely on.
inline constexpr float kMaxAbs = 1e-3f;
inline constexpr float kMaxRel = 1e-4f;

struct Sizes {
  size_t logit_prompt[3];  // tokens of the three logits prompts (the third is code, cut)
  size_t greedy_prompt;
  int greedy_tokens;
  size_t thread_prompt;
  int thread_tokens;
};

inline const Sizes& sizes() {
  // 40 prompt tokens, not fewer: at 32, ASL's per-head KV choice at layer 18 (one slot,
  // positions 0 and 2 nearly tied) fell differently on the two backends — a discrete
  // selection amplifies a 1e-7 score difference — and decode logits then moved by ~0.4.
  static const Sizes small{{12, 16, 20}, 40, 64, 12, 8};
  static const Sizes full{{160, 100, 120}, 240, 64, 96, 12};
  return std::getenv("WT_VULKAN_MODEL_FULL") ? full : small;
}

// Pruning parameters that prune at both sizes: keep 0.3 with an observation window of 8
// and SlimInfer blocks of 8 tokens (the defaults, 32 and 64, cover a short prompt whole).
inline wt_prune_params method(wt_prune_method m) {
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

inline wt_model* device_model() {
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

#if !defined(WT_MODEL_TEST_CUDA)
// A Vulkan backend made with options bo, for the default model; null after a SKIPPED message
// when the model or a device is missing.
inline std::unique_ptr<wt::Backend> vulkan_backend_for_model(const wt::BackendOptions& bo) {
  if (!real_model().ok()) {
    MESSAGE("SKIPPED: " << wt::test::real_model_path() << " not present (scripts/fetch-model.sh fetches it)");
    wt::test::g_vulkan_skipped = true;
    return nullptr;
  }
  std::unique_ptr<wt::Backend> device;
  const wt::Status st = wt::create_vulkan_backend(bo, &device);
  if (!st.is_ok()) {
    MESSAGE("SKIPPED: no Vulkan device: " << st.message());
    wt::test::g_vulkan_skipped = true;
    return nullptr;
  }
  return device;
}

// The default model with its weights placed on `device`.
inline std::unique_ptr<wt_model> model_on(std::unique_ptr<wt::Backend> device) {
  std::shared_ptr<wt::GgufFile> file;
  REQUIRE_MESSAGE(wt::GgufFile::open(wt::test::real_model_path(), &file).is_ok(), "opening the default model");
  std::unique_ptr<wt_model> m;
  const wt::Status made = wt::api::make_model(std::move(file), wt::LoadOptions{}, std::move(device), &m);
  REQUIRE_MESSAGE(made.is_ok(), made.message());
  wt::test::g_vulkan_ran = true;
  return m;
}

// The default model on a Vulkan backend whose device_only memory (the weights, the contexts'
// arenas' device parts, the pager's pools) is unmapped as on a discrete card
// (BackendOptions::unmapped_device_only: addresses reserved and never backed, so a host access
// faults), or null after a SKIPPED message.
inline std::unique_ptr<wt_model> unmapped_model() {
  wt::BackendOptions bo;
  bo.unmapped_device_only = true;
  std::unique_ptr<wt::Backend> device = vulkan_backend_for_model(bo);
  if (!device) return nullptr;
  REQUIRE(device->caps().device_only_unmapped);
  return model_on(std::move(device));
}
#endif

// make_ctx's parameters.
inline wt_context_params ctx_params(const wt_prune_params& pp, size_t n_ctx, bool logits_all,
                                    wt_matmul_mode mode = WT_MATMUL_F32) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(n_ctx);
  cp.n_threads = 2;
  cp.logits_all = logits_all;
  cp.matmul_mode = mode;
  cp.prune = pp;
  // f32 KV, not the f16 default: logits compared within a tolerance of float rounding. An
  // f16 cache rounds a value the two sides computed a rounding apart to different halves
  // where the pair straddles a step (one f16 step is 1e-3 relative); the f16 cases compare
  // greedy tokens (greedy_params).
  cp.kv_type = WT_KV_F32;
  return cp;
}

inline wt_context* make_ctx(const wt_context_params& cp, const wt_model* m) {
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
  return ctx;
}

inline wt_context* make_ctx(const wt_model* m, const wt_prune_params& pp, size_t n_ctx, bool logits_all,
                            wt_matmul_mode mode = WT_MATMUL_F32) {
  return make_ctx(ctx_params(pp, n_ctx, logits_all, mode), m);
}

inline int32_t argmax(const float* v, int32_t n) { return static_cast<int32_t>(std::max_element(v, v + n) - v); }

// The parameters of a greedy run of n_new tokens after the prompt: f32 activations (the
// device and the CPU then differ by float rounding alone), room for the tokens and a few more.
inline wt_context_params greedy_params(const wt_prune_params& pp, size_t n_prompt, int n_new, wt_kv_type kv_type) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(n_prompt) + n_new + 8;
  cp.n_threads = 2;
  cp.matmul_mode = WT_MATMUL_F32;
  cp.prune = pp;
  cp.kv_type = kv_type;
  return cp;
}

struct Greedy {
  std::vector<wt_token> tokens;
  std::vector<int32_t> kv_rows;      // per layer, after the prefill
  std::vector<int32_t> hidden_rows;  // per layer, rows computed in the (last) pass
};

// Prefill, then n_new argmax steps (end tokens included: the sequences are compared, not
// the text). No doctest assertions: it also runs on worker threads.
inline wt_status run_greedy(const wt_model* m, const wt_context_params& cp, const std::vector<wt_token>& prompt,
                            int n_new, Greedy* g) {
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

// The same with greedy_params().
inline wt_status run_greedy(const wt_model* m, const wt_prune_params& pp, const std::vector<wt_token>& prompt, int n_new,
                            Greedy* g, wt_kv_type kv_type = WT_KV_F32) {
  return run_greedy(m, greedy_params(pp, prompt.size(), n_new, kv_type), prompt, n_new, g);
}

inline Greedy greedy(const wt_model* m, const wt_prune_params& pp, const std::vector<wt_token>& prompt, int n_new,
              wt_kv_type kv_type = WT_KV_F32) {
  Greedy g;
  REQUIRE_MESSAGE(run_greedy(m, pp, prompt, n_new, &g, kv_type) == WT_OK, wt_last_error());
  return g;
}

inline std::vector<wt_token> tokenize(const wt_model* m, const std::string& text) {
  std::vector<wt_token> t(text.size() + 8);
  size_t n = 0;
  const wt_tokenize_params tp = wt_tokenize_default_params();
  REQUIRE(wt_tokenize(m, text.data(), text.size(), &tp, t.data(), t.size(), &n) == WT_OK);
  t.resize(n);
  return t;
}


// n_tokens greedy tokens after n_prompt tokens of the real text on `dev` and on the CPU:
// the same tokens, the same KV and hidden rows per layer, and (but full KV) a pruned prompt.
inline void check_greedy_on(const wt_model* dev, wt_prune_method m, size_t n_prompt, int n_tokens,
                            wt_kv_type kv_type = WT_KV_F32) {
  const wt_model* cpu = real_model().model;
  const std::vector<wt_token> prompt = real_model().prompt(n_prompt);
  const std::string name = std::string(wt_prune_method_name(m)) +
                           (kv_type == WT_KV_F16 ? " (f16 KV)" : kv_type == WT_KV_Q8_0 ? " (q8_0 KV)" : "");
  CAPTURE(name);
  const wt_prune_params pp = method(m);
  const Greedy want = greedy(cpu, pp, prompt, n_tokens, kv_type);
  const Greedy got = greedy(dev, pp, prompt, n_tokens, kv_type);
  int first_diff = -1;
  for (size_t i = 0; i < want.tokens.size() && first_diff < 0; ++i)
    if (want.tokens[i] != got.tokens[i]) first_diff = static_cast<int>(i);
  const int32_t n = static_cast<int32_t>(prompt.size());
  int32_t min_kv = n, min_hidden = n;
  for (int32_t r : want.kv_rows) min_kv = std::min(min_kv, r);
  for (int32_t r : want.hidden_rows) min_hidden = r > 0 ? std::min(min_hidden, r) : min_hidden;
  MESSAGE(name << ": " << n_tokens << " greedy tokens after " << n << " prompt tokens, first difference at "
               << (first_diff < 0 ? std::string("none") : std::to_string(first_diff)) << "; fewest KV rows in a layer "
               << min_kv << ", fewest hidden rows " << min_hidden);
  CHECK(first_diff == -1);
  // The policy decided the same on both backends, and (except full KV) it pruned.
  CHECK(got.kv_rows == want.kv_rows);
  CHECK(got.hidden_rows == want.hidden_rows);
  // decode_topk keeps every row and prunes what its decode steps read.
  const bool prunes_prompt = m != WT_PRUNE_FULL && m != static_cast<wt_prune_method>(WT_PRUNE_FIRST_EXTENSION);
  if (prunes_prompt) CHECK((min_kv < n || min_hidden < n));
}

inline void check_greedy(wt_prune_method m, wt_kv_type kv_type = WT_KV_F32) {
  wt_model* dev = device_model();
  if (!dev) return;
  check_greedy_on(dev, m, sizes().greedy_prompt, sizes().greedy_tokens, kv_type);
}


}  // namespace wt::test::device_cases
