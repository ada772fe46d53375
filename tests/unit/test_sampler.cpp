// The sampler (runtime/engine/sampler.h) against a plain reference written here: greedy
// against the scalar first-largest loop, the distribution against a full sort with softmax
// weights in long double and the top-k / top-p cuts applied to the sorted list, and the
// draws' frequencies against the reference's probabilities.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "runtime/engine/sampler.h"

namespace {

using wt::Sampler;
using wt::SamplerOptions;

int32_t argmax_ref(const std::vector<float>& l) {
  int32_t best = 0;
  for (int32_t i = 1; i < static_cast<int32_t>(l.size()); ++i) best = l[i] > l[best] ? i : best;
  return best;
}

struct RefToken {
  int32_t id;
  long double p;  // normalized over the kept tokens
};

// Full sort by logit (ties: lower id), top-k, softmax at temperature t over those, then the
// shortest prefix whose probability reaches top_p, then the tokens at least min_p times as
// likely as the first; renormalized. *margin: how close a cut came to its threshold (a cut
// closer than the sampler's exponentials' error, 2e-7 of a weight, is ambiguous, and the
// cases avoid it).
std::vector<RefToken> reference(const std::vector<float>& logits, const SamplerOptions& o, long double* margin) {
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < ids.size()) ids.resize(static_cast<size_t>(o.top_k));
  const long double mx = logits[ids[0]];
  std::vector<RefToken> out;
  long double sum = 0;
  for (int32_t id : ids) {
    const long double w = std::exp((static_cast<long double>(logits[id]) - mx) / o.temperature);
    out.push_back({id, w});
    sum += w;
  }
  for (RefToken& t : out) t.p /= sum;
  *margin = 1;
  if (o.top_p < 1.0f) {
    long double cum = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (cum + out[i].p >= o.top_p) {
        *margin = std::min(std::fabs(o.top_p - cum), std::fabs(cum + out[i].p - o.top_p));
        out.resize(i + 1);
        break;
      }
      cum += out[i].p;
    }
  }
  if (o.min_p > 0.0f) {
    const long double p0 = out[0].p;
    size_t m = 0;
    while (m < out.size() && out[m].p >= o.min_p * p0) ++m;
    for (size_t i = 0; i < out.size(); ++i) *margin = std::min(*margin, std::fabs(out[i].p / p0 - o.min_p));
    out.resize(m);
  }
  long double kept = 0;
  for (const RefToken& t : out) kept += t.p;
  for (RefToken& t : out) t.p /= kept;
  return out;
}

// The largest relative difference between the kept candidates' normalized weights and the
// reference's probabilities of the same tokens.
double worst_weight_error(const Sampler::Candidate* c, const float* w, size_t n, const std::vector<RefToken>& ref,
                          size_t n_vocab) {
  std::vector<long double> p_ref(n_vocab, 0);
  for (const RefToken& t : ref) p_ref[static_cast<size_t>(t.id)] = t.p;
  double sum = 0, worst = 0;
  for (size_t i = 0; i < n; ++i) sum += w[i];
  for (size_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(p_ref[static_cast<size_t>(c[i].id)]);
    worst = std::max(worst, std::fabs(w[i] / sum - p) / p);
  }
  return worst;
}

std::vector<float> random_logits(std::mt19937& rng, size_t n, float spread) {
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> l(n);
  for (float& x : l) x = d(rng);
  return l;
}

// Whether the sampler's distribution over logits l is the reference's (false: a cut too close
// to call, not checked): the same tokens, in the same order after a top-k cut, with the same
// normalized weights.
bool matches_reference(const std::vector<float>& l, const SamplerOptions& o) {
  long double margin = 0;
  const std::vector<RefToken> ref = reference(l, o, &margin);
  if (margin < 1e-6L) return false;  // a cut within rounding of top_p: either side is right
  Sampler s;
  REQUIRE(Sampler::create(static_cast<int32_t>(l.size()), o, &s).is_ok());
  size_t n = 0;
  const float* w = nullptr;
  const Sampler::Candidate* c = s.distribution(l.data(), &w, &n);
  REQUIRE(n == ref.size());
  std::vector<int32_t> got(n);
  for (size_t i = 0; i < n; ++i) got[i] = c[i].id;
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < l.size()) {  // a top-k cut is sorted in logit order
    size_t out_of_order = 0;
    for (size_t i = 0; i < n; ++i) out_of_order += got[i] != ref[i].id ? 1 : 0;
    CHECK(out_of_order == 0);
  }
  std::vector<int32_t> want;
  for (const RefToken& t : ref) want.push_back(t.id);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  CHECK(got == want);
  CHECK(worst_weight_error(c, w, n, ref, l.size()) < 1e-4);
  return true;
}

}  // namespace

