// Teacher-forced agreement between contexts that differ in matmul mode and KV type: the
// measurement of tests/unit/test_kv_type.cpp and of tests/tools/kv_type_noise.cpp (C API
// only, so the tool links it without the test binary).
#pragma once

#include <string>
#include <vector>

#include "whittle.h"

namespace wt::test {

// One context's settings.
struct KvVariant {
  wt_matmul_mode mode;
  wt_kv_type kv;
};

struct KvAgreement {
  int agree = 0, steps = 0;
  double kl = 0;  // mean KL(reference || this context) over the steps, nats
};

// Contexts of `method` (keep 0.2, 2 threads) over `prompt`, one per variant, then n_steps
// decode steps teacher-forced with the first context's greedy tokens: for every other
// variant (out[i] for variants[i + 1]) how often its argmax is the first's, and its mean KL
// from it. false with *err (the library's message) when a call fails.
bool kv_agreement(const wt_model* m, wt_prune_method method, const std::vector<wt_token>& prompt,
                  const std::vector<KvVariant>& variants, int n_steps, std::vector<KvAgreement>* out,
                  std::string* err);

}  // namespace wt::test
