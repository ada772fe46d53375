#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace wt {

Status Sampler::create(int32_t n_vocab, const SamplerOptions& o, Sampler* out) {
  if (!std::isfinite(o.temperature)) return error(WT_ERR_INVALID_ARGUMENT, "temperature must be finite");
  if (o.top_k < 0) return error(WT_ERR_INVALID_ARGUMENT, "top_k must be >= 0, got " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    return error(WT_ERR_INVALID_ARGUMENT, "top_p must be in (0, 1], got " + std::to_string(o.top_p));
  if (n_vocab <= 0) return error(WT_ERR_INVALID_ARGUMENT, "n_vocab must be > 0");
  out->options_ = o;
  out->n_vocab_ = n_vocab;
  // splitmix64-seeded xorshift: a seed of 0 still gives a non-zero state.
  uint64_t z = o.seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  out->state_ = (z ^ (z >> 31)) | 1;
  out->candidates_.resize(static_cast<size_t>(n_vocab));
  out->probs_.resize(static_cast<size_t>(n_vocab));
  return Status::ok();
}

double Sampler::next_uniform() {
  state_ ^= state_ << 13;
  state_ ^= state_ >> 7;
  state_ ^= state_ << 17;
  return static_cast<double>(state_ >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::sample(const float* logits) {
  if (options_.temperature <= 0.0f) {
    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab_; ++i) best = logits[i] > logits[best] ? i : best;
    return best;
  }
  for (int32_t i = 0; i < n_vocab_; ++i) candidates_[i] = {logits[i], i};
  const bool truncate = options_.top_k > 0 || options_.top_p < 1.0f;
  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  size_t n = candidates_.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) n = static_cast<size_t>(options_.top_k);
  // Only the kept prefix needs to be sorted; plain temperature sampling needs no order.
  float max_logit = logits[0];
  if (truncate) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(n), candidates_.end(),
                      by_logit);
    max_logit = candidates_[0].logit;
  } else {
    for (int32_t i = 1; i < n_vocab_; ++i) max_logit = std::max(max_logit, logits[i]);
  }

  const float inv_t = 1.0f / options_.temperature;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    probs_[i] = std::exp((candidates_[i].logit - max_logit) * inv_t);
    sum += probs_[i];
  }
  if (options_.top_p < 1.0f) {
    double cum = 0.0;
    for (size_t i = 0; i < n; ++i) {
      cum += probs_[i] / sum;
      if (cum >= options_.top_p) {
        n = i + 1;
        break;
      }
    }
    sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += probs_[i];
  }
  const double r = next_uniform() * sum;
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += probs_[i];
    if (r < acc) return candidates_[i].id;
  }
  return candidates_[n - 1].id;
}

}  // namespace wt