TEST_CASE("sampler: greedy is the first largest logit, as the scalar loop finds it") {
  std::mt19937 rng(7);
  for (size_t n : {1, 2, 15, 16, 17, 33, 1000, 151936}) {
    CAPTURE(n);
    std::vector<float> l = random_logits(rng, n, 3.0f);
    CHECK(wt::argmax_logits(l.data(), static_cast<int32_t>(n)) == argmax_ref(l));
    // Ties: the first of equal largest values, -0 and +0 equal.
    if (n >= 17) {
      const float top = *std::max_element(l.begin(), l.end()) + 1.0f;
      l[n - 1] = top;
      l[n / 2] = top;
      l[5] = top;
      CHECK(wt::argmax_logits(l.data(), static_cast<int32_t>(n)) == 5);
      std::fill(l.begin(), l.end(), -1.0f);
      l[3] = -0.0f;
      l[9] = 0.0f;
      CHECK(wt::argmax_logits(l.data(), static_cast<int32_t>(n)) == argmax_ref(l));
      CHECK(argmax_ref(l) == 3);
      // A NaN is never the largest; a NaN first gives 0, as the loop does.
      l[4] = std::numeric_limits<float>::quiet_NaN();
      CHECK(wt::argmax_logits(l.data(), static_cast<int32_t>(n)) == 3);
      l[0] = std::numeric_limits<float>::quiet_NaN();
      CHECK(wt::argmax_logits(l.data(), static_cast<int32_t>(n)) == argmax_ref(l));
      CHECK(argmax_ref(l) == 0);
      l[n - 1] = std::numeric_limits<float>::infinity();
      l[0] = 1.0f;
      CHECK(wt::argmax_logits(l.data(), static_cast<int32_t>(n)) == static_cast<int32_t>(n - 1));
    }
  }
  Sampler s;
  REQUIRE(Sampler::create(17, {}, &s).is_ok());
  std::vector<float> l = random_logits(rng, 17, 1.0f);
  CHECK(s.sample(l.data()) == argmax_ref(l));
}

TEST_CASE("sampler: the kept tokens and their weights are the reference's for top-k and top-p") {
  std::mt19937 rng(11);
  struct Case {
    size_t n_vocab;
    float spread, temperature;
    int32_t top_k;
    float top_p;
    float min_p = 0.0f;
  };
  // Peaked and flat distributions; top-p cuts among a few candidates, among most of Qwen2.5's
  // vocabulary (a flat distribution: the halving search), and after top-k.
  const Case cases[] = {
      {50, 2.0f, 0.8f, 0, 1.0f},      {50, 2.0f, 0.8f, 10, 1.0f},      {50, 2.0f, 0.8f, 0, 0.5f},
      {1000, 4.0f, 1.0f, 0, 0.9f},    {1000, 0.5f, 1.5f, 0, 0.95f},    {1000, 0.5f, 1.5f, 300, 0.95f},
      {1000, 3.0f, 0.7f, 40, 0.9f},   {1000, 3.0f, 0.7f, 2000, 0.9f},  {151936, 3.0f, 0.7f, 0, 0.9f},
      {151936, 0.3f, 1.0f, 0, 0.99f}, {151936, 0.3f, 1.0f, 50, 0.99f}, {3, 1.0f, 1.0f, 1, 0.1f},
      // min_p alone, cutting before top-p, after it, and with top-k.
      {1000, 3.0f, 0.8f, 0, 1.0f, 0.05f}, {1000, 1.0f, 1.0f, 0, 0.9f, 0.2f},  {1000, 1.0f, 1.0f, 0, 0.3f, 0.01f},
      {1000, 3.0f, 0.8f, 20, 1.0f, 0.1f}, {151936, 3.0f, 0.7f, 0, 1.0f, 0.02f}, {50, 2.0f, 1.0f, 0, 1.0f, 1.0f},
  };
  int checked = 0;
  for (const Case& k : cases) {
    for (int rep = 0; rep < 3; ++rep) {
      CAPTURE(k.n_vocab);
      CAPTURE(k.top_k);
      CAPTURE(k.top_p);
      CAPTURE(k.temperature);
      CAPTURE(k.min_p);
      const std::vector<float> l = random_logits(rng, k.n_vocab, k.spread);
      checked += matches_reference(l, SamplerOptions{k.temperature, k.top_k, k.top_p, 1, k.min_p}) ? 1 : 0;
    }
  }
  CHECK(checked >= 45);  // nearly every case has a clear cut
}

