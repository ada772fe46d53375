// whittle-bench (foundation): prefill and decode tokens/s on a model, medians of several
// repetitions, with the machine's read bandwidth measured in the same run so decode speed
// is also given as a fraction of the bandwidth roofline.
//   whittle-bench -m MODEL [-p 512,2048] [-n 64] [-r 5] [-t 2]
//   whittle-bench -m MODEL --prune all|METHOD,... [--keep 0.1] [-p 1024,2048,4096] [-r 3]
//                 [--prune-param KEY=VALUE]... [--json FILE]   (prune_bench.h)
//   whittle-bench -m MODEL --asl-compare [-p 2048] [--keep 0.1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bandwidth_probe.h"
#include "prune_bench.h"
#include "whittle.h"

namespace {

struct Options {
  std::string model;
  std::vector<int> prompt_lengths = {512, 2048};
  int n_gen = 64;
  int reps = 5;
  int threads = 2;
};

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int fail(const char* what) {
  std::fprintf(stderr, "error: %s: %s\n", what, wt_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  PruneBenchOptions po;
  enum class Mode { speed, prune, asl } mode = Mode::speed;
  bool lengths_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--asl-compare") {
      mode = Mode::asl;
      continue;
    }
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) {
      std::fprintf(stderr, "usage: %s -m MODEL [-p 512,2048] [-n 64] [-r 5] [-t 2]\n", argv[0]);
      return 2;
    }
    ++i;
    if (a == "-m") o.model = v;
    else if (a == "-p") {
      o.prompt_lengths = parse_list(v);
      lengths_given = true;
    } else if (a == "--prune") {
      mode = Mode::prune;
      if (std::string(v) != "all") {
        std::stringstream ss(v);
        std::string item;
        while (std::getline(ss, item, ',')) po.methods.push_back(item);
      }
    } else if (a == "--keep") po.keep = static_cast<float>(std::atof(v));
    else if (a == "--json") po.json_path = v;
    else if (a == "--prune-param") {
      const std::string kv = v;
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "--prune-param expects KEY=VALUE\n");
        return 2;
      }
      po.params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    else if (a == "-n") o.n_gen = std::atoi(v);
    else if (a == "-r") o.reps = std::max(1, std::atoi(v));
    else if (a == "-t") o.threads = std::atoi(v);
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  wt_model* model = nullptr;
  if (wt_model_load(o.model.c_str(), nullptr, &model) != WT_OK) return fail("loading the model");
  wt_model_info info;
  (void)wt_model_get_info(model, &info);
  if (mode != Mode::speed) {
    po.threads = o.threads;
    if (lengths_given) po.lengths = o.prompt_lengths;
    else if (mode == Mode::asl) po.lengths = {2048};
    if (o.reps != 5) po.reps = o.reps;
    const int rc = mode == Mode::prune ? run_prune_bench(model, po) : run_asl_compare(model, po);
    wt_model_free(model);
    return rc;
  }

  // Two probes: DRAM (a buffer far beyond any cache) and a buffer the size of the weights,
  // which is what decode re-reads every token; on a machine whose last-level cache holds
  // the model the second is the roofline that applies.
  const double bw_dram = measure_read_bandwidth_gbs(o.threads, size_t(1) << 30, 5);
  const double bw_model = measure_read_bandwidth_gbs(o.threads, static_cast<size_t>(info.weight_bytes), 9);
  std::printf("model: %s (%s, %.1f M params, %.1f MiB of weights), %d threads\n", info.name, info.architecture,
              info.n_params / 1e6, info.weight_bytes / 1048576.0, o.threads);
  std::printf("read bandwidth (median): %.1f GB/s over 1 GiB (DRAM), %.1f GB/s over a weights-sized buffer\n\n",
              bw_dram, bw_model);
  std::printf("| test | tokens/s (median of %d) | min | max | roofline tok/s DRAM / weights-sized | fraction |\n",
              o.reps);
  std::printf("|---|---|---|---|---|---|\n");

  const int max_p = *std::max_element(o.prompt_lengths.begin(), o.prompt_lengths.end());
  wt_context_params cp = wt_context_default_params();
  cp.n_threads = o.threads;
  cp.n_ctx = std::max(max_p, 16 + o.n_gen) + 1;
  wt_context* ctx = nullptr;
  if (wt_context_create(model, &cp, &ctx) != WT_OK) return fail("creating the context");

  // Prompts of random ordinary tokens, fixed seed.
  std::vector<wt_token> tokens(static_cast<size_t>(max_p));
  uint32_t state = 12345;
  for (auto& t : tokens) {
    state = state * 1664525u + 1013904223u;
    t = static_cast<wt_token>(100 + state % static_cast<uint32_t>(info.n_vocab - 200));
  }

  for (int p : o.prompt_lengths) {
    std::vector<double> rates;
    for (int r = 0; r < o.reps; ++r) {
      wt_context_reset(ctx);
      const auto t0 = std::chrono::steady_clock::now();
      if (wt_context_prefill(ctx, tokens.data(), static_cast<size_t>(p)) != WT_OK) return fail("prefill");
      rates.push_back(p / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(rates.begin(), rates.end());
    std::printf("| pp%d | %.1f | %.1f | %.1f | | |\n", p, median(rates), rates.front(), rates.back());
    std::fflush(stdout);
  }

  {
    std::vector<double> rates;
    double kv_bytes_per_token = 0;
    for (int r = 0; r < o.reps; ++r) {
      wt_context_reset(ctx);
      if (wt_context_prefill(ctx, tokens.data(), 16) != WT_OK) return fail("prefill");
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.n_gen; ++i) {
        if (wt_context_decode(ctx, tokens[static_cast<size_t>(16 + i) % tokens.size()]) != WT_OK) return fail("decode");
      }
      rates.push_back(o.n_gen / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    // KV read per decoded token: K and V (f32) of every layer for the average context.
    kv_bytes_per_token = 2.0 * 4.0 * info.n_layer * info.n_head_kv * info.head_dim * (16 + o.n_gen / 2.0);
    const double bytes = static_cast<double>(info.weight_bytes) + kv_bytes_per_token;
    const double roof_dram = bw_dram * 1e9 / bytes, roof_model = bw_model * 1e9 / bytes;
    std::sort(rates.begin(), rates.end());
    std::printf("| tg%d | %.1f | %.1f | %.1f | %.1f / %.1f | %.0f%% / %.0f%% |\n", o.n_gen, median(rates), rates.front(),
                rates.back(), roof_dram, roof_model, 100.0 * median(rates) / roof_dram, 100.0 * median(rates) / roof_model);
  }
  wt_context_free(ctx);
  wt_model_free(model);
  return 0;
}
