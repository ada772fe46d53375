#include "metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace bench {

Summary summarize(const std::vector<double>& v) {
  Summary s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / s.n;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.std = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  s.median = median_of(v);
  return s;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

namespace {

// Average ranks (1-based) of v.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = 0.5 * static_cast<double>(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const float* a, const float* b, int32_t n) {
  std::vector<double> x, y;
  for (int32_t i = 0; i < n; ++i) {
    if (std::isfinite(a[i]) && std::isfinite(b[i])) {
      x.push_back(a[i]);
      y.push_back(b[i]);
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (x.size() < 3) return nan;
  // Pearson correlation of the ranks: correct with ties, unlike the 1 - 6 sum d^2 formula.
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double m = (static_cast<double>(x.size()) + 1.0) / 2.0;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - m) * (ry[i] - m);
    sxx += (rx[i] - m) * (rx[i] - m);
    syy += (ry[i] - m) * (ry[i] - m);
  }
  if (sxx == 0 || syy == 0) return nan;
  return sxy / std::sqrt(sxx * syy);
}

void log_softmax(const float* logits, int32_t n, std::vector<double>* out) {
  out->resize(static_cast<size_t>(n));
  const double mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int32_t i = 0; i < n; ++i) (*out)[static_cast<size_t>(i)] = logits[i] - lse;
}

double kl_divergence(const std::vector<double>& lp, const std::vector<double>& lq) {
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);
}

}  // namespace bench