TEST_CASE("sampler: a top-p cut in a tail below the first guess, and ties, are the reference's") {
  std::mt19937 rng(13);
  // One token far above a long tail: the top-p mass needs tail tokens weighing ~1e-5 of the
  // first (the sampler's first collection takes those over 2^-10), so it lowers its bound
  // and searches thousands of candidates.
  int checked = 0;
  for (const float top_p : {0.8f, 0.9f, 0.95f, 0.99f}) {
    CAPTURE(top_p);
    std::vector<float> l = random_logits(rng, 20000, 0.5f);
    l[777] = 11.0f;
    checked += matches_reference(l, SamplerOptions{1.0f, 0, top_p, 1}) ? 1 : 0;
  }
  CHECK(checked >= 3);  // a tail token weighs ~1e-5: a cut is ambiguous (within 1e-6) ~1 time in 10
  // Integer logits: many ties, which go to the lower id in every cut.
  std::vector<float> l = random_logits(rng, 3000, 2.0f);
  for (float& x : l) x = std::round(x);
  checked = 0;
  for (const SamplerOptions& o : {SamplerOptions{1.0f, 30, 1.0f, 1}, SamplerOptions{1.0f, 0, 0.5f, 1},
                                  SamplerOptions{0.5f, 0, 0.8f, 1, 0.1f}, SamplerOptions{1.0f, 100, 0.7f, 1}})
    checked += matches_reference(l, o) ? 1 : 0;
  CHECK(checked >= 2);  // a cut inside a tie group is ambiguous only where its sum sits on top_p
}

TEST_CASE("sampler: -inf and NaN logits weigh nothing and are never drawn") {
  // Three tokens in different blocks of the weight sums, -inf or NaN everywhere else.
  const size_t n_vocab = 5000;
  std::vector<float> l(n_vocab, -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < n_vocab; i += 7) l[i] = std::numeric_limits<float>::quiet_NaN();
  const int32_t ids[3] = {5, 2049, 4999};
  const float logit[3] = {0.0f, 1.0f, 2.0f};
  for (int j = 0; j < 3; ++j) l[static_cast<size_t>(ids[j])] = logit[j];
  for (const SamplerOptions& o : {SamplerOptions{1.0f, 0, 1.0f, 2}, SamplerOptions{1.0f, 0, 1.0f, 3, 0.01f},
                                  SamplerOptions{1.0f, 0, 0.999f, 4}, SamplerOptions{1.0f, 5, 1.0f, 5}}) {
    CAPTURE(o.top_k);
    CAPTURE(o.top_p);
    CAPTURE(o.min_p);
    Sampler s;
    REQUIRE(Sampler::create(static_cast<int32_t>(n_vocab), o, &s).is_ok());
    size_t n = 0;
    const float* w = nullptr;
    const Sampler::Candidate* c = s.distribution(l.data(), &w, &n);
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const bool real = c[i].id == 5 || c[i].id == 2049 || c[i].id == 4999;
      CHECK((real ? w[i] > 0.0f : w[i] == 0.0f));
      total += w[i];
    }
    CHECK(total == doctest::Approx(1.0 + std::exp(-1.0) + std::exp(-2.0)).epsilon(1e-6));
    // The draws: only the three, in proportion to their weights (5 standard deviations of
    // 10000 draws: within 0.015 of the rarest one's 0.09; 30000 took two minutes under qemu).
    const int draws = 10000;
    int count[3] = {0, 0, 0};
    for (int i = 0; i < draws; ++i) {
      const int32_t t = s.sample(l.data());
      const int j = t == ids[0] ? 0 : t == ids[1] ? 1 : t == ids[2] ? 2 : -1;
      REQUIRE(j >= 0);
      ++count[j];
    }
    for (int j = 0; j < 3; ++j) {
      const double p = std::exp(logit[j] - 2.0) / total, f = static_cast<double>(count[j]) / draws;
      CAPTURE(j);
      CHECK(std::fabs(f - p) < 5.0 * std::sqrt(p * (1 - p) / draws));
    }
  }
}

