// Picks the next token from a logits row: greedy, or temperature + top-k + top-p + min-p
// with a seeded generator, after the repetition penalties over the tokens it last saw.
// Scratch (the candidate list, the penalties' history and counts) is allocated once, at
// creation.
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
  // Repetition penalties over the last penalty_last_n tokens of the history (the tokens
  // sample() returned and those accept() was given), as llama.cpp applies them: a token seen
  // c > 0 times has its logit divided by repeat_penalty where positive (multiplied where not),
  // then lowered by c * frequency_penalty + presence_penalty.
  float repeat_penalty = 1.0f;     // 1: off
  float frequency_penalty = 0.0f;  // 0: off
  float presence_penalty = 0.0f;   // 0: off
  int32_t penalty_last_n = 64;     // 0: no history, no penalty
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
  // logits: n_vocab() floats. The token returned joins the history.
  int32_t sample(const float* logits);
  // Tokens that join the history without being sampled (a prompt, a user's turn); ids are
  // in [0, n_vocab()) (the caller checks). Only the last penalty_last_n are kept.
  void accept(const int32_t* tokens, size_t n);
  // Forgets the history (the generator goes on).
  void reset_history();
  // Whether any penalty is on (so a history is kept).
  bool penalizes() const { return penalize_; }
  // The distribution sample() draws from at a temperature above 0 whose reciprocal is
  // finite (others sample greedily), with the history's penalties applied as sample()
  // would now: the kept candidates (top-k, then the top-p prefix of those, by logit with
  // ties to the lower id, then those of weight >= min_p; sorted in that order where top-k
  // cut them, else in no particular order) and, in *weights, their unnormalized weights
  // exp((logit - max) / temperature), the largest 1 (without top-k, exp is
  // cpu::fast_exp's, within 2e-7 of it, and a weight below exp(-87) is 0). Views valid
  // until the next call.
  const Candidate* distribution(const float* logits, const float** weights, size_t* n_kept);
  int32_t n_vocab() const { return n_vocab_; }

 private:
  double next_uniform();  // [0, 1)
  int32_t draw(const float* logits);  // sample() before the token joins the history
  // The logits with the history's penalties applied (a copy in row_), or logits itself.
  const float* penalized_row(const float* logits);
  // Without top-k the distribution is made over the vocabulary in id order, vectorized:
  // weigh() sets weights_[i] for every token (0 for NaN, below exp(-87), or under min_p
  // where no top-p cut comes first) and block_sums_, and returns their sum; top_p_cut()
  // then finds the top-p prefix (in candidates_, with kept_weights_).
  bool weighs_all(const float* row, double* total);  // false: top-k, or no finite largest
  double weigh(const float* row, float largest);
  size_t top_p_cut(const float* row, double total);
  // Samples from weights_ by block_sums_ (no cut but min_p's).
  int32_t draw_weighted(double total);
  // distribution() of a penalized row; sorted_cut is the general path: candidates sorted
  // as far as top-k and top-p need.
  const Candidate* cut(const float* row, const float** weights, size_t* n_kept);
  const Candidate* sorted_cut(const float* row, const float** weights, size_t* n_kept);
  void remember(int32_t token);
  // The penalized value of logit l of a token seen c > 0 times.
  float penalized(float l, int32_t c) const;

  SamplerOptions options_;
  int32_t n_vocab_ = 0;
  uint64_t state_ = 0;
  std::vector<Candidate> candidates_;
  std::vector<float> weights_;  // [n_vocab]: weight of candidate i (of token i without top-k)
  std::vector<float> kept_weights_;  // [n_vocab]: without top-k, the kept candidates' weights
  std::vector<double> block_sums_;   // weights_ summed per kWeighBlock tokens
  std::vector<float> row_;           // [n_vocab] when penalizing: the penalized logits
  bool penalize_ = false;
  std::vector<int32_t> history_;  // ring of the last penalty_last_n tokens
  size_t history_head_ = 0, history_size_ = 0;
  std::vector<int32_t> counts_;   // [n_vocab]: occurrences in the ring (penalties on)
  // The distinct tokens in the ring, in no order, and each token's index there (-1: none):
  // a step penalizes them without walking the whole window.
  std::vector<int32_t> seen_;
  std::vector<int32_t> slot_;     // [n_vocab]
  bool greedy_ = true;            // temperature <= 0 (or its reciprocal not finite)
};

}  // namespace wt
