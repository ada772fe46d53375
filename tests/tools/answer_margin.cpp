// How firmly a greedy answer holds: a chat prompt's greedy answer under the exact model
// (f32 activations, f32 KV) and under the default fast mode (int8 activations, f16 KV) on
// every matmul and attention path this CPU can run, each with the smallest gap between the
// top two logits along the way. Int8 rounding differs per instruction set, so an answer
// that hinges on a near-tie (SmolLM2's bare "What is the capital of France?": "The" 0.08
// logits above "L") is one CPU's answer, not the model's; a demo prompt should not be one.
//   answer_margin MODEL.gguf PROMPT STEPS [--expect TEXT | --skip PATH]... [METHOD [KEY=VALUE]...]
// PROMPT is the user turn (the model's chat template is applied), METHOD a pruning method
// (default full) with its parameters. With --expect, exits 1 unless every answer contains
// every TEXT. --skip leaves out a path by name (the "scalar" matmul takes minutes over a
// prompt of thousands of tokens). One line per variant; 2 threads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/matmul_impl.h"
#include "kernels/cpu/ops_cpu.h"
#include "whittle.h"

namespace {

struct Variant {
  wt_matmul_mode mode;
  wt_kv_type kv;
  const char* matmul_isa;  // names for the kernels' test switches
  const char* attention_isa;
};

struct Answer {
  std::string text;
  float min_margin = 0.0f;
  int at_step = -1;
};

std::string token_text(const wt_model* m, wt_token t) {
  char buf[256];
  size_t n = 0;
  return wt_token_to_bytes(m, t, buf, sizeof buf, &n) == WT_OK ? std::string(buf, n) : std::string("?");
}

bool fail(const char* what) {
  std::fprintf(stderr, "answer_margin: %s: %s\n", what, wt_last_error());
  return false;
}

// Greedy decoding of prompt under v, at most steps tokens or up to an end token.
bool greedy(const wt_model* m, const std::vector<wt_token>& prompt, int steps, const wt_prune_params& prune,
            const Variant& v, Answer* out) {
  if (!wt::cpu::set_matmul_isa_for_testing(v.matmul_isa) || !wt::cpu::set_attention_isa_for_testing(v.attention_isa)) {
    std::fprintf(stderr, "answer_margin: this CPU has no %s matmul or %s attention path\n", v.matmul_isa, v.attention_isa);
    return false;
  }
  wt_model_info info{};
  info.struct_size = sizeof info;
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(prompt.size()) + steps + 1;
  cp.n_threads = 2;
  cp.matmul_mode = v.mode;
  cp.kv_type = v.kv;
  cp.prune = prune;
  wt_context* ctx = nullptr;
  bool ok = wt_model_get_info(m, &info) == WT_OK && wt_context_create(m, &cp, &ctx) == WT_OK &&
            wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK;
  out->min_margin = 1e30f;
  for (int s = 0; ok && s < steps; ++s) {
    const float* l = nullptr;
    if (wt_context_logits(ctx, -1, &l) != WT_OK) {
      ok = false;
      break;
    }
    int best = 0, second = 1;
    if (l[second] > l[best]) std::swap(best, second);
    for (int i = 2; i < info.n_vocab; ++i) {
      if (l[i] > l[best]) {
        second = best;
        best = i;
      } else if (l[i] > l[second]) {
        second = i;
      }
    }
    if (l[best] - l[second] < out->min_margin) {
      out->min_margin = l[best] - l[second];
      out->at_step = s;
    }
    if (wt_token_is_end(m, best)) break;
    out->text += token_text(m, best);
    if (s + 1 < steps) ok = wt_context_decode(ctx, best) == WT_OK;
  }
  if (!ok) fail("running the model");
  wt_context_free(ctx);
  wt::cpu::set_matmul_isa_for_testing(nullptr);
  wt::cpu::set_attention_isa_for_testing(nullptr);
  return ok;
}

int usage() {
  std::fprintf(stderr, "usage: answer_margin MODEL.gguf PROMPT STEPS [--expect TEXT | --skip PATH]... [METHOD [KEY=VALUE]...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const int steps = std::atoi(argv[3]);
  if (steps < 1 || steps > 4096) return usage();
  std::vector<std::string> expect, skip;
  wt_prune_params prune = wt_prune_default_params();
  int a = 4;
  for (; a + 1 < argc; a += 2) {
    if (std::strcmp(argv[a], "--expect") == 0) {
      expect.emplace_back(argv[a + 1]);
    } else if (std::strcmp(argv[a], "--skip") == 0) {
      skip.emplace_back(argv[a + 1]);
    } else {
      break;
    }
  }
  if (a < argc && wt_prune_method_from_name(argv[a++], &prune.method) != WT_OK) {
    fail("METHOD");
    return 2;
  }
  for (; a < argc; ++a) {
    const char* eq = std::strchr(argv[a], '=');
    if (!eq) return usage();
    const std::string key(argv[a], static_cast<size_t>(eq - argv[a]));
    if (wt_prune_set_param(&prune, key.c_str(), eq + 1) != WT_OK) {
      fail(argv[a]);
      return 2;
    }
  }

  wt_model* m = nullptr;
  if (wt_model_load(argv[1], nullptr, &m) != WT_OK) {
    fail(argv[1]);
    return 1;
  }
  const wt_chat_message msg{"user", argv[2]};
  size_t len = 0;
  std::string chat;
  wt_tokenize_params tp = wt_tokenize_default_params();
  tp.parse_special = true;
  size_t n_tokens = 0;
  std::vector<wt_token> prompt;
  bool ok = wt_chat_apply(m, &msg, 1, true, nullptr, 0, &len) == WT_ERR_BUFFER_TOO_SMALL;
  if (ok) {
    chat.resize(len + 1);
    ok = wt_chat_apply(m, &msg, 1, true, chat.data(), chat.size(), &len) == WT_OK;
    chat.resize(len);
  }
  if (ok) ok = wt_tokenize(m, chat.data(), chat.size(), &tp, nullptr, 0, &n_tokens) == WT_ERR_BUFFER_TOO_SMALL;
  if (ok) {
    prompt.resize(n_tokens);
    ok = wt_tokenize(m, chat.data(), chat.size(), &tp, prompt.data(), prompt.size(), &n_tokens) == WT_OK;
  }
  if (!ok) {
    fail("formatting the prompt");
    wt_model_free(m);
    return 1;
  }

  // The exact model first, then the fast mode on the paths chosen at run time (the first
  // each list names), then on each other matmul path and each other attention path.
  const auto skipped = [&](const char* path) { return std::find(skip.begin(), skip.end(), path) != skip.end(); };
  const char* mm[8];
  const int n_mm = wt::cpu::matmul_isa_list(mm, 8);
  std::vector<const char*> att;
  for (const char* name : {"avx512", "avx2", "base"})
    if (wt::cpu::set_attention_isa_for_testing(name)) att.push_back(name);
  wt::cpu::set_attention_isa_for_testing(nullptr);
  std::vector<Variant> variants = {{WT_MATMUL_F32, WT_KV_F32, mm[0], att[0]}, {WT_MATMUL_FAST, WT_KV_F16, mm[0], att[0]}};
  for (int i = 1; i < n_mm; ++i)
    if (!skipped(mm[i])) variants.push_back({WT_MATMUL_FAST, WT_KV_F16, mm[i], att[0]});
  for (size_t i = 1; i < att.size(); ++i)
    if (!skipped(att[i])) variants.push_back({WT_MATMUL_FAST, WT_KV_F16, mm[0], att[i]});

  std::printf("%s, %zu prompt tokens, %s:\n", argv[1], prompt.size(), wt_prune_method_name(prune.method));
  int missing = 0;
  for (const Variant& v : variants) {
    Answer ans;
    const auto t0 = std::chrono::steady_clock::now();
    if (!greedy(m, prompt, steps, prune, v, &ans)) {
      wt_model_free(m);
      return 1;
    }
    bool has_all = true;
    for (const std::string& e : expect) has_all = has_all && ans.text.find(e) != std::string::npos;
    missing += has_all ? 0 : 1;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string shown = ans.text;
    std::replace(shown.begin(), shown.end(), '\n', ' ');
    std::printf("  %-5s matmul %-12s attention %-8s min top-1 margin %6.3f at token %2d (%5.1f s)%s: %s\n",
                v.mode == WT_MATMUL_F32 ? "exact" : "fast", v.matmul_isa, v.attention_isa, ans.min_margin, ans.at_step,
                secs, has_all ? "" : " MISSING", shown.c_str());
    std::fflush(stdout);
  }
  wt_model_free(m);
  if (missing > 0) std::printf("answer_margin: %d answer(s) lack an expected text\n", missing);
  return missing > 0 ? 1 : 0;
}
