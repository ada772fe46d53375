#include "pager_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "metrics.h"

namespace bench {
namespace {

// async and sync: the copying pager (WT_KV_PAGER_COPY, on unified memory too); in place:
// the pager on unified memory (one pool of every block, no copies), left out elsewhere.
enum Mode { kResident, kAsync, kSync, kInPlace, kModes };
const char* const kModeName[kModes] = {"resident", "async", "sync", "in place"};

struct RunFacts {
  double ttft = 0, tpot = 0, e2e = 0;
  wt_context_stats decode{};  // pager counters of the decode steps only
  wt_context_stats all{};     // of the whole run
  int agree = 0, steps = 0;
};

int32_t argmax_of(const wt_context* c, int32_t n_vocab) {
  const float* l = nullptr;
  if (wt_context_logits(c, -1, &l) != WT_OK) return -1;
  return static_cast<int32_t>(std::max_element(l, l + n_vocab) - l);
}

// Prefill the prompt, then decode the reference tokens (teacher forcing), timing both and
// counting the steps whose greedy choice matches the reference.
bool one_run(wt_context* c, const Tokens& prompt, const Tokens& ref, int32_t n_vocab, RunFacts* f,
             std::string* error) {
  wt_context_reset(c);
  const auto t0 = std::chrono::steady_clock::now();
  if (wt_context_prefill(c, prompt.data(), prompt.size()) != WT_OK) {
    *error = std::string("prefill: ") + wt_last_error();
    return false;
  }
  f->ttft = ms_since(t0);
  wt_context_stats after_prefill{};
  (void)wt_context_get_stats(c, &after_prefill);
  f->agree = argmax_of(c, n_vocab) == ref[0] ? 1 : 0;
  f->steps = 1;
  const auto t1 = std::chrono::steady_clock::now();
  for (size_t i = 0; i + 1 < ref.size(); ++i) {
    if (wt_context_decode(c, ref[i]) != WT_OK) {
      *error = std::string("decode: ") + wt_last_error();
      return false;
    }
    f->agree += argmax_of(c, n_vocab) == ref[i + 1] ? 1 : 0;
    ++f->steps;
  }
  const double dec = ms_since(t1);
  const int32_t n = static_cast<int32_t>(ref.size()) - 1;
  f->tpot = n > 0 ? dec / n : 0;
  f->e2e = f->ttft + dec;
  (void)wt_context_get_stats(c, &f->all);
  f->decode = f->all;
  f->decode.pager_bytes_to_device -= after_prefill.pager_bytes_to_device;
  f->decode.pager_bytes_to_host -= after_prefill.pager_bytes_to_host;
  f->decode.pager_blocks_in -= after_prefill.pager_blocks_in;
  f->decode.pager_blocks_on_demand -= after_prefill.pager_blocks_on_demand;
  f->decode.pager_transfers -= after_prefill.pager_transfers;
  f->decode.pager_sync_wait_ms -= after_prefill.pager_sync_wait_ms;
  if (f->all.pager_copy_ms >= 0) {  // -1: the backend does not time its streams
    f->decode.pager_copy_ms -= after_prefill.pager_copy_ms;
    f->decode.pager_wait_ms -= after_prefill.pager_wait_ms;
  }
  return true;
}

}  // namespace

bool run_pager(const BenchModel& m, const Machine& mc, const PagerOptions& o_in, SpeedOutput* out, std::string* error) {
  PagerOptions o = o_in;
  if (o.methods.empty()) o.methods = {MethodSpec{"sliminfer", {{"slim_decode_keep", "0.125"}}}};
  // Full KV first: the pager's baseline (every block needed every step).
  if (!o.methods[0].is_baseline()) o.methods.insert(o.methods.begin(), MethodSpec{"full", {}});
  const Filler filler = make_filler(debian_filler_text(), m.tokenizer());
  Tokens text;
  for (const Tokens& s : filler.sentences) text.insert(text.end(), s.begin(), s.end());
  const int32_t n_vocab = m.info.n_vocab;

  // The backend's host -> device copy bandwidth, measured here (issue 27's bar for a paged
  // step: resident TPOT + 1.1 x bytes to the device per token / this bandwidth).
  double probe_gbs = 0;
  if (wt_model_copy_bandwidth(m.model, uint64_t{256} << 20, &probe_gbs) != WT_OK) probe_gbs = 0;
  const std::string probe_line =
      probe_gbs > 0 ? "copy probe: host -> device " + fmt(probe_gbs, "%.2f") + " GB/s (256 MiB from pinned memory)\n"
                    : std::string("copy probe: failed (") + wt_last_error() + ")\n";
  std::fputs(probe_line.c_str(), stdout);
  const std::string header =
      "| L | method | mode | TTFT ms | TPOT ms | TPOT bar ms | E2E ms | E2E ratio | MiB to device / token | "
      "KiB to host / token | blocks in / token | copies / token | on demand | copy ms | waited ms | hidden | lost ms | "
      "top-1 vs full |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  out->markdown = probe_line + "\n" + header;
  std::fputs(header.c_str(), stdout);
  double total = 0;
  for (int32_t L : o.prompt_lengths) total += static_cast<double>(o.methods.size() * kModes) * o.reps * prefill_units(L);
  Progress progress(total);

  for (int32_t L : o.prompt_lengths) {
    if (g_stop) return true;
    if (static_cast<size_t>(L) > text.size()) {
      *error = "only " + std::to_string(text.size()) + " tokens of filler text for -p " + std::to_string(L);
      return false;
    }
    const Tokens prompt(text.begin(), text.begin() + L);
    const int32_t n_ctx = L + o.n_gen + 1;
    const int32_t layer_blocks = (n_ctx + o.block_tokens - 1) / o.block_tokens;
    const int32_t pool = std::max(layer_blocks, static_cast<int32_t>(std::lround(o.device_fraction * layer_blocks *
                                                                                 m.info.n_layer)));
    // The reference: full KV, every block resident, greedy.
    Tokens ref;
    {
      ContextOptions co;
      co.n_ctx = n_ctx;
      co.threads = o.threads;
      wt_context* c = nullptr;
      if (!make_context(m, MethodSpec{"full", {}}, co, &c, error)) return false;
      bool ok = wt_context_prefill(c, prompt.data(), prompt.size()) == WT_OK;
      for (int32_t i = 0; ok && i <= o.n_gen; ++i) {
        ref.push_back(argmax_of(c, n_vocab));
        if (i < o.n_gen) ok = wt_context_decode(c, ref.back()) == WT_OK;
      }
      wt_context_free(c);
      if (!ok) {
        *error = std::string("full-KV reference: ") + wt_last_error();
        return false;
      }
    }
    for (const MethodSpec& spec : o.methods) {
      wt_context* ctx[kModes] = {};
      auto free_all = [&] {
        for (wt_context* c : ctx) wt_context_free(c);
      };
      for (int md = 0; md < kModes; ++md) {
        ContextOptions co;
        co.n_ctx = n_ctx;
        co.threads = o.threads;
        co.kv_device_blocks = md == kResident ? 0 : pool;
        co.kv_block_tokens = o.block_tokens;
        co.kv_sync_swaps = md == kSync;
        co.kv_pager_copy = md != kInPlace;
        if (!make_context(m, spec, co, &ctx[md], error)) {
          free_all();
          return false;
        }
        wt_context_stats st{};
        (void)wt_context_get_stats(ctx[md], &st);
        if (md == kInPlace && st.pager_host_bytes > 0) {  // not unified: the copying pager again
          wt_context_free(ctx[md]);
          ctx[md] = nullptr;
        }
      }
      std::vector<RunFacts> runs[kModes];
      std::vector<double> ratio[kModes], copy_ms[kModes], wait_ms[kModes], lost_ms;
      bool timed = true;  // the backend times its streams: copy and wait measured directly
      for (int rep = 0; rep < o.reps && !g_stop; ++rep) {
        RunFacts f[kModes];
        for (int md = 0; md < kModes; ++md) {
          if (!ctx[md]) continue;
          progress.show("p " + std::to_string(L) + " rep " + std::to_string(rep + 1) + " " + spec.label() + " " +
                        kModeName[md]);
          if (!one_run(ctx[md], prompt, ref, n_vocab, &f[md], error)) {
            *error = spec.label() + " " + kModeName[md] + ": " + *error;
            free_all();
            return false;
          }
          progress.advance(prefill_units(L));
          runs[md].push_back(f[md]);
          ratio[md].push_back(f[md].e2e / f[kResident].e2e);
        }
        // Decode only (the prefill fetches nothing). Where the backend times its streams:
        // the copy stream's busy time and the time compute waited for it, per mode. Else the
        // copy time is the sync run's host wait for its fetches. Either way, what the async
        // run lost against resident (every cost of paging, not only waiting).
        timed = timed && f[kAsync].decode.pager_copy_ms >= 0;
        for (int md = kAsync; md <= kSync; ++md) {
          copy_ms[md].push_back(f[md].decode.pager_copy_ms);
          wait_ms[md].push_back(f[md].decode.pager_wait_ms);
        }
        if (!timed) copy_ms[kSync].back() = f[kSync].decode.pager_sync_wait_ms;
        lost_ms.push_back((f[kAsync].e2e - f[kAsync].ttft) - (f[kResident].e2e - f[kResident].ttft));
      }
      const double lost = median_of(lost_ms);
      double copy[kModes], waited[kModes];
      for (int md = 0; md < kModes; ++md) {
        const bool copies = md == kAsync || md == kSync;
        copy[md] = !copies || (!timed && md == kAsync) ? std::nan("") : median_of(copy_ms[md]);
        waited[md] = !copies || !timed ? std::nan("") : median_of(wait_ms[md]);
      }
      // Untimed, the fraction hidden comes from the time lost, and is only a figure when the
      // copies cost more than the resident decode time varies between repetitions; below
      // that it is noise (say so: null, "-").
      std::vector<double> resident_decode;
      for (const RunFacts& f : runs[kResident]) resident_decode.push_back(f.e2e - f.ttft);
      const bool resolvable = copy[kSync] > 2 * summarize(resident_decode).std;
      for (int md = 0; md < kModes; ++md) {
        if (runs[md].empty()) continue;
        std::vector<double> ttft, tpot, e2e;
        for (const RunFacts& f : runs[md]) {
          ttft.push_back(f.ttft);
          tpot.push_back(f.tpot);
          e2e.push_back(f.e2e);
        }
        const RunFacts& last = runs[md].back();  // the counters are the same every repetition
        const double steps = std::max(1, o.n_gen);
        const double to_dev = last.decode.pager_bytes_to_device / steps;
        const double to_host = last.decode.pager_bytes_to_host / steps;
        const double blocks_in = last.decode.pager_blocks_in / steps;
        const double transfers = last.decode.pager_transfers / steps;  // copy calls, both directions
        // Issue 27's bar for a copying mode: the resident TPOT plus 1.1 x the copy time of
        // its bytes at the probe's bandwidth.
        std::vector<double> resident_tpot;
        for (const RunFacts& f : runs[kResident]) resident_tpot.push_back(f.tpot);
        const bool copying = md == kAsync || md == kSync;
        const double bar = copying && probe_gbs > 0 && !resident_tpot.empty()
                               ? median_of(resident_tpot) + 1.1 * to_dev / (probe_gbs * 1e9) * 1e3
                               : std::nan("");
        const double on_demand = last.decode.pager_blocks_in > 0
                                     ? static_cast<double>(last.decode.pager_blocks_on_demand) / last.decode.pager_blocks_in
                                     : std::nan("");
        const double agree = static_cast<double>(last.agree) / last.steps;
        const bool paged = md != kResident;
        double hidden = std::nan("");
        if (timed && md == kAsync && copy[md] > 0) hidden = 1.0 - waited[md] / copy[md];
        if (!timed && md == kAsync && copy[kSync] > 0 && resolvable) hidden = 1.0 - lost / copy[kSync];
        Json j = base_record("pager", m, mc, "", o.seed);
        j.set("L", L);
        j.set("n_gen", o.n_gen);
        j.set("method", spec.method);
        j.set("params", spec.params_json());
        j.set("mode", kModeName[md]);
        j.set("reps", static_cast<int>(runs[md].size()));
        j.set("block_tokens", o.block_tokens);
        j.set("device_pool_blocks", paged ? pool : 0);
        j.set("device_pool_fraction", paged ? static_cast<double>(pool) / (layer_blocks * m.info.n_layer) : 0.0);
        j.set("pager_device_bytes", last.all.pager_device_bytes);
        j.set("pager_host_bytes", last.all.pager_host_bytes);
        j.set("ttft_ms_median", median_of(ttft));
        j.set("tpot_ms_median", median_of(tpot));
        j.set("e2e_ms_median", median_of(e2e));
        j.set("e2e_ratio_to_resident", median_of(ratio[md]));
        j.set("bytes_to_device_per_token", to_dev);
        j.set("bytes_to_host_per_token", to_host);
        j.set("blocks_in_per_token", blocks_in);
        j.set("transfers_per_token", transfers);
        j.set("copy_probe_gbs", probe_gbs > 0 ? Json(probe_gbs) : Json());
        j.set("tpot_bar_ms", std::isnan(bar) ? Json() : Json(bar));
        j.set("on_demand_fraction", Json(on_demand));
        j.set("sync_wait_ms_per_run", last.all.pager_sync_wait_ms);
        j.set("stream_times_measured", timed);
        j.set("copy_ms", std::isnan(copy[md]) ? Json() : Json(copy[md]));
        j.set("waited_ms", std::isnan(waited[md]) ? Json() : Json(waited[md]));
        j.set("lost_ms", md == kAsync ? Json(lost) : Json());
        j.set("hidden_fraction", Json(hidden));
        j.set("resident_decode_ms_std", summarize(resident_decode).std);
        j.set("top1_agreement_vs_full", agree);
        // Where each layer's KV is at the end of the last run.
        Json dev_layers = Json::array(), host_layers = Json::array();
        for (int32_t l = 0; l < m.info.n_layer; ++l) {
          uint64_t d = 0, h = 0;
          (void)wt_context_get_kv_residency(ctx[md], l, &d, &h);
          dev_layers.push(Json(d));
          host_layers.push(Json(h));
        }
        j.set("kv_device_bytes_per_layer", dev_layers);
        j.set("kv_host_bytes_per_layer", host_layers);
        out->records.push_back(j);
        const std::string row =
            "| " + std::to_string(L) + " | " + spec.label() + " | " + kModeName[md] + " | " +
            fmt(median_of(ttft), "%.1f") + " | " + fmt(median_of(tpot), "%.2f") + " | " + fmt(bar, "%.2f") + " | " +
            fmt(median_of(e2e), "%.1f") +
            " | " + fmt(median_of(ratio[md]), "%.3f") + " | " + fmt(paged ? to_dev / 1048576.0 : std::nan(""), "%.3f") +
            " | " + fmt(paged ? to_host / 1024.0 : std::nan(""), "%.1f") + " | " +
            fmt(paged ? blocks_in : std::nan(""), "%.1f") + " | " + fmt(paged ? transfers : std::nan(""), "%.1f") +
            " | " + fmt(on_demand * 100, "%.0f%%") + " | " +
            fmt(copy[md], "%.1f") + " | " + fmt(waited[md], "%.1f") + " | " + fmt(hidden * 100, "%.0f%%") + " | " +
            fmt(md == kAsync ? lost : std::nan(""), "%.1f") + " | " + fmt(agree, "%.3f") + " |\n";
        out->markdown += row;
        std::fputs(row.c_str(), stdout);
        std::fflush(stdout);
      }
      free_all();
    }
  }
  std::fputs("\n", stderr);
  return true;
}

}  // namespace bench
