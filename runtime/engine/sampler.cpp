#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace wt {

int32_t argmax_logits(const float* logits, int32_t n) {
  // The largest value first, in 16 independent lanes (a > b ? a : b is one max instruction
  // per vector; the scalar loop's chain of compares and dependent loads took 0.7 ms over
  // Qwen2.5's 151,936 logits, a tenth of its 0.5B's decode step), then its first index.
  // Lanes ignore NaN as the scalar loop does: a NaN never compares greater.
  if (std::isnan(logits[0])) return 0;
  constexpr int kLanes = 16;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, logits[0]);
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] = logits[i + j] > lane[j] ? logits[i + j] : lane[j];
  float best = logits[0];
  for (int j = 0; j < kLanes; ++j) best = lane[j] > best ? lane[j] : best;
  for (; i < n; ++i) best = logits[i] > best ? logits[i] : best;
  // -0 and +0 compare equal, as they do in the scalar loop, which keeps the first of them.
  for (int32_t k = 0; k < n; ++k)
    if (logits[k] == best) return k;
  return 0;
}

Status Sampler::create(int32_t n_vocab, const SamplerOptions& o, Sampler* out) {
  if (!std::isfinite(o.temperature)) return error(WT_ERR_INVALID_ARGUMENT, "temperature must be finite");
  if (o.top_k < 0) return error(WT_ERR_INVALID_ARGUMENT, "top_k must be >= 0, got " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    return error(WT_ERR_INVALID_ARGUMENT, "top_p must be in (0, 1], got " + std::to_string(o.top_p));
  if (!(o.min_p >= 0.0f && o.min_p <= 1.0f))
    return error(WT_ERR_INVALID_ARGUMENT, "min_p must be in [0, 1], got " + std::to_string(o.min_p));
  if (n_vocab <= 0) return error(WT_ERR_INVALID_ARGUMENT, "n_vocab must be > 0");
  out->options_ = o;
  out->n_vocab_ = n_vocab;
  // splitmix64-seeded xorshift: a seed of 0 still gives a non-zero state.
  uint64_t z = o.seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  out->state_ = (z ^ (z >> 31)) | 1;
  out->candidates_.resize(static_cast<size_t>(n_vocab));
  out->weights_.resize(static_cast<size_t>(n_vocab));
  return Status::ok();
}

double Sampler::next_uniform() {
  state_ ^= state_ << 13;
  state_ ^= state_ >> 7;
  state_ ^= state_ << 17;
  return static_cast<double>(state_ >> 11) * (1.0 / 9007199254740992.0);
}

const Sampler::Candidate* Sampler::distribution(const float* logits, const float** weights, size_t* n_kept) {
  Candidate* c = candidates_.data();
  float* w = weights_.data();
  size_t n = candidates_.size();
  // NaN ranks last (as -inf), so the order below stays a strict weak order.
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i) c[i] = {std::isnan(logits[i]) ? kNegInf : logits[i], static_cast<int32_t>(i)};
  auto before = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  // top-k: the k best in front, sorted (a heap of k rejects most candidates in one compare).
  size_t sorted = 0;
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) {
    n = static_cast<size_t>(options_.top_k);
    std::partial_sort(c, c + n, c + candidates_.size(), before);
    sorted = n;
  }
  float max_logit = c[0].logit;
  for (size_t i = 1; i < n; ++i) max_logit = std::max(max_logit, c[i].logit);
  const float inv_t = 1.0f / options_.temperature;
  // An infinite largest logit: the candidates equal to it share all the weight (inf - inf
  // would be NaN); every logit -inf (or NaN): all weigh the same.
  const bool finite = std::isfinite(max_logit);
  auto weight = [&](float logit) {
    return finite ? std::exp((logit - max_logit) * inv_t) : (logit == max_logit ? 1.0f : 0.0f);
  };
  *weights = w;
  const float min_p = options_.min_p;
  if (options_.top_p >= 1.0f) {
    // min_p: the candidates of weight >= min_p (the largest weighs 1), in their order.
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      const float wi = weight(c[i].logit);
      if (wi < min_p) continue;
      c[kept] = c[i];
      w[kept++] = wi;
    }
    *n_kept = kept;
    return c;
  }
  // top-p: the shortest prefix in logit order whose weight reaches top_p of the whole,
  // sorted a block at a time (64, then 4x more each round) until it does, so a peaked
  // distribution sorts a few dozen candidates instead of all of them (a full sort of
  // Qwen2.5's 151,936 took 14 ms a token). The prefix's weights are made as it is walked.
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += weight(c[i].logit);
  const double target = static_cast<double>(options_.top_p) * sum;
  double cum = 0.0;
  size_t i = 0, block = std::max(sorted, std::min<size_t>(n, 64));
  for (;;) {
    if (block > sorted) std::partial_sort(c + sorted, c + block, c + n, before);
    sorted = block;
    for (; i < sorted; ++i) {
      w[i] = weight(c[i].logit);
      if (w[i] < min_p) {  // weights fall along the prefix: min_p cuts it first
        *n_kept = i;
        return c;
      }
      cum += w[i];
      if (cum >= target) {
        *n_kept = i + 1;
        return c;
      }
    }
    if (sorted == n) break;  // rounding left the sum short of the target: keep them all
    block = std::min(n, sorted * 4);
  }
  *n_kept = n;
  return c;
}

int32_t Sampler::sample(const float* logits) {
  if (options_.temperature <= 0.0f) return argmax_logits(logits, n_vocab_);
  size_t n = 0;
  const float* w = nullptr;
  const Candidate* c = distribution(logits, &w, &n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += w[i];
  const double r = next_uniform() * sum;
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += w[i];
    if (r < acc) return c[i].id;
  }
  return c[n - 1].id;
}

}  // namespace wt
