#include "prune_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench_common.h"
#include "tools/common/prune_methods.h"

namespace {

std::vector<wt_token> tokenize(wt_model* m, const std::string& s) {
  bench::BenchModel bm;
  bm.model = m;
  return bm.tokenize(s, false);
}

// Real English filler from the license texts Debian installs.
std::string filler_text() {
  std::string all;
  for (const char* f : {"/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0",
                        "/usr/share/common-licenses/GPL-2", "/usr/share/common-licenses/LGPL-3"}) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  return all;
}

// The first n - |question| filler tokens, then the question: exactly n tokens.
std::vector<wt_token> prose_prompt(wt_model* m, const std::vector<wt_token>& filler, int n) {
  std::vector<wt_token> q = tokenize(m, "\n\nQuestion: What is the name of the license above?\nAnswer:");
  std::vector<wt_token> p(filler.begin(), filler.begin() + (n - static_cast<int>(q.size())));
  p.insert(p.end(), q.begin(), q.end());
  return p;
}

// Key-value retrieval (RULER style): JSON pairs of random hex keys and values, exactly n
// tokens, asking for the value of a pair in the middle.
std::vector<wt_token> kv_prompt(wt_model* m, int n, uint32_t seed) {
  uint32_t s = seed;
  auto hex = [&]() {
    std::string h;
    for (int i = 0; i < 8; ++i) {
      s = s * 1664525u + 1013904223u;
      h += "0123456789abcdef"[(s >> 16) & 15];
    }
    return h;
  };
  std::vector<wt_token> head = tokenize(m, "Extract the value corresponding to the specified key in the JSON object below.\n{");
  std::vector<std::pair<std::string, std::vector<wt_token>>> pairs;
  size_t total = head.size();
  std::vector<wt_token> tail_probe = tokenize(m, "}\nKey: \"00000000\"\nThe value associated with the specified key is: \"");
  while (static_cast<int>(total + tail_probe.size()) < n) {
    const std::string k = hex(), v = hex();
    pairs.emplace_back(k, tokenize(m, "\"" + k + "\": \"" + v + "\", "));
    total += pairs.back().second.size();
  }
  const std::string key = pairs[pairs.size() / 2].first;
  std::vector<wt_token> tail = tokenize(m, "}\nKey: \"" + key + "\"\nThe value associated with the specified key is: \"");
  std::vector<wt_token> p = head;
  for (auto& pr : pairs) p.insert(p.end(), pr.second.begin(), pr.second.end());
  p.resize(static_cast<size_t>(n) - tail.size());
  p.insert(p.end(), tail.begin(), tail.end());
  return p;
}

int32_t argmax(const float* l, int32_t n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Run {
  std::string method;
  wt_context* ctx = nullptr;
  std::vector<double> ms;
  int agree = 0;
  wt_prune_stats stats{};
};

bool make_ctx(wt_model* model, const PruneBenchOptions& o, const std::string& method, int n_ctx, wt_context** out) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_threads = o.threads;
  if (wt_prune_method_from_name(method.c_str(), &cp.prune.method) != WT_OK) return false;
  cp.prune.keep = o.keep;
  for (const auto& kv : o.params)
    if (wt_prune_set_param(&cp.prune, kv.first.c_str(), kv.second.c_str()) != WT_OK) return false;
  return wt_context_create(model, &cp, out) == WT_OK;
}

}  // namespace

