#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "runtime/prune/policy.h"  // kMaxContextTokens: the most tokens the penalties remember

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
  if (!(std::isfinite(o.repeat_penalty) && o.repeat_penalty > 0.0f))
    return error(WT_ERR_INVALID_ARGUMENT, "repeat_penalty must be finite and > 0 (1 is off), got " +
                                              std::to_string(o.repeat_penalty));
  if (!std::isfinite(o.frequency_penalty) || !std::isfinite(o.presence_penalty))
    return error(WT_ERR_INVALID_ARGUMENT, "frequency_penalty and presence_penalty must be finite");
  if (o.penalty_last_n < 0 || o.penalty_last_n > kMaxContextTokens)
    return error(WT_ERR_INVALID_ARGUMENT, "penalty_last_n must be in [0, " + std::to_string(kMaxContextTokens) +
                                              "], got " + std::to_string(o.penalty_last_n));
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
  out->penalize_ = o.penalty_last_n > 0 &&
                   (o.repeat_penalty != 1.0f || o.frequency_penalty != 0.0f || o.presence_penalty != 0.0f);
  out->history_.assign(out->penalize_ ? static_cast<size_t>(o.penalty_last_n) : 0, 0);
  out->counts_.assign(out->penalize_ ? static_cast<size_t>(n_vocab) : 0, 0);
  out->slot_.assign(out->penalize_ ? static_cast<size_t>(n_vocab) : 0, -1);
  out->seen_.clear();
  out->seen_.reserve(out->penalize_ ? static_cast<size_t>(std::min(o.penalty_last_n, n_vocab)) : 0);
  out->history_head_ = out->history_size_ = 0;
  // A positive temperature whose reciprocal overflows (a subnormal) samples as greedy: its
  // weights would be exp(0 * inf), NaN, where they tend to the argmax's.
  out->greedy_ = !(o.temperature > 0.0f && std::isfinite(1.0f / o.temperature));
  return Status::ok();
}

void Sampler::remember(int32_t token) {
  if (!penalize_) return;
  const size_t cap = history_.size();
  if (history_size_ == cap) {
    const int32_t old = history_[history_head_];  // the oldest leaves
    if (--counts_[static_cast<size_t>(old)] == 0) {  // and with it, maybe, a seen token
      const int32_t at = slot_[static_cast<size_t>(old)], last = seen_.back();
      seen_[static_cast<size_t>(at)] = last;
      slot_[static_cast<size_t>(last)] = at;
      seen_.pop_back();
      slot_[static_cast<size_t>(old)] = -1;
    }
  } else {
    ++history_size_;
  }
  history_[history_head_] = token;
  if (++counts_[static_cast<size_t>(token)] == 1) {
    slot_[static_cast<size_t>(token)] = static_cast<int32_t>(seen_.size());
    seen_.push_back(token);  // within the capacity reserved at creation
  }
  history_head_ = (history_head_ + 1) % cap;
}

void Sampler::accept(const int32_t* tokens, size_t n) {
  for (size_t i = 0; i < n; ++i) remember(tokens[i]);
}

void Sampler::reset_history() {
  for (const int32_t t : seen_) {
    counts_[static_cast<size_t>(t)] = 0;
    slot_[static_cast<size_t>(t)] = -1;
  }
  seen_.clear();
  history_head_ = history_size_ = 0;
}

float Sampler::penalized(float l, int32_t c) const {
  l = l <= 0.0f ? l * options_.repeat_penalty : l / options_.repeat_penalty;
  l -= static_cast<float>(c) * options_.frequency_penalty + options_.presence_penalty;
  // Extreme penalties overflow (a logit over a subnormal penalty is inf, inf - inf NaN): a
  // NaN ranks last, as a NaN logit does, so the order stays strict and the best stays kept.
  return std::isnan(l) ? -std::numeric_limits<float>::infinity() : l;
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
  // Candidate i is token i until the cuts below reorder them.
  if (penalize_)
    for (const int32_t t : seen_) c[t].logit = penalized(c[t].logit, counts_[static_cast<size_t>(t)]);
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
  const int32_t token = draw(logits);
  remember(token);
  return token;
}

int32_t Sampler::draw(const float* logits) {
  if (greedy_) {
    if (!penalize_ || history_size_ == 0) return argmax_logits(logits, n_vocab_);
    // The row with the seen tokens' logits penalized, in the weights' scratch.
    float* row = weights_.data();
    std::copy(logits, logits + n_vocab_, row);
    for (const int32_t t : seen_) row[t] = penalized(row[t], counts_[static_cast<size_t>(t)]);
    return argmax_logits(row, n_vocab_);
  }
  size_t n = 0;
  const float* w = nullptr;
  const Candidate* c = distribution(logits, &w, &n);
  if (n == 0) return argmax_logits(logits, n_vocab_);  // not reached: the best weighs 1
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
