#include "state_bench.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "metrics.h"

namespace bench {
namespace {

struct Samples {
  std::vector<double> ttft, save, restore, save_file, restore_file;
};

bool same_logits(const wt_context* a, const wt_context* b, int32_t n_vocab) {
  const float *la = nullptr, *lb = nullptr;
  if (wt_context_logits(a, -1, &la) != WT_OK || wt_context_logits(b, -1, &lb) != WT_OK) return false;
  return std::memcmp(la, lb, sizeof(float) * static_cast<size_t>(n_vocab)) == 0;
}

// One repetition: prefill, save and restore both ways, check the restored logits.
bool one_rep(wt_context* a, wt_context* b, const Tokens& prompt, std::vector<uint8_t>* buf, const std::string& path,
             int32_t n_vocab, Samples* s, std::string* error) {
  wt_context_reset(a);
  auto t = std::chrono::steady_clock::now();
  if (wt_context_prefill(a, prompt.data(), prompt.size()) != WT_OK) return *error = std::string("prefill: ") + wt_last_error(), false;
  s->ttft.push_back(ms_since(t));
  size_t need = 0;
  if (wt_context_state_size(a, &need) != WT_OK) return *error = wt_last_error(), false;
  buf->resize(need);  // the same size every repetition: allocated once
  size_t n = 0;
  t = std::chrono::steady_clock::now();
  if (wt_context_state_save(a, buf->data(), buf->size(), &n) != WT_OK) return *error = std::string("save: ") + wt_last_error(), false;
  s->save.push_back(ms_since(t));
  wt_context_reset(b);
  t = std::chrono::steady_clock::now();
  if (wt_context_state_load(b, buf->data(), n) != WT_OK) return *error = std::string("load: ") + wt_last_error(), false;
  s->restore.push_back(ms_since(t));
  if (!same_logits(a, b, n_vocab)) return *error = "the restored context's logits differ from the prefilled one's", false;
  t = std::chrono::steady_clock::now();
  if (wt_context_state_save_file(a, path.c_str()) != WT_OK) return *error = std::string("save to a file: ") + wt_last_error(), false;
  s->save_file.push_back(ms_since(t));
  wt_context_reset(b);
  t = std::chrono::steady_clock::now();
  if (wt_context_state_load_file(b, path.c_str()) != WT_OK) return *error = std::string("load from a file: ") + wt_last_error(), false;
  s->restore_file.push_back(ms_since(t));
  if (!same_logits(a, b, n_vocab)) return *error = "the context restored from the file differs from the prefilled one", false;
  return true;
}

}  // namespace

bool run_state(const BenchModel& m, const Machine& mc, const StateOptions& o_in, SpeedOutput* out, std::string* error) {
  StateOptions o = o_in;
  if (o.methods.empty()) o.methods = {MethodSpec{"snapkv", {{"keep", "0.2"}}}};
  if (!o.methods[0].is_baseline()) o.methods.insert(o.methods.begin(), MethodSpec{"full", {}});
  const Filler filler = make_filler(debian_filler_text(), m.tokenizer());
  Tokens text;
  for (const Tokens& s : filler.sentences) text.insert(text.end(), s.begin(), s.end());
  // The state file: the page cache holds it (what a board's flash read would add is not here).
  const std::string path =
      (std::filesystem::temp_directory_path() / ("whittle-bench-state-" + std::to_string(getpid()) + ".wts")).string();

  out->markdown =
      "| L | method | TTFT ms | save ms | restore ms | file: save ms | file: restore ms | re-prefill / restore | "
      "state MiB | kept KV MiB | state / KV |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::fputs(out->markdown.c_str(), stdout);
  double total = 0;
  for (int32_t L : o.prompt_lengths) total += static_cast<double>(o.methods.size()) * o.reps * prefill_units(L);
  Progress progress(total);
  std::vector<uint8_t> buf;
  for (int32_t L : o.prompt_lengths) {
    if (g_stop) break;
    if (L < 1 || static_cast<size_t>(L) > text.size()) {
      *error = "-p " + std::to_string(L) + ": the filler text has " + std::to_string(text.size()) + " tokens";
      return false;
    }
    const Tokens prompt(text.begin(), text.begin() + L);
    for (const MethodSpec& spec : o.methods) {
      ContextOptions co;
      co.n_ctx = L + 1 + 64;  // the oracle's answer tokens too
      co.threads = o.threads;
      wt_context* ctx[2] = {};
      for (wt_context*& c : ctx)
        if (!make_context(m, spec, co, &c, error)) {
          for (wt_context* x : ctx) wt_context_free(x);
          return false;
        }
      Samples s;
      bool ok = true;
      for (int rep = 0; rep < o.reps && ok && !g_stop; ++rep) {
        progress.show("p " + std::to_string(L) + " rep " + std::to_string(rep + 1) + " " + spec.label());
        ok = one_rep(ctx[0], ctx[1], prompt, &buf, path, m.info.n_vocab, &s, error);
        progress.advance(prefill_units(L));
      }
      std::remove(path.c_str());
      if (!ok) {
        *error = spec.label() + ": " + *error;
        for (wt_context* x : ctx) wt_context_free(x);
        return false;
      }
      if (s.ttft.empty()) break;  // stopped
      size_t state_bytes = 0;
      (void)wt_context_state_size(ctx[0], &state_bytes);
      const uint64_t kv = kept_kv(m, ctx[0], spec.method == "full", L, nullptr);
      for (wt_context* x : ctx) wt_context_free(x);
      const double ttft = summarize(s.ttft).median, save = summarize(s.save).median,
                   restore = summarize(s.restore).median, save_file = summarize(s.save_file).median,
                   restore_file = summarize(s.restore_file).median;
      Json j = base_record("state", m, mc, "", o.seed);
      j.set("L", L);
      j.set("method", spec.method);
      j.set("params", spec.params_json());
      j.set("reps", static_cast<int>(s.ttft.size()));
      j.set("ttft_ms", ttft);
      j.set("save_ms", save);
      j.set("restore_ms", restore);
      j.set("save_file_ms", save_file);
      j.set("restore_file_ms", restore_file);
      j.set("restore_speedup", ttft / restore);
      j.set("restore_file_speedup", ttft / restore_file);
      j.set("state_bytes", static_cast<uint64_t>(state_bytes));
      j.set("kv_bytes", kv);
      out->records.push_back(j);
      const std::string row = "| " + std::to_string(L) + " | " + spec.label() + " | " + fmt(ttft, "%.1f") + " | " +
                              fmt(save, "%.2f") + " | " + fmt(restore, "%.2f") + " | " + fmt(save_file, "%.2f") +
                              " | " + fmt(restore_file, "%.2f") + " | " + fmt(ttft / restore, "%.0f") + "x (file " +
                              fmt(ttft / restore_file, "%.0f") + "x) | " + fmt(state_bytes / 1048576.0, "%.2f") + " | " +
                              fmt(kv / 1048576.0, "%.2f") + " | " + fmt(static_cast<double>(state_bytes) / kv, "%.3f") +
                              " |\n";
      out->markdown += row;
      std::fputs(row.c_str(), stdout);
      std::fflush(stdout);
    }
  }
  std::fputs("\n", stderr);
  return true;
}

}  // namespace bench
