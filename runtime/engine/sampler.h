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
  float min_p = 0.0f;        // 0: off
};

// The first index of the largest of n > 0 logits, as a loop keeping i where logits[i] >
// logits[best] finds it (a NaN is never the largest; logits[0] NaN gives 0).
int32_t argmax_logits(const float* logits, int32_t n);

class Sampler {
 public:
  struct Candidate {
    float logit;
    int32_t id;
  };

  static Status create(int32_t n_vocab, const SamplerOptions& options, Sampler* out);
  // logits: n_vocab() floats.
  int32_t sample(const float* logits);
  // The distribution sample() draws from at a temperature above 0: the kept candidates
  // (top-k, then the top-p prefix of those, by logit with ties to the lower id, then those
  // of weight >= min_p; sorted in that order where top-k or top-p cut them, else in id
  // order) and, in *weights, their unnormalized weights exp((logit - max) / temperature),
  // the largest 1. Views valid until the next call.
  const Candidate* distribution(const float* logits, const float** weights, size_t* n_kept);
  int32_t n_vocab() const { return n_vocab_; }

 private:
  double next_uniform();  // [0, 1)

  SamplerOptions options_;
  int32_t n_vocab_ = 0;
  uint64_t state_ = 0;
  std::vector<Candidate> candidates_;
  std::vector<float> weights_;  // [n_vocab]: weight of candidate i
};

}  // namespace wt
