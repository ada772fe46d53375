// The small pure functions behind the policies' decisions, separate so that the unit tests
// check them on hand-made vectors.
#pragma once

#include <cstdint>

namespace wt {

// ranks[j] = 1 + the number of entries ranked before j (descending score; ties: lower
// index first). order: scratch of n entries.
void ranks_descending(const float* s, int32_t n, int32_t* order, int32_t* ranks);

// ASL's statistic: over the tokens whose rank is <= k in at least one of the n_obs rank
// vectors ranks[n_obs][n], the mean population variance of their ranks across the vectors.
double rank_variance(const int32_t* ranks, int32_t n_obs, int32_t n, int32_t k);

// CLAA's aggregation: out[j] = max over the n_vecs vectors vecs[n_vecs][n] of
// (v[j] - mean(v)) / (sample std(v) + 1e-8).
void zscore_max(const float* vecs, int32_t n_vecs, int32_t n, float* out);

// |a ∩ b| / n_a for two ascending lists (SlimInfer's overlap test; 0 when a is empty).
double overlap_fraction(const int32_t* a, int32_t n_a, const int32_t* b, int32_t n_b);

// Token Filtering's threshold feedback: a token is skipped when its redundancy score is
// above the threshold; after each decided token the threshold moves by
// step * (skipped - target), so the running skip fraction is pulled to the target
// (an integral controller: |fraction - target| <= threshold travel / (step * tokens)).
// The first `warmup` tokens are never skipped; they set the starting threshold at their
// (1 - target) quantile.
class SkipController {
 public:
  static constexpr int32_t kMaxWarmup = 256;
  void reset(float target, int32_t warmup, float step);
  bool decide(float score);  // true: skip this token
  // What decide() depends on, for a saved context (Token Filtering's decode state): fixed
  // layout, no padding. set_state refuses (false) values decide() could not have made.
  struct State {
    int64_t n_decided = 0, n_skipped = 0;
    float target = 0, step = 0, threshold = 0;
    int32_t warmup = 0, n_warm = 0, reserved = 0;
    float warm[kMaxWarmup] = {};
  };
  State state() const;
  static bool valid(const State& s);
  bool set_state(const State& s);  // false (nothing set) unless valid(s)
  int64_t n_decided() const { return n_decided_; }
  int64_t n_skipped() const { return n_skipped_; }

 private:
  float target_ = 0.5f, step_ = 0.05f, threshold_ = 0.0f;
  int32_t warmup_ = 0, n_warm_ = 0;
  float warm_[kMaxWarmup] = {};
  int64_t n_decided_ = 0, n_skipped_ = 0;
};

}  // namespace wt
