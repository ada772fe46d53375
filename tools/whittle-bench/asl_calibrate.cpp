#include "asl_calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bench {

namespace {

struct CalibrationPrompt {
  TaskKind kind;
  double depth;
};
constexpr CalibrationPrompt kPrompts[] = {
    {TaskKind::passkey, 0.5},       {TaskKind::niah_single, 0.1}, {TaskKind::niah_single, 0.3},
    {TaskKind::niah_single, 0.5},   {TaskKind::niah_single, 0.7}, {TaskKind::niah_single, 0.9},
    {TaskKind::niah_multikey, 0.5}, {TaskKind::kv_retrieval, 0.5},
};
constexpr double kTaus[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};

// The layer where tau would fire on this curve, or -1: the first ratio below it after the
// first tested layer, whose ratio (1) defines V_init and never fires (the policy's rule).
int32_t fire_layer(const std::vector<double>& curve, double tau) {
  bool first = true;
  for (size_t l = 0; l < curve.size(); ++l) {
    if (std::isnan(curve[l])) continue;
    if (!first && curve[l] < tau) return static_cast<int32_t>(l);
    first = false;
  }
  return -1;
}

// The curve of one prompt: ASL at tau 1e-6 over it (it does not fire), the ratios from
// wt_prune_stats.
bool prompt_curve(const BenchModel& m, const MethodSpec& spec, const AslCalibrateOptions& o, const Task& t,
                  std::vector<double>* curve, std::string* error) {
  ContextOptions co;
  co.n_ctx = static_cast<int32_t>(t.prompt.size()) + 8;
  co.threads = o.threads;
  wt_context* ctx = nullptr;
  if (!make_context(m, spec, co, &ctx, error)) return false;
  bool ok = wt_context_prefill(ctx, t.prompt.data(), t.prompt.size()) == WT_OK;
  wt_prune_stats st{};
  ok = ok && wt_context_get_prune_stats(ctx, &st) == WT_OK;
  if (!ok) *error = std::string("asl calibration: ") + wt_last_error();
  if (ok && !st.asl_ratios) {
    *error = "asl calibration: the library reports no ASL ratios (is it older than API 7?)";
    ok = false;
  }
  if (ok) curve->assign(st.asl_ratios, st.asl_ratios + st.n_layer);
  wt_context_free(ctx);
  return ok;
}

}  // namespace

bool run_asl_calibrate(const BenchModel& m, const Machine& mc, const AslCalibrateOptions& o, std::vector<Json>* records,
                       std::string* error) {
  const Filler filler = make_filler(debian_filler_text(), m.tokenizer());
  const Tokenizer tok = m.tokenizer();
  MethodSpec spec;
  spec.method = "asl";
  spec.params = {{"keep", o.keep}};
  spec.params.insert(spec.params.end(), o.params.begin(), o.params.end());
  spec.params.emplace_back("asl_tau", "1e-6");  // last: it wins over a --prune-param asl_tau
  const int32_t n_layer = m.info.n_layer;
  const size_t n_prompts = std::size(kPrompts);
  Progress progress(static_cast<double>(o.prompt_lengths.size() * n_prompts));
  for (int32_t L : o.prompt_lengths) {
    std::printf("## ASL's V_l / V_init at %d tokens (%s, seed %llu; tau 1e-6: the test runs at every layer)\n\n", L,
                spec.label().c_str(), static_cast<unsigned long long>(o.seed));
    std::vector<std::vector<double>> curves;
    bool header = false;
    int32_t first = n_layer;
    for (size_t i = 0; i < n_prompts && !g_stop; ++i) {
      const CalibrationPrompt& cp = kPrompts[i];
      Task t;
      if (!make_task(cp.kind, L, cp.depth, o.seed + i, filler, tok, &t, error)) return false;
      progress.show(std::string(task_name(cp.kind)) + " at " + std::to_string(L));
      std::vector<double> curve;
      if (!prompt_curve(m, spec, o, t, &curve, error)) return false;
      progress.advance(1);
      if (!header) {
        // Columns from the first layer the test ran at (the same for every prompt).
        for (int32_t l = 0; l < n_layer; ++l)
          if (!std::isnan(curve[static_cast<size_t>(l)])) {
            first = l;
            break;
          }
        std::printf("| task | depth |");
        for (int32_t l = first; l < n_layer; ++l) std::printf(" %d |", l);
        std::printf("\n|---|---|");
        for (int32_t l = first; l < n_layer; ++l) std::printf("---|");
        std::printf("\n");
        header = true;
      }
      std::printf("| %s | %.1f |", task_name(cp.kind), cp.depth);
      for (int32_t l = first; l < n_layer; ++l) {
        const double r = curve[static_cast<size_t>(l)];
        if (std::isnan(r)) std::printf(" - |");
        else std::printf(" %.2f |", r);
      }
      std::printf("\n");
      std::fflush(stdout);
      Json r = base_record("asl_ratios", m, mc, "", o.seed + i);
      r.set("prompt_tokens", L);
      r.set("task", task_name(cp.kind));
      r.set("depth", cp.depth);
      r.set("keep", o.keep);
      r.set("ratios", Json::array_of(curve));
      records->push_back(r);
      curves.push_back(std::move(curve));
    }
    if (curves.empty()) return true;
    std::printf("\n| tau | fires on | first layer: median (min-max) |\n|---|---|---|\n");
    for (double tau : kTaus) {
      std::vector<int32_t> layers;
      for (const std::vector<double>& c : curves) {
        const int32_t l = fire_layer(c, tau);
        if (l >= 0) layers.push_back(l);
      }
      std::sort(layers.begin(), layers.end());
      std::printf("| %.1f | %zu/%zu |", tau, layers.size(), curves.size());
      if (layers.empty()) std::printf(" - |\n");
      else std::printf(" %d (%d-%d) |\n", layers[layers.size() / 2], layers.front(), layers.back());
      Json r = base_record("asl_tau", m, mc, "", o.seed);
      r.set("prompt_tokens", L);
      r.set("tau", tau);
      r.set("n_prompts", static_cast<int>(curves.size()));
      r.set("fire_layers", Json::array_of(layers));
      records->push_back(r);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return true;
}

}  // namespace bench
