#include "speed.h"

#include <cmath>
#include <cstdio>

#include "metrics.h"

namespace bench {
namespace {

struct Samples {
  std::vector<double> ttft, tpot, e2e;
};

Json summary_json(const Summary& s) {
  Json j = Json::object();
  j.set("mean", s.mean);
  j.set("std", s.std);
  j.set("median", s.median);
  return j;
}

std::string pm(const Summary& s) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2f ± %.2f", s.mean, s.std);
  return b;
}

// A speed record with every measurement null, as a context that does not fit has it (with
// fits false and the refusal); a measured one sets them over it, so both have one key set.
Json speed_record(const BenchModel& m, const Machine& mc, const SpeedOptions& o, int32_t p, int32_t n,
                  const MethodSpec& spec, const std::string* refusal) {
  Json j = base_record("speed", m, mc, "", o.seed);
  j.set("L", p);
  j.set("n_gen", n);
  j.set("method", spec.method);
  j.set("params", spec.params_json());
  j.set("reps", 0);
  j.set("fits", refusal == nullptr);
  j.set("refusal", refusal ? Json(*refusal) : Json());
  for (const char* k : {"ttft_ms", "tpot_ms", "e2e_ms", "prefill_tps", "decode_tps", "ttft_ratio", "tpot_ratio",
                        "e2e_ratio", "decode_roofline_fraction", "prefill_roofline_fraction", "arena_bytes",
                        "rows_at_once", "threads_per_op", "host_rss_peak_bytes", "device_peak_bytes", "pinned_peak_bytes", "kv_bytes",
                        "planned_bytes"})
    j.set(k, Json());
  return j;
}

}  // namespace

