// How far the fast mode (int8 activations) with an f32 and with an f16 KV cache each stand
// from the exact model (f32 activations, f32 KV), and f16 KV with f32 activations too: the
// measurement behind f16 being the default KV type (docs/results/kv-type.md). For every
// method named, four contexts over one prompt of real text, then STEPS decode steps
// teacher-forced with the exact context's greedy tokens; per context, how often its argmax
// is the exact one's and its mean KL(exact || it). C API only.
//   kv_type_noise MODEL.gguf TEXT_FILE PROMPT_TOKENS START_TOKEN STEPS METHOD[,METHOD...]
// (keep 0.2 for the pruning methods, 2 threads). One line per method.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "whittle.h"

namespace {

struct Variant {
  wt_matmul_mode mode;
  wt_kv_type kv;
  const char* name;
};
// The first is the reference.
constexpr Variant kVariants[] = {{WT_MATMUL_F32, WT_KV_F32, "exact"},
                                 {WT_MATMUL_FAST, WT_KV_F32, "fast f32 KV"},
                                 {WT_MATMUL_FAST, WT_KV_F16, "fast f16 KV"},
                                 {WT_MATMUL_F32, WT_KV_F16, "exact f16 KV"}};
constexpr int kN = sizeof(kVariants) / sizeof(kVariants[0]);

// Log-softmax normalizer and argmax of one row of logits.
void lse_argmax(const float* l, int32_t n, double* lse, int* best) {
  *best = 0;
  for (int32_t j = 1; j < n; ++j)
    if (l[j] > l[*best]) *best = j;
  double s = 0;
  for (int32_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(l[j]) - l[*best]);
  *lse = l[*best] + std::log(s);
}

int fail(const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, wt_last_error());
  return 1;
}

// One method: the line described at the top, or 1 with the library's message.
int run_method(const wt_model* m, int32_t n_vocab, const std::vector<wt_token>& prompt, int steps,
               const std::string& name) {
  wt_prune_method method = WT_PRUNE_FULL;
  if (wt_prune_method_from_name(name.c_str(), &method) != WT_OK) return fail(name.c_str());
  wt_context* ctx[kN] = {};
  int status = 0;
  for (int i = 0; i < kN && !status; ++i) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = static_cast<int32_t>(prompt.size()) + steps + 64;  // the oracle's answer too
    cp.n_threads = 2;
    cp.prune.method = method;
    cp.prune.keep = 0.2f;
    cp.kv_type = kVariants[i].kv;
    cp.matmul_mode = kVariants[i].mode;
    if (wt_context_create(m, &cp, &ctx[i]) != WT_OK || wt_context_prefill(ctx[i], prompt.data(), prompt.size()) != WT_OK)
      status = fail(name.c_str());
  }
  int agree[kN] = {};
  double kl[kN] = {};
  for (int s = 0; s < steps && !status; ++s) {
    const float* l[kN];
    double lse[kN];
    int best[kN];
    for (int i = 0; i < kN; ++i) {
      if (wt_context_logits(ctx[i], -1, &l[i]) != WT_OK) {
        status = fail("logits");
        break;
      }
      lse_argmax(l[i], n_vocab, &lse[i], &best[i]);
      agree[i] += best[i] == best[0];
      for (int32_t j = 0; j < n_vocab; ++j) {
        const double lp = l[0][j] - lse[0], lq = l[i][j] - lse[i];
        kl[i] += std::exp(lp) * (lp - lq);
      }
    }
    for (int i = 0; i < kN && !status; ++i)
      if (wt_context_decode(ctx[i], best[0]) != WT_OK) status = fail("decode");
  }
  if (!status) {
    std::printf("%s, %zu prompt tokens, %d steps: top-1 agreement with the exact model (mean KL)", name.c_str(),
                prompt.size(), steps);
    for (int i = 1; i < kN; ++i) std::printf("%s %s %d (%.2e)", i > 1 ? "," : "", kVariants[i].name, agree[i], kl[i] / steps);
    std::printf("\n");
    std::fflush(stdout);
  }
  for (wt_context* c : ctx) wt_context_free(c);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: kv_type_noise MODEL.gguf TEXT_FILE PROMPT_TOKENS START_TOKEN STEPS METHOD[,METHOD...]\n");
    return 2;
  }
  const long n_prompt = std::atol(argv[3]), start = std::atol(argv[4]), steps = std::atol(argv[5]);
  if (n_prompt < 1 || start < 0 || steps < 1 || steps > 4096) {
    std::fprintf(stderr, "PROMPT_TOKENS and STEPS must be positive (STEPS at most 4096), START_TOKEN not negative\n");
    return 2;
  }
  wt_model* m = nullptr;
  if (wt_model_load(argv[1], nullptr, &m) != WT_OK) return fail(argv[1]);
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<wt_token> tokens(text.size() + 16);
  size_t n = 0;
  wt_tokenize_params tp = wt_tokenize_default_params();
  if (!in || wt_tokenize(m, text.data(), text.size(), &tp, tokens.data(), tokens.size(), &n) != WT_OK) {
    std::fprintf(stderr, "cannot read or tokenize %s\n", argv[2]);
    wt_model_free(m);
    return 1;
  }
  if (static_cast<size_t>(n_prompt) > n || static_cast<size_t>(start) > n - static_cast<size_t>(n_prompt)) {
    std::fprintf(stderr, "%s has %zu tokens: fewer than START_TOKEN + PROMPT_TOKENS\n", argv[2], n);
    wt_model_free(m);
    return 1;
  }
  const std::vector<wt_token> prompt(tokens.begin() + start, tokens.begin() + start + n_prompt);
  wt_model_info info;
  int status = wt_model_get_info(m, &info) == WT_OK ? 0 : fail("model info");
  const std::string methods = argv[6];
  for (size_t p = 0; p <= methods.size() && !status;) {
    size_t q = methods.find(',', p);
    if (q == std::string::npos) q = methods.size();
    status = run_method(m, info.n_vocab, prompt, static_cast<int>(steps), methods.substr(p, q - p));
    p = q + 1;
  }
  wt_model_free(m);
  return status;
}