int run_prune_bench(wt_model* model, const PruneBenchOptions& o) {
  wt_model_info info;
  (void)wt_model_get_info(model, &info);
  const std::vector<wt_token> filler = tokenize(model, filler_text());
  std::vector<std::string> methods = {"full"};
  if (o.methods.empty()) {
    const std::vector<std::string> all = wt_tools::prune_method_names(/*without_full=*/true);
    methods.insert(methods.end(), all.begin(), all.end());
  } else {
    methods.insert(methods.end(), o.methods.begin(), o.methods.end());
  }
  FILE* json = o.json_path.empty() ? nullptr : std::fopen(o.json_path.c_str(), "w");
  std::printf("| L | method | prefill ms (median of %d) | ratio to full | top-1 agreement (%d tokens) | selection layer | mean KV rows/layer |\n",
              o.reps, o.n_agree);
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int L : o.lengths) {
    if (L + 64 > static_cast<int>(filler.size())) {
      std::fprintf(stderr, "error: only %zu filler tokens for L = %d\n", filler.size(), L);
      return 1;
    }
    const std::vector<wt_token> prompt = prose_prompt(model, filler, L);
    std::vector<Run> runs;
    for (const std::string& m : methods) {
      Run r;
      r.method = m;
      if (!make_ctx(model, o, m, L + o.n_agree + 40, &r.ctx)) {
        std::fprintf(stderr, "error: %s: %s\n", m.c_str(), wt_last_error());
        return 1;
      }
      runs.push_back(std::move(r));
    }
    // Interleaved repetitions: each method's samples see the same machine noise.
    for (int rep = 0; rep < o.reps; ++rep) {
      for (Run& r : runs) {
        std::fprintf(stderr, "\rL %d rep %d/%d %-12s", L, rep + 1, o.reps, r.method.c_str());
        wt_context_reset(r.ctx);
        const auto t0 = std::chrono::steady_clock::now();
        if (wt_context_prefill(r.ctx, prompt.data(), prompt.size()) != WT_OK) {
          std::fprintf(stderr, "\nerror: prefill %s: %s\n", r.method.c_str(), wt_last_error());
          return 1;
        }
        r.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    std::fprintf(stderr, "\n");
    // Greedy tokens of full KV, then teacher-forced agreement of every method with them.
    std::vector<wt_token> ref;
    const float* lg = nullptr;
    wt_context* full = runs[0].ctx;
    for (int i = 0; i < o.n_agree; ++i) {
      (void)wt_context_logits(full, -1, &lg);
      ref.push_back(argmax(lg, info.n_vocab));
      if (i + 1 < o.n_agree && wt_context_decode(full, ref.back()) != WT_OK) return 1;
    }
    const double full_ms = median(runs[0].ms);
    for (Run& r : runs) {
      (void)wt_context_get_prune_stats(r.ctx, &r.stats);
      if (&r != &runs[0]) {
        for (int i = 0; i < o.n_agree; ++i) {
          (void)wt_context_logits(r.ctx, -1, &lg);
          r.agree += argmax(lg, info.n_vocab) == ref[static_cast<size_t>(i)] ? 1 : 0;
          if (i + 1 < o.n_agree && wt_context_decode(r.ctx, ref[static_cast<size_t>(i)]) != WT_OK) return 1;
        }
      } else {
        r.agree = o.n_agree;
      }
      double kv_mean = L;
      if (&r != &runs[0] && r.stats.n_layer > 0) {
        kv_mean = 0;
        for (int l = 0; l < r.stats.n_layer; ++l) kv_mean += r.stats.kv_rows[l];
        kv_mean /= r.stats.n_layer;
      }
      const double ms = median(r.ms);
      char sel[32] = "-";
      if (r.stats.selection_layer >= 0)
        std::snprintf(sel, sizeof sel, "%d%s", r.stats.selection_layer, r.stats.triggered ? "" : " (forced)");
      else if (r.method == "asl")
        std::snprintf(sel, sizeof sel, "never triggered");
      std::printf("| %d | %s | %.0f | %.2f | %d/%d | %s | %.0f |\n", L, r.method.c_str(), ms, ms / full_ms, r.agree,
                  o.n_agree, sel, kv_mean);
      if (json)
        std::fprintf(json,
                     "{\"model\":\"%s\",\"backend\":\"cpu\",\"threads\":%d,\"method\":\"%s\",\"keep\":%.3f,\"L\":%d,"
                     "\"prefill_ms_median\":%.3f,\"ratio_to_full\":%.4f,\"agree\":%d,\"n_agree\":%d,"
                     "\"selection_layer\":%d,\"triggered\":%s,\"kv_rows_mean\":%.1f,\"reps\":%d}\n",
                     info.name, o.threads, r.method.c_str(), o.keep, L, ms, ms / full_ms, r.agree, o.n_agree,
                     r.stats.selection_layer, r.stats.triggered ? "true" : "false", kv_mean, o.reps);
      std::fflush(stdout);
    }
    for (Run& r : runs) wt_context_free(r.ctx);
  }
  if (json) std::fclose(json);
  return 0;
}

int run_asl_compare(wt_model* model, const PruneBenchOptions& o) {
  const std::vector<wt_token> filler = tokenize(model, filler_text());
  wt_model_info info;
  (void)wt_model_get_info(model, &info);
  std::printf("| L | prompt | ASL selection layer | triggered | min V/V_init (layer) | kept rows | answer (greedy, 8 tokens) |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int L : o.lengths) {
    const std::vector<wt_token> prompts[2] = {kv_prompt(model, L, 1234u), prose_prompt(model, filler, L)};
    const char* names[2] = {"key-value retrieval", "question on prose"};
    for (int i = 0; i < 2; ++i) {
      wt_context* ctx = nullptr;
      if (!make_ctx(model, o, "asl", L + 16, &ctx)) {
        std::fprintf(stderr, "error: %s\n", wt_last_error());
        return 1;
      }
      if (wt_context_prefill(ctx, prompts[i].data(), prompts[i].size()) != WT_OK) return 1;
      wt_prune_stats st;
      (void)wt_context_get_prune_stats(ctx, &st);
      std::string answer;
      for (int t = 0; t < 8; ++t) {
        const float* lg = nullptr;
        (void)wt_context_logits(ctx, -1, &lg);
        const wt_token tok = argmax(lg, info.n_vocab);
        char buf[64];
        size_t len = 0;
        if (wt_token_to_bytes(model, tok, buf, sizeof buf, &len) == WT_OK) answer.append(buf, len);
        if (wt_context_decode(ctx, tok) != WT_OK) break;
      }
      for (char& c : answer)
        if (c == '\n' || c == '|') c = ' ';
      std::printf("| %d | %s | %d | %s | %.3f (%d) | %d | %s |\n", L, names[i], st.selection_layer,
                  st.triggered ? "yes" : "no", st.asl_min_ratio, st.asl_min_ratio_layer, st.n_selected, answer.c_str());
      std::fflush(stdout);
      wt_context_free(ctx);
    }
  }
  return 0;
}
