// How far the fast mode (int8 activations) with an f32 and with an f16 KV cache each stand
// from the exact model (f32 activations, f32 KV), and f16 KV with f32 activations too: the
// measurement behind f16 being the default KV type (docs/results/kv-type.md). For every
// method named, four contexts over one prompt of real text, then STEPS decode steps
// teacher-forced with the exact context's greedy tokens; per context, how often its argmax
// is the exact one's and its mean KL(exact || it). C API only.
//   kv_type_noise MODEL.gguf TEXT_FILE PROMPT_TOKENS START_TOKEN STEPS METHOD[,METHOD...]
// (keep 0.2 for the pruning methods, 2 threads). One line per method.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/kv_agreement.h"
#include "whittle.h"

namespace {

// The first is the reference.
const std::vector<wt::test::KvVariant> kVariants = {
    {WT_MATMUL_F32, WT_KV_F32}, {WT_MATMUL_FAST, WT_KV_F32}, {WT_MATMUL_FAST, WT_KV_F16}, {WT_MATMUL_F32, WT_KV_F16}};
const char* const kNames[] = {"exact", "fast f32 KV", "fast f16 KV", "exact f16 KV"};

int fail(const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, wt_last_error());
  return 1;
}

// One method: the line described at the top, or 1 with the library's message.
int run_method(const wt_model* m, const std::vector<wt_token>& prompt, int steps, const std::string& name) {
  wt_prune_method method = WT_PRUNE_FULL;
  if (wt_prune_method_from_name(name.c_str(), &method) != WT_OK) return fail(name.c_str());
  std::vector<wt::test::KvAgreement> a;
  std::string err;
  if (!wt::test::kv_agreement(m, method, prompt, kVariants, steps, &a, &err)) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), err.c_str());
    return 1;
  }
  std::printf("%s, %zu prompt tokens, %d steps: top-1 agreement with the exact model (mean KL)", name.c_str(),
              prompt.size(), steps);
  for (size_t i = 0; i < a.size(); ++i)
    std::printf("%s %s %d (%.2e)", i > 0 ? "," : "", kNames[i + 1], a[i].agree, a[i].kl);
  std::printf("\n");
  std::fflush(stdout);
  return 0;
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
  int status = 0;
  const std::string methods = argv[6];
  for (size_t p = 0; p <= methods.size() && !status;) {
    size_t q = methods.find(',', p);
    if (q == std::string::npos) q = methods.size();
    status = run_method(m, prompt, static_cast<int>(steps), methods.substr(p, q - p));
    p = q + 1;
  }
  wt_model_free(m);
  return status;
}