bool run_speed(const BenchModel& m, const std::vector<Machine>& machines, const SpeedOptions& o_in, SpeedOutput* out,
               std::string* error) {
  SpeedOptions o = o_in;
  if (o.methods.empty() || !o.methods[0].is_baseline()) o.methods.insert(o.methods.begin(), MethodSpec{"full", {}});
  const Filler filler = make_filler(debian_filler_text(), m.tokenizer());
  Tokens text;  // real text for prompts and teacher-forced decode tokens
  for (const Tokens& s : filler.sentences) text.insert(text.end(), s.begin(), s.end());
  if (text.empty()) text.push_back(wt_token_bos(m.model));

  out->markdown = "| threads | test | method | TTFT ms | TPOT ms | E2E ms | prefill tok/s | decode tok/s | TTFT ratio | "
                  "TPOT ratio | E2E ratio | roofline prefill / decode | arena MiB | KV MiB | planned MiB | RSS peak MiB |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::fputs(out->markdown.c_str(), stdout);
  double total = 0;
  for (int32_t p : o.prompt_lengths)
    total += static_cast<double>(o.n_gen.size() * o.threads.size() * o.methods.size()) * o.reps * prefill_units(std::max(p, 1));
  Progress progress(total);

  for (size_t ti = 0; ti < o.threads.size(); ++ti) {
    const Machine& mc = machines[ti];
    for (int32_t p : o.prompt_lengths) {
      const int32_t L = std::max(p, 1);
      for (int32_t n : o.n_gen) {
        if (g_stop) return true;
        if (static_cast<size_t>(L + n) > text.size()) {
          *error = "only " + std::to_string(text.size()) + " tokens of filler text for -p " + std::to_string(p);
          return false;
        }
        std::vector<wt_context*> ctxs;  // null where the context does not fit (refusals)
        std::vector<std::string> refusals(o.methods.size());
        auto free_all = [&] {
          for (wt_context* c : ctxs) wt_context_free(c);
        };
        reset_host_rss_peak();
        for (size_t mi = 0; mi < o.methods.size(); ++mi) {
          ContextOptions co;
          co.n_ctx = L + n + 1;
          co.threads = mc.threads;
          wt_context* c = nullptr;
          wt_status st = WT_OK;
          if (!make_context(m, o.methods[mi], co, &c, error, &st)) {
            // A context over its memory limit is a result (what fits under a budget is the
            // point of --memory-budget): its row says so and the others still run.
            if (st != WT_ERR_BUDGET) {
              free_all();
              return false;
            }
            refusals[mi] = wt_last_error();  // the library's message, without make_context's label
            error->clear();
            c = nullptr;
          }
          ctxs.push_back(c);
        }
        std::vector<Samples> samples(o.methods.size());
        std::vector<std::vector<double>> ratio_ttft(o.methods.size()), ratio_tpot(o.methods.size()),
            ratio_e2e(o.methods.size());
        std::vector<uint64_t> kv_bytes(o.methods.size(), 0);
        for (int rep = 0; rep < o.reps && !g_stop; ++rep) {
          for (size_t mi = 0; mi < o.methods.size(); ++mi) {
            if (!ctxs[mi]) {
              progress.advance(prefill_units(L));
              continue;
            }
            progress.show("t " + std::to_string(mc.threads) + " p " + std::to_string(p) + " n " + std::to_string(n) +
                          " rep " + std::to_string(rep + 1) + " " + o.methods[mi].label());
            wt_context* c = ctxs[mi];
            wt_context_reset(c);
            const auto t0 = std::chrono::steady_clock::now();
            if (wt_context_prefill(c, text.data(), static_cast<size_t>(L)) != WT_OK) {
              *error = g_stop ? "stopped" : o.methods[mi].label() + ": prefill: " + wt_last_error();
              free_all();
              return g_stop != 0;
            }
            const double ttft = ms_since(t0);
            const auto t1 = std::chrono::steady_clock::now();
            for (int32_t i = 0; i < n; ++i) {
              if (wt_context_decode(c, text[static_cast<size_t>(L + i)]) != WT_OK) {
                *error = o.methods[mi].label() + ": decode: " + wt_last_error();
                free_all();
                return false;
              }
            }
            const double dec = ms_since(t1);
            samples[mi].ttft.push_back(ttft);
            samples[mi].tpot.push_back(n > 0 ? dec / n : 0.0);
            samples[mi].e2e.push_back(ttft + dec);
            progress.advance(prefill_units(L));
            kv_bytes[mi] = kept_kv(m, c, o.methods[mi].method == "full", L, nullptr);
          }
          if (!ctxs[0]) continue;  // no baseline to divide by: the ratios stay null
          const Samples& f = samples[0];
          for (size_t mi = 0; mi < o.methods.size(); ++mi) {
            if (!ctxs[mi]) continue;
            ratio_ttft[mi].push_back(samples[mi].ttft.back() / f.ttft.back());
            if (n > 0) ratio_tpot[mi].push_back(samples[mi].tpot.back() / f.tpot.back());
            ratio_e2e[mi].push_back(samples[mi].e2e.back() / f.e2e.back());
          }
        }
        const uint64_t rss = host_rss_peak_bytes();
        // Stopped before every context that fits ran once: nothing of this group is written.
        bool ran = true;
        for (size_t mi = 0; mi < o.methods.size(); ++mi) ran = ran && (!ctxs[mi] || !samples[mi].ttft.empty());
        for (size_t mi = 0; mi < o.methods.size() && ran; ++mi) {
          if (!ctxs[mi]) {
            out->records.push_back(speed_record(m, mc, o, p, n, o.methods[mi], &refusals[mi]));
            std::string row = "| " + std::to_string(mc.threads) + " | pp" + std::to_string(p) + "+tg" +
                              std::to_string(n) + " | " + o.methods[mi].label() + " | does not fit: " + refusals[mi];
            for (int cell = 0; cell < 12; ++cell) row += " | -";  // the measurement columns
            row += " |\n";
            out->markdown += row;
            std::fputs(row.c_str(), stdout);
            continue;
          }
          const Summary ttft = summarize(samples[mi].ttft), tpot = summarize(samples[mi].tpot), e2e = summarize(samples[mi].e2e);
          const double prefill_tps = L * 1000.0 / ttft.median;
          const double decode_tps = n > 0 ? 1000.0 / tpot.median : std::nan("");
          const double decode_roof = decode_roofline_tps(m, mc, static_cast<double>(kv_bytes[mi]));
          // Against the full prompt's work: a pruned method can pass 1.0, which is its point.
          const double prefill_frac = prefill_roofline_ms(m, mc, L) / ttft.median;
          wt_context_stats cs{};
          (void)wt_context_get_stats(ctxs[mi], &cs);
          // Planned: the weights, what wt_context_plan says this context allocates, and the
          // driver's bound for queued work. The
          // RSS peak is the process's, with every method's context of this row group alive.
          uint64_t planned = 0;
          {
            ContextOptions co;
            co.n_ctx = L + n + 1;
            co.threads = mc.threads;
            planned = m.info.weight_bytes + plan_context_bytes(m, o.methods[mi], co);
          }
          Json j = speed_record(m, mc, o, p, n, o.methods[mi], nullptr);
          j.set("reps", static_cast<int>(samples[mi].ttft.size()));
          j.set("ttft_ms", summary_json(ttft));
          j.set("tpot_ms", n > 0 ? summary_json(tpot) : Json());
          j.set("e2e_ms", summary_json(e2e));
          j.set("prefill_tps", prefill_tps);
          j.set("decode_tps", Json(decode_tps));
          j.set("ttft_ratio", median_of(ratio_ttft[mi]));
          j.set("tpot_ratio", Json(median_of(ratio_tpot[mi])));
          j.set("e2e_ratio", median_of(ratio_e2e[mi]));
          j.set("decode_roofline_fraction", Json(decode_tps / decode_roof));
          j.set("prefill_roofline_fraction", Json(prefill_frac));
          j.set("arena_bytes", cs.arena_bytes);
          j.set("rows_at_once", cs.batch_rows);  // wt_context_stats.batch_rows: as set, or lowered to fit
          j.set("threads_per_op", cs.threads_per_op);  // the CPU's workers per op (fewer than -t: other threads held cores)
          j.set("host_rss_peak_bytes", rss);
          j.set("kv_bytes", kv_bytes[mi]);
          j.set("planned_bytes", planned);
          out->records.push_back(j);

          // The workers that ran, where fewer than -t (other threads held cores): "2 (1.3)".
          std::string threads = std::to_string(mc.threads);
          if (cs.threads_per_op > 0 && cs.threads_per_op < mc.threads - 0.05) threads += fmt(cs.threads_per_op, " (%.1f)");
          const std::string row = "| " + threads + " | pp" + std::to_string(p) + "+tg" +
                                  std::to_string(n) + " | " + o.methods[mi].label() + " | " + pm(ttft) + " | " +
                                  (n > 0 ? pm(tpot) : "-") + " | " + pm(e2e) + " | " + fmt(prefill_tps, "%.1f") +
                                  " | " + fmt(decode_tps, "%.0f") + " | " + fmt(median_of(ratio_ttft[mi]), "%.2f") +
                                  " | " + fmt(median_of(ratio_tpot[mi]), "%.2f") + " | " +
                                  fmt(median_of(ratio_e2e[mi]), "%.2f") + " | " + fmt(100 * prefill_frac, "%.0f%%") +
                                  " / " + fmt(100 * decode_tps / decode_roof, "%.0f%%") + " | " +
                                  fmt(cs.arena_bytes / 1048576.0, "%.1f") + " | " + fmt(kv_bytes[mi] / 1048576.0, "%.1f") +
                                  " | " + fmt(planned / 1048576.0, "%.1f") + " | " + fmt(rss / 1048576.0, "%.1f") +
                                  " |\n";
          out->markdown += row;
          std::fputs(row.c_str(), stdout);
          std::fflush(stdout);
        }
        free_all();
      }
    }
  }
  std::fputs("\n", stderr);
  return true;
}

}  // namespace bench
