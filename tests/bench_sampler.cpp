// Micro-benchmark of the sampler (not a test): milliseconds per sampled token over a logits
// row of Qwen2.5's vocabulary (151,936; normal logits of spread 3, a fixed seed) for greedy
// decoding and the usual temperature, top-k, top-p and min-p settings, and with repetition
// penalties (over the tokens each sampler drew); median of rounds of 50 tokens each. A
// decode step of Qwen2.5-0.5B takes ~8 ms on two cores.
//
//   bench_sampler [--vocab N] [--rounds R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/engine/sampler.h"

int main(int argc, char** argv) {
  int n_vocab = 151936, rounds = 5;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--vocab") == 0) {
      n_vocab = std::atoi(argv[++i]);
    } else if (i + 1 < argc && std::strcmp(argv[i], "--rounds") == 0) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--vocab N] [--rounds R]\n", argv[0]);
      return 2;
    }
  }
  if (n_vocab < 1 || n_vocab > (1 << 24) || rounds < 1 || rounds > 1000) {
    std::fprintf(stderr, "--vocab must be in [1, 2^24] and --rounds in [1, 1000]\n");
    return 2;
  }
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (float& x : logits) x = dist(rng);
  struct Setting {
    const char* name;
    wt::SamplerOptions o;
  };
  const Setting settings[] = {
      {"greedy", {0.0f, 0, 1.0f, 1}},
      {"temperature 0.7", {0.7f, 0, 1.0f, 1}},
      {"top-k 40", {0.7f, 40, 1.0f, 1}},
      {"top-p 0.9", {0.7f, 0, 0.9f, 1}},
      {"top-k 40, top-p 0.95", {0.7f, 40, 0.95f, 1}},
      {"min-p 0.05", {0.7f, 0, 1.0f, 1, 0.05f}},
      {"greedy, repeat penalty 1.1 over 64", {0.0f, 0, 1.0f, 1, 0.0f, 1.1f, 0.0f, 0.0f, 64}},
      {"top-k 40, repeat 1.1 + frequency 0.1 over 4096", {0.7f, 40, 1.0f, 1, 0.0f, 1.1f, 0.1f, 0.0f, 4096}},
  };
  std::printf("vocabulary %d, median of %d rounds of 50 tokens\n\n| setting | ms per token |\n|---|---|\n", n_vocab,
              rounds);
  for (const Setting& s : settings) {
    wt::Sampler sampler;
    if (!wt::Sampler::create(n_vocab, s.o, &sampler).is_ok()) return 1;
    std::vector<double> ms;
    long sink = 0;
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 50; ++i) sink += sampler.sample(logits.data());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 50);
    }
    std::nth_element(ms.begin(), ms.begin() + rounds / 2, ms.end());
    std::printf("| %s | %.3f |\n", s.name, ms[static_cast<size_t>(rounds / 2)]);
    if (sink < 0) return 1;  // keeps the draws
  }
  return 0;
}
