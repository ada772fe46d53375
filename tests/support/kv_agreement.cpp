#include "kv_agreement.h"

#include <cmath>

namespace wt::test {

namespace {

// Log-softmax normalizer and argmax of one row of logits.
void lse_argmax(const float* l, int32_t n, double* lse, int* best) {
  *best = 0;
  for (int32_t j = 1; j < n; ++j)
    if (l[j] > l[*best]) *best = j;
  const float mx = l[*best];
  double s = 0;
  for (int32_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(l[j]) - mx);
  *lse = mx + std::log(s);
}

}  // namespace

bool kv_agreement(const wt_model* m, wt_prune_method method, const std::vector<wt_token>& prompt,
                  const std::vector<KvVariant>& variants, int n_steps, std::vector<KvAgreement>* out,
                  std::string* err) {
  std::vector<wt_context*> ctx(variants.size(), nullptr);
  bool ok = variants.size() >= 2;
  if (!ok) *err = "kv_agreement: a reference and at least one other variant";
  auto fail = [&](const char* what) {
    *err = std::string(what) + ": " + wt_last_error();
    ok = false;
  };
  wt_model_info info;
  if (ok && wt_model_get_info(m, &info) != WT_OK) fail("model info");
  for (size_t t = 0; ok && t < ctx.size(); ++t) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = static_cast<int32_t>(prompt.size()) + n_steps + 64;  // the oracle's answer too
    cp.n_threads = 2;
    cp.prune.method = method;
    cp.prune.keep = 0.2f;
    cp.kv_type = variants[t].kv;
    cp.matmul_mode = variants[t].mode;
    if (wt_context_create(m, &cp, &ctx[t]) != WT_OK) fail("context");
    else if (wt_context_prefill(ctx[t], prompt.data(), prompt.size()) != WT_OK) fail("prefill");
  }
  out->assign(ok ? variants.size() - 1 : 0, KvAgreement{});
  for (int i = 0; ok && i < n_steps; ++i) {
    const float* ref = nullptr;
    double lse_ref = 0;
    int best_ref = 0;
    if (wt_context_logits(ctx[0], -1, &ref) != WT_OK) {
      fail("logits");
      break;
    }
    lse_argmax(ref, info.n_vocab, &lse_ref, &best_ref);
    for (size_t t = 1; ok && t < ctx.size(); ++t) {
      const float* l = nullptr;
      if (wt_context_logits(ctx[t], -1, &l) != WT_OK) {
        fail("logits");
        break;
      }
      double lse = 0;
      int best = 0;
      lse_argmax(l, info.n_vocab, &lse, &best);
      double kl = 0;
      for (int32_t j = 0; j < info.n_vocab; ++j) {
        const double lp = ref[j] - lse_ref, lq = l[j] - lse;
        kl += std::exp(lp) * (lp - lq);
      }
      KvAgreement& a = (*out)[t - 1];
      a.kl += kl;
      a.agree += best == best_ref;
      ++a.steps;
    }
    for (size_t t = 0; ok && t < ctx.size(); ++t)
      if (wt_context_decode(ctx[t], best_ref) != WT_OK) fail("decode");
  }
  for (KvAgreement& a : *out)
    if (a.steps > 0) a.kl /= a.steps;
  for (wt_context* c : ctx) wt_context_free(c);
  return ok;
}

}  // namespace wt::test