TEST_CASE("sampler: an infinite largest logit takes every draw; a row of -inf and NaN still gives a token") {
  std::mt19937 rng(17);
  std::vector<float> l = random_logits(rng, 3000, 2.0f);
  l[100] = l[2500] = std::numeric_limits<float>::infinity();  // they share all the weight
  l[7] = std::numeric_limits<float>::quiet_NaN();
  for (const SamplerOptions& o : {SamplerOptions{0.8f, 0, 1.0f, 1}, SamplerOptions{0.8f, 0, 0.9f, 2},
                                  SamplerOptions{0.8f, 0, 1.0f, 3, 0.5f}, SamplerOptions{0.8f, 50, 0.9f, 4}}) {
    CAPTURE(o.top_k);
    CAPTURE(o.top_p);
    CAPTURE(o.min_p);
    Sampler s;
    REQUIRE(Sampler::create(3000, o, &s).is_ok());
    int count[2] = {0, 0};
    for (int i = 0; i < 2000; ++i) {
      const int32_t t = s.sample(l.data());
      REQUIRE((t == 100 || t == 2500));
      ++count[t == 2500 ? 1 : 0];
    }
    if (o.top_p >= 1.0f) CHECK(std::abs(count[0] - count[1]) < 5 * 45);  // equal weights: 1000 +- 22 each
  }
  // Every logit -inf or NaN: all weigh the same (nothing is more likely than another).
  std::vector<float> none(3000, -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < none.size(); i += 3) none[i] = std::numeric_limits<float>::quiet_NaN();
  for (const SamplerOptions& o : {SamplerOptions{0.8f, 0, 1.0f, 1}, SamplerOptions{0.8f, 0, 0.9f, 2},
                                  SamplerOptions{0.8f, 10, 1.0f, 3}}) {
    Sampler s;
    REQUIRE(Sampler::create(3000, o, &s).is_ok());
    for (int i = 0; i < 20; ++i) {
      const int32_t t = s.sample(none.data());
      CHECK(t >= 0);
      CHECK(t < 3000);
    }
  }
}

TEST_CASE("sampler: draws follow the kept distribution") {
  std::mt19937 rng(3);
  const std::vector<float> l = random_logits(rng, 12, 1.0f);
  for (const SamplerOptions& o : {SamplerOptions{1.0f, 0, 1.0f, 5}, SamplerOptions{0.7f, 6, 1.0f, 6},
                                  SamplerOptions{1.3f, 0, 0.8f, 7}, SamplerOptions{1.0f, 0, 1.0f, 8, 0.3f}}) {
    CAPTURE(o.temperature);
    CAPTURE(o.top_k);
    CAPTURE(o.top_p);
    CAPTURE(o.min_p);
    long double margin = 0;
    const std::vector<RefToken> ref = reference(l, o, &margin);
    REQUIRE(margin > 1e-6L);
    Sampler s;
    REQUIRE(Sampler::create(12, o, &s).is_ok());
    const int draws = 40000;
    std::vector<int> count(12, 0);
    for (int i = 0; i < draws; ++i) ++count[static_cast<size_t>(s.sample(l.data()))];
    int in_ref = 0;
    for (const RefToken& t : ref) {
      const double p = static_cast<double>(t.p), f = static_cast<double>(count[static_cast<size_t>(t.id)]) / draws;
      CAPTURE(t.id);
      CHECK(std::fabs(f - p) < 5.0 * std::sqrt(p * (1 - p) / draws) + 1e-9);
      in_ref += count[static_cast<size_t>(t.id)];
    }
    CHECK(in_ref == draws);  // nothing outside the kept set
  }
}

