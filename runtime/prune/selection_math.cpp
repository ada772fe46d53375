#include "selection_math.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>

namespace wt {

void ranks_descending(const float* s, int32_t n, int32_t* order, int32_t* ranks) {
  std::iota(order, order + n, 0);
  // (score desc, index asc) is a strict total order: sort needs no stable (allocating) merge.
  std::sort(order, order + n, [s](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
  for (int32_t r = 0; r < n; ++r) ranks[order[r]] = r + 1;
}

double rank_variance(const int32_t* ranks, int32_t n_obs, int32_t n, int32_t k) {
  double total = 0;
  int64_t n_union = 0;
  for (int32_t j = 0; j < n; ++j) {
    bool in_union = false;
    double mean = 0;
    for (int32_t o = 0; o < n_obs; ++o) {
      const int32_t r = ranks[static_cast<size_t>(o) * n + j];
      in_union |= r <= k;
      mean += r;
    }
    if (!in_union) continue;
    mean /= n_obs;
    double var = 0;
    for (int32_t o = 0; o < n_obs; ++o) {
      const double dev = ranks[static_cast<size_t>(o) * n + j] - mean;
      var += dev * dev;
    }
    total += var / n_obs;
    ++n_union;
  }
  return n_union ? total / static_cast<double>(n_union) : 0.0;
}

void zscore_max(const float* vecs, int32_t n_vecs, int32_t n, float* out) {
  std::fill(out, out + n, -std::numeric_limits<float>::infinity());
  for (int32_t v = 0; v < n_vecs; ++v) {
    const float* s = vecs + static_cast<size_t>(v) * n;
    double mean = 0;
    for (int32_t j = 0; j < n; ++j) mean += s[j];
    mean /= n;
    double ss = 0;
    for (int32_t j = 0; j < n; ++j) ss += (s[j] - mean) * (s[j] - mean);
    const double sd = n > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
    const double inv = 1.0 / (sd + 1e-8);
    for (int32_t j = 0; j < n; ++j) out[j] = std::max(out[j], static_cast<float>((s[j] - mean) * inv));
  }
}

double overlap_fraction(const int32_t* a, int32_t n_a, const int32_t* b, int32_t n_b) {
  if (n_a == 0) return 0.0;
  int32_t i = 0, j = 0, common = 0;
  while (i < n_a && j < n_b) {
    if (a[i] == b[j]) {
      ++common, ++i, ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return static_cast<double>(common) / n_a;
}

void SkipController::reset(float target, int32_t warmup, float step) {
  target_ = target;
  warmup_ = std::clamp(warmup, 0, kMaxWarmup);
  step_ = step;
  threshold_ = std::numeric_limits<float>::infinity();
  n_warm_ = 0;
  n_decided_ = n_skipped_ = 0;
}

SkipController::State SkipController::state() const {
  State s;
  s.n_decided = n_decided_;
  s.n_skipped = n_skipped_;
  s.target = target_;
  s.step = step_;
  s.threshold = threshold_;
  s.warmup = warmup_;
  s.n_warm = n_warm_;
  std::copy(warm_, warm_ + kMaxWarmup, s.warm);
  return s;
}

bool SkipController::valid(const State& s) {
  // What reset() and decide() can make: a target fraction in [0, 1] (tf_target's range; the
  // warm-up quantile's index is computed from it), a finite step >= 0, counts no token
  // position exceeds (so counting on cannot overflow).
  constexpr int64_t kMaxCount = INT32_MAX;
  return s.warmup >= 0 && s.warmup <= kMaxWarmup && s.n_warm >= 0 && s.n_warm <= s.warmup && s.n_decided >= 0 &&
         s.n_decided <= kMaxCount && s.n_skipped >= 0 && s.n_skipped <= s.n_decided && s.target >= 0.0f &&
         s.target <= 1.0f && std::isfinite(s.step) && s.step >= 0.0f && !std::isnan(s.threshold);
}

bool SkipController::set_state(const State& s) {
  if (!valid(s)) return false;
  n_decided_ = s.n_decided;
  n_skipped_ = s.n_skipped;
  target_ = s.target;
  step_ = s.step;
  threshold_ = s.threshold;
  warmup_ = s.warmup;
  n_warm_ = s.n_warm;
  std::copy(s.warm, s.warm + kMaxWarmup, warm_);
  return true;
}

bool SkipController::decide(float score) {
  if (n_warm_ < warmup_) {
    warm_[n_warm_++] = score;
    if (n_warm_ == warmup_) {
      std::sort(warm_, warm_ + n_warm_);
      const int32_t q = std::clamp(static_cast<int32_t>((1.0f - target_) * n_warm_), 0, n_warm_ - 1);
      threshold_ = warm_[q];
    }
    return false;
  }
  if (warmup_ == 0 && n_decided_ == 0) threshold_ = score;
  const bool skip = score > threshold_;
  ++n_decided_;
  n_skipped_ += skip ? 1 : 0;
  threshold_ += step_ * ((skip ? 1.0f : 0.0f) - target_);
  return skip;
}

}  // namespace wt
