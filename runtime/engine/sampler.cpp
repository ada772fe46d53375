#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/cpu/sampling_weights.h"
#include "runtime/prune/policy.h"  // kMaxContextTokens: the most tokens the penalties remember

namespace wt {
namespace {

constexpr size_t kWeighBlock = 1024;  // tokens per block sum: a draw walks one block's weights
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The order of candidates: larger logit first, ties to the lower id.
bool before(const Sampler::Candidate& a, const Sampler::Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The largest of n logits, NaN ignored (-inf when every one is NaN or -inf), in 16 lanes.
float max_logit(const float* row, size_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, kNegInf);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] = row[i + j] > lane[j] ? row[i + j] : lane[j];
  float best = kNegInf;
  for (int j = 0; j < kLanes; ++j) best = lane[j] > best ? lane[j] : best;
  for (; i < n; ++i) best = row[i] > best ? row[i] : best;
  return best;
}

// Token i as a candidate: a NaN logit ranks last (as -inf), so `before` stays a strict order.
Sampler::Candidate candidate_of(const float* row, size_t i) {
  return {std::isnan(row[i]) ? kNegInf : row[i], static_cast<int32_t>(i)};
}

}  // namespace

int32_t argmax_logits(const float* logits, int32_t n) {
  // The largest value first, in 16 independent lanes (max_logit: the scalar loop's chain of
  // compares and dependent loads took 0.7 ms over Qwen2.5's 151,936 logits, a tenth of its
  // 0.5B's decode step), then its first index. NaN never compares greater, as in the
  // scalar loop; with logits[0] not NaN the largest is at least logits[0].
  if (std::isnan(logits[0])) return 0;
  const float best = max_logit(logits, static_cast<size_t>(n));
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
  out->kept_weights_.resize(static_cast<size_t>(n_vocab));
  out->block_sums_.resize((static_cast<size_t>(n_vocab) + kWeighBlock - 1) / kWeighBlock);
  out->penalize_ = o.penalty_last_n > 0 &&
                   (o.repeat_penalty != 1.0f || o.frequency_penalty != 0.0f || o.presence_penalty != 0.0f);
  out->row_.assign(out->penalize_ ? static_cast<size_t>(n_vocab) : 0, 0.0f);
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

const float* Sampler::penalized_row(const float* logits) {
  if (seen_.empty()) return logits;  // no penalty, or nothing remembered yet
  float* row = row_.data();
  std::copy(logits, logits + n_vocab_, row);
  for (const int32_t t : seen_) row[t] = penalized(row[t], counts_[static_cast<size_t>(t)]);
  return row;
}

bool Sampler::weighs_all(const float* row, double* total) {
  if (options_.top_k > 0 && options_.top_k < n_vocab_) return false;  // a top-k cut sorts
  const float m = max_logit(row, static_cast<size_t>(n_vocab_));
  if (!std::isfinite(m)) return false;  // an infinite largest logit, or none: the general path
  *total = weigh(row, m);
  return true;
}

double Sampler::weigh(const float* row, float largest) {
  const size_t n = static_cast<size_t>(n_vocab_);
  float* w = weights_.data();
  // min_p's cut comes after top-p's, whose target is a share of every token's weight.
  const float min_p = options_.top_p < 1.0f ? 0.0f : options_.min_p;
  cpu::sampling_weights(row, static_cast<int64_t>(n), largest, 1.0f / options_.temperature, min_p, w);
  // Block sums in double (a top-p cut compares sums to top_p of the total), four chains
  // each: one chain's add latency, not the adds, would bound the pass.
  double total = 0.0;
  for (size_t b = 0; b < block_sums_.size(); ++b) {
    const size_t lo = b * kWeighBlock, hi = std::min(n, lo + kWeighBlock);
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t j = lo;
    for (; j + 4 <= hi; j += 4) {
      s0 += w[j];
      s1 += w[j + 1];
      s2 += w[j + 2];
      s3 += w[j + 3];
    }
    for (; j < hi; ++j) s0 += w[j];
    block_sums_[b] = (s0 + s1) + (s2 + s3);
    total += block_sums_[b];
  }
  return total;
}

int32_t Sampler::draw_weighted(double total) {
  const float* w = weights_.data();
  const size_t n = static_cast<size_t>(n_vocab_);
  const double r = next_uniform() * total;
  double acc = 0.0;
  for (size_t b = 0; b < block_sums_.size(); ++b) {
    if (acc + block_sums_[b] <= r) {
      acc += block_sums_[b];
      continue;
    }
    // The token is in this block (its sum is positive); a walk whose rounding runs past
    // the block's end takes its last token of positive weight.
    const size_t lo = b * kWeighBlock, hi = std::min(n, lo + kWeighBlock);
    size_t last = lo;
    for (size_t j = lo; j < hi; ++j) {
      if (w[j] <= 0.0f) continue;
      acc += w[j];
      last = j;
      if (r < acc) break;
    }
    return static_cast<int32_t>(last);
  }
  // r rounded up to the total: the last token of positive weight (the largest weighs 1).
  for (size_t j = n; j-- > 0;)
    if (w[j] > 0.0f) return static_cast<int32_t>(j);
  return 0;
}

size_t Sampler::top_p_cut(const float* row, double total) {
  const size_t n = static_cast<size_t>(n_vocab_);
  const float* w = weights_.data();
  Candidate* c = candidates_.data();
  const double target = static_cast<double>(options_.top_p) * total;
  // The prefix lies within the tokens of weight >= tau for any tau whose tokens weigh
  // target together (weights fall with the logit): collect those of a first guess,
  // lowering it until they do. A peaked distribution takes one pass and a few dozen
  // candidates (a sort of all 151,936 of Qwen2.5 took 14 ms). min_p bounds tau below:
  // nothing under it is kept.
  const float min_p = options_.min_p;
  float tau = std::max(min_p, 0x1p-10f);
  size_t k = 0;
  double mass = 0.0;
  for (;;) {
    k = 0;
    mass = 0.0;
    for (size_t i = 0; i < n; ++i) {
      if (w[i] < tau) continue;
      c[k++] = candidate_of(row, i);
      mass += w[i];
    }
    if (mass >= target || tau <= min_p) break;
    tau = tau > 0x1p-100f ? std::max(min_p, tau * 0x1p-12f) : min_p;  // 0 at last: every token
  }
  size_t kept = k;  // min_p cut first, or rounding left the sum short of the target
  if (mass >= target) {
    // The shortest prefix in candidate order that weighs target: halve the range by
    // nth_element (the first half's weight says which half the cut is in), then sort
    // and walk the last few.
    size_t lo = 0, hi = k;
    double acc = 0.0;
    while (hi - lo > 32) {
      const size_t mid = lo + (hi - lo) / 2;
      std::nth_element(c + lo, c + mid, c + hi, before);
      double s = 0.0;
      for (size_t i = lo; i < mid; ++i) s += w[c[i].id];
      if (acc + s >= target) {
        hi = mid;
      } else {
        acc += s;
        lo = mid;
      }
    }
    std::sort(c + lo, c + hi, before);
    kept = hi;
    for (size_t i = lo; i < hi; ++i) {
      acc += w[c[i].id];
      if (acc >= target) {
        kept = i + 1;
        break;
      }
    }
  }
  for (size_t i = 0; i < kept; ++i) kept_weights_[i] = w[c[i].id];
  return kept;
}

const Sampler::Candidate* Sampler::distribution(const float* logits, const float** weights, size_t* n_kept) {
  return cut(penalized_row(logits), weights, n_kept);
}

const Sampler::Candidate* Sampler::cut(const float* row, const float** weights, size_t* n_kept) {
  double total = 0.0;
  if (weighs_all(row, &total)) {
    Candidate* c = candidates_.data();
    *weights = kept_weights_.data();
    if (options_.top_p < 1.0f) {
      *n_kept = top_p_cut(row, total);
      return c;
    }
    // min_p alone (weigh zeroed what it cuts): the tokens it keeps, in id order.
    const float* w = weights_.data();
    const float min_p = options_.min_p;
    size_t kept = 0;
    for (size_t i = 0; i < static_cast<size_t>(n_vocab_); ++i) {
      if (w[i] < min_p) continue;
      c[kept] = candidate_of(row, i);
      kept_weights_[kept++] = w[i];
    }
    *n_kept = kept;
    return c;
  }
  return sorted_cut(row, weights, n_kept);
}

const Sampler::Candidate* Sampler::sorted_cut(const float* row, const float** weights, size_t* n_kept) {
  Candidate* c = candidates_.data();
  float* w = weights_.data();
  const size_t n_vocab = candidates_.size();
  size_t n = n_vocab, sorted = 0;
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) {
    // top-k: a heap of the k best so far, its worst in front, read straight from the row:
    // most tokens are rejected by one compare, and the others never become candidates.
    n = static_cast<size_t>(options_.top_k);
    for (size_t i = 0; i < n; ++i) c[i] = candidate_of(row, i);
    std::make_heap(c, c + n, before);
    for (size_t i = n; i < n_vocab;) {
      // A block of 64 whose largest does not beat the heap's worst is skipped whole (most
      // of them, once the heap holds good candidates): a vectorized max, not 64 branches.
      const size_t end = std::min(n_vocab, i + 64);
      if (end - i == 64 && !(max_logit(row + i, 64) > c[0].logit)) {
        i = end;
        continue;
      }
      for (; i < end; ++i) {
        // A later token ties with a lower id, so it must be strictly larger; NaN never is.
        if (!(row[i] > c[0].logit)) continue;
        std::pop_heap(c, c + n, before);
        c[n - 1] = candidate_of(row, i);
        std::push_heap(c, c + n, before);
      }
    }
    std::sort_heap(c, c + n, before);
    sorted = n;
  } else {
    for (size_t i = 0; i < n; ++i) c[i] = candidate_of(row, i);
  }
  float best = c[0].logit;
  for (size_t i = 1; i < n; ++i) best = std::max(best, c[i].logit);
  const float inv_t = 1.0f / options_.temperature;
  // An infinite largest logit: the candidates equal to it share all the weight (inf - inf
  // would be NaN); every logit -inf (or NaN): all weigh the same.
  const bool finite = std::isfinite(best);
  auto weight = [&](float logit) {
    return finite ? std::exp((logit - best) * inv_t) : (logit == best ? 1.0f : 0.0f);
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
  // top-p: the shortest prefix in logit order whose weight reaches top_p of the whole. The
  // k of a top-k cut are sorted already; otherwise this is a row without a finite largest
  // logit (no other row takes this path), sorted whole.
  if (sorted < n) std::sort(c, c + n, before);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += weight(c[i].logit);
  const double target = static_cast<double>(options_.top_p) * sum;
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
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
  *n_kept = n;  // rounding left the sum short of the target: keep them all
  return c;
}

int32_t Sampler::sample(const float* logits) {
  const int32_t token = draw(logits);
  remember(token);
  return token;
}

int32_t Sampler::draw(const float* logits) {
  const float* row = penalized_row(logits);
  if (greedy_) return argmax_logits(row, n_vocab_);
  double total = 0.0;
  // No cut but min_p's: drawn from the weights in id order, with no candidate list.
  if (options_.top_p >= 1.0f && weighs_all(row, &total)) return draw_weighted(total);
  size_t n = 0;
  const float* w = nullptr;
  const Candidate* c = cut(row, &w, &n);
  if (n == 0) return argmax_logits(row, n_vocab_);  // not reached: the best weighs 1
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