namespace {

// llama.cpp's penalties, over the last `last_n` entries of `history`: a token seen c times
// is divided by r where positive (multiplied where not), then lowered by c f + p.
std::vector<float> penalized_ref(std::vector<float> l, const std::vector<int32_t>& history, const SamplerOptions& o) {
  std::vector<int32_t> count(l.size(), 0);
  const size_t from = history.size() > static_cast<size_t>(o.penalty_last_n) ? history.size() - o.penalty_last_n : 0;
  for (size_t i = from; i < history.size(); ++i) ++count[static_cast<size_t>(history[i])];
  for (size_t t = 0; t < l.size(); ++t) {
    if (count[t] == 0) continue;
    l[t] = l[t] <= 0 ? l[t] * o.repeat_penalty : l[t] / o.repeat_penalty;
    l[t] -= static_cast<float>(count[t]) * o.frequency_penalty + o.presence_penalty;
  }
  return l;
}

}  // namespace

TEST_CASE("sampler: the repetition penalties over the last tokens are llama.cpp's, greedy and sampled") {
  std::mt19937 rng(21);
  const size_t n_vocab = 50;
  for (const SamplerOptions& o : {SamplerOptions{0.0f, 0, 1.0f, 1, 0.0f, 1.3f, 0.0f, 0.0f, 64},
                                  SamplerOptions{0.0f, 0, 1.0f, 1, 0.0f, 1.0f, 0.4f, 0.9f, 16},
                                  SamplerOptions{0.9f, 0, 1.0f, 1, 0.0f, 1.2f, 0.1f, 0.3f, 64},
                                  SamplerOptions{0.9f, 10, 0.9f, 1, 0.05f, 0.8f, -0.2f, 0.5f, 7}}) {
    CAPTURE(o.temperature);
    CAPTURE(o.repeat_penalty);
    CAPTURE(o.penalty_last_n);
    Sampler s;
    REQUIRE(Sampler::create(static_cast<int32_t>(n_vocab), o, &s).is_ok());
    CHECK(s.penalizes());
    // A history longer than the window (so tokens leave it), given in two parts.
    std::vector<int32_t> history(150);
    std::uniform_int_distribution<int32_t> pick(0, 12);  // few distinct tokens: repeats
    for (int32_t& t : history) t = pick(rng);
    s.accept(history.data(), 100);
    s.accept(history.data() + 100, 50);
    for (int step = 0; step < 20; ++step) {
      CAPTURE(step);
      const std::vector<float> l = random_logits(rng, n_vocab, 2.0f);
      const std::vector<float> pl = penalized_ref(l, history, o);
      if (o.temperature <= 0.0f) {
        const int32_t tok = s.sample(l.data());
        CHECK(tok == argmax_ref(pl));
        history.push_back(tok);  // what the sampler returns joins its history
        continue;
      }
      long double margin = 0;
      const std::vector<RefToken> ref = reference(pl, o, &margin);
      size_t n = 0;
      const float* w = nullptr;
      const Sampler::Candidate* c = s.distribution(l.data(), &w, &n);
      if (margin > 1e-6L) {
        std::vector<int32_t> got, want;
        for (size_t i = 0; i < n; ++i) got.push_back(c[i].id);
        for (const RefToken& t : ref) want.push_back(t.id);
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        CHECK(got == want);
        // And their weights: a wrongly penalized token would show here.
        if (got == want) CHECK(worst_weight_error(c, w, n, ref, n_vocab) < 1e-4);
      }
      history.push_back(s.sample(l.data()));
    }
  }
}

TEST_CASE("sampler: a presence penalty makes greedy decoding leave a repeated token; reset forgets") {
  const std::vector<float> l = {0.0f, 5.0f, 4.5f, 1.0f};  // token 1, then 2
  SamplerOptions o;
  o.presence_penalty = 1.0f;
  o.penalty_last_n = 1;  // only the last token counts
  Sampler s;
  REQUIRE(Sampler::create(4, o, &s).is_ok());
  std::vector<int32_t> got;
  for (int i = 0; i < 5; ++i) got.push_back(s.sample(l.data()));
  CHECK(got == std::vector<int32_t>{1, 2, 1, 2, 1});
  s.reset_history();
  CHECK(s.sample(l.data()) == 1);  // 1 again: the history was empty
  // Off by default (repeat 1, frequency and presence 0), and with no window.
  Sampler plain;
  REQUIRE(Sampler::create(4, SamplerOptions{}, &plain).is_ok());
  CHECK_FALSE(plain.penalizes());
  o.penalty_last_n = 0;
  Sampler none;
  REQUIRE(Sampler::create(4, o, &none).is_ok());
  CHECK_FALSE(none.penalizes());
  for (int i = 0; i < 3; ++i) CHECK(none.sample(l.data()) == 1);
}

