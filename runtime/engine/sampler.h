// Picks the next token from a logits row: greedy, or temperature + top-k + top-p with a
// seeded generator. Scratch for the candidate list is allocated once, at creation.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace wt {

struct SamplerOptions {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  uint64_t seed = 0;
};

class Sampler {
 public:
  static Status create(int32_t n_vocab, const SamplerOptions& options, Sampler* out);
  // logits: n_vocab() floats.
  int32_t sample(const float* logits);
  int32_t n_vocab() const { return n_vocab_; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };
  double next_uniform();  // [0, 1)

  SamplerOptions options_;
  int32_t n_vocab_ = 0;
  uint64_t state_ = 0;
  std::vector<Candidate> candidates_;
  std::vector<float> probs_;
};

}  // namespace wt
