// The statistics the harness reports: summaries of repeated timings, Spearman rank
// correlation, and divergences between next-token distributions.
#pragma once

#include <cstdint>
#include <vector>

namespace bench {

struct Summary {
  double mean = 0, std = 0, median = 0;  // std: sample standard deviation (0 for one value)
  int n = 0;
};
Summary summarize(const std::vector<double>& v);
double median_of(std::vector<double> v);  // NaN when empty

// Spearman's rho over the positions where both a and b are finite (ties get their average
// rank, so a block score shared by many tokens is handled). NaN with fewer than 3 pairs or
// when either side is constant.
double spearman(const float* a, const float* b, int32_t n);

// Log-softmax of n logits into out (computed in double).
void log_softmax(const float* logits, int32_t n, std::vector<double>* out);
// KL(p || q) for log-probabilities lp, lq of n outcomes.
double kl_divergence(const std::vector<double>& lp, const std::vector<double>& lq);

}  // namespace bench