TEST_CASE("sampler: after a reset only the tokens accepted since count") {
  std::mt19937 rng(5);
  const size_t n_vocab = 30;
  const SamplerOptions o{1.0f, 0, 1.0f, 1, 0.0f, 1.5f, 0.5f, 0.25f, 32};
  Sampler s;
  REQUIRE(Sampler::create(static_cast<int32_t>(n_vocab), o, &s).is_ok());
  const std::vector<int32_t> before = {1, 2, 2, 3, 3, 3, 4, 5, 5, 6};
  const std::vector<int32_t> after = {3, 7, 7, 8};
  s.accept(before.data(), before.size());
  s.reset_history();
  s.accept(after.data(), after.size());
  const std::vector<float> l = random_logits(rng, n_vocab, 2.0f);
  long double margin = 0;
  const std::vector<RefToken> ref = reference(penalized_ref(l, after, o), o, &margin);
  size_t n = 0;
  const float* w = nullptr;
  const Sampler::Candidate* c = s.distribution(l.data(), &w, &n);
  REQUIRE(n == n_vocab);
  CHECK(worst_weight_error(c, w, n, ref, n_vocab) < 1e-4);
  // The same after the ring has wrapped: a window of 4 over 10 tokens, reset, 3 more.
  SamplerOptions o4 = o;
  o4.penalty_last_n = 4;
  Sampler s4;
  REQUIRE(Sampler::create(static_cast<int32_t>(n_vocab), o4, &s4).is_ok());
  s4.accept(before.data(), before.size());
  s4.reset_history();
  s4.accept(after.data() + 1, 3);
  const std::vector<RefToken> ref4 = reference(penalized_ref(l, {7, 7, 8}, o4), o4, &margin);
  c = s4.distribution(l.data(), &w, &n);
  REQUIRE(n == n_vocab);
  CHECK(worst_weight_error(c, w, n, ref4, n_vocab) < 1e-4);
}

TEST_CASE("sampler: extreme penalties and a subnormal temperature still give a token of the row") {
  const std::vector<float> l = {3.0f, -2.0f, 1.0f, 0.5f, 2.5f, -1.0f, 0.0f, 1.5f};
  const int32_t seen[5] = {0, 0, 1, 4, 4};
  const float tiny = std::numeric_limits<float>::denorm_min(), huge = std::numeric_limits<float>::max();
  // A positive logit over a subnormal penalty is inf, and twice FLT_MAX too: inf - inf is
  // NaN, which must rank last (tokens 0 and 4), never become the answer by the order
  // breaking; token 1 (-2 times the penalty, minus FLT_MAX) ranks low.
  for (const SamplerOptions& o : {SamplerOptions{0.0f, 0, 1.0f, 1, 0.0f, tiny, huge, 0.0f, 8},
                                  SamplerOptions{0.8f, 0, 1.0f, 1, 0.5f, tiny, huge, 0.0f, 8},
                                  SamplerOptions{0.8f, 3, 0.9f, 1, 0.1f, huge, -huge, huge, 8}}) {
    CAPTURE(o.temperature);
    CAPTURE(o.min_p);
    Sampler s;
    REQUIRE(Sampler::create(8, o, &s).is_ok());
    for (int i = 0; i < 20; ++i) {
      s.reset_history();
      s.accept(seen, 5);
      const int32_t t = s.sample(l.data());
      CHECK(t >= 0);
      CHECK(t < 8);
      if (o.frequency_penalty == huge) CHECK((t != 0 && t != 1 && t != 4));
    }
  }
  // A temperature whose reciprocal overflows samples as greedy.
  Sampler s;
  REQUIRE(Sampler::create(8, SamplerOptions{tiny, 0, 1.0f, 1}, &s).is_ok());
  for (int i = 0; i < 5; ++i) CHECK(s.sample(l.data()) == 0);
}
